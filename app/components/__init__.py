"""Components of the KEPP app: plain Python and Streamlit pieces the pages are made of; no modelling
code lives here (the app stands on ``kepp_core.api``, the catalogue, the evaluation codes' metric families
and the errors). Every module of
this folder is named below (``tests/test_docs.py`` holds the list to the folder).

- configuration and shared state: ``config`` (the app's configuration, the sidebar, presentation
  mode and the pages' table ``PAGES``), ``backend`` (cached access to ``kepp_core.api``), ``links``
  (a page's state in its URL), ``url_schema`` (every page's URL keys: one table per page, each key's
  parser, range and meaning), ``plan_state`` (the Plan page's link on its table), ``paging`` (paged
  tables that keep their place);
- words, colours and figures: ``text`` (escapes for Markdown and scripts), ``scripts`` (the app's own
  JavaScript, files of ``app/static/``, and how values reach them), ``names`` (readable names
  and what a page shows first), ``colours`` (right and wrong), ``charts`` (figures, tables, step
  cards, the video timeline), ``heatmaps``, ``network``, ``plangraph`` and ``layout`` (graph drawings, the
  plan graph, where the Graph page's steps sit), ``why`` (why this plan);
- the Plan page: ``plan_decision`` (what it shows, decided without Streamlit: ``decide``),
  ``plan_controls`` (its inputs: controls, video, clips, step timeline), ``plan_result`` (the decision
  drawn: a record and its live re-plan as two tabs of one result), ``pickers`` (task filter, search and
  bounded select boxes), ``search``, ``uploads``,
  ``plans`` (a plan, its endpoints, paths and samples), ``zeroshot`` (planning with the graph alone),
  ``urls`` (its query for an evaluated episode), ``recorded`` (a record first, a live re-plan second:
  the one decision), ``result`` (the input and the plan beside its graph, on one screen), ``scenes`` and
  ``curation`` (demo scenes), ``playlists`` (adding to and playing a playlist), ``slides`` (what a
  playlist item's slide shows, decided once), ``presenter`` (the presenter view of a playlist), ``deck``
  (a playlist as one offline HTML file: ``kepp talk export``, **Export deck**);
- the records pages: ``episodes`` (one evaluated episode), ``slices`` (metrics by slice),
  ``episode_map`` (the map of the test episodes), ``ab`` (two methods episode by episode: the 2×2
  table, each cell's episodes), ``metric_codes`` (which evaluation code a number comes from: the code picked,
  the caption naming it, the published numbers apart), ``protocol`` (``kepp protocol`` results).

The app imports ``kepp_core`` as an installed package (``make`` installs the checkout in editable
mode; ``kepp app`` also puts the checkout on ``PYTHONPATH`` for the server)."""
