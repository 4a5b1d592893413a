"""A talk's pieces (the top room): ``scenes`` and ``curation`` (demo scenes), ``playlists`` (adding to
and playing a playlist), ``presenter`` (the presenter view of a playlist), ``deck`` (a playlist as one
offline HTML file: ``kepp talk export``, **Export deck**), ``deck_graph`` (the deck's plan graph drawn as an
SVG a room can read), ``deck_pdf`` (the deck printed to PDF by Chromium: ``kepp talk export --pdf``)."""
