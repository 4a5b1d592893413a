"""What every page shares (the bottom room: it imports no other room).

- pages: ``pages`` (the one registry of pages, ``PAGES``: each page's name, script, address, label, icon
  and URL keys);
- configuration: ``config`` (the app's configuration, the sidebar, presentation mode, and the pages handed
  to Streamlit's navigation);
- links and URL keys: ``links`` (a page's state in its URL), ``url_schema`` (every page's URL keys: one
  table per page, each key's parser, range and meaning), ``plan_link`` (the Plan page's link on its
  table: every room that opens the Plan page names its keys here), ``step_links`` (a step as a link
  that opens the Graph page centred on it: every step chip and card draws it there);
- words, colours and figures: ``text`` (escapes for Markdown and scripts), ``scripts`` (the app's own
  JavaScript, files of ``app/static/``, and how values reach them), ``names`` (readable names and what a
  page shows first), ``colours`` (the one colour table: right and wrong), ``charts`` (figures, tables,
  step cards, the video timeline);
- pickers: ``pickers`` (task filter, search and bounded select boxes), ``search`` (finding videos and
  episodes by what a user types)."""
