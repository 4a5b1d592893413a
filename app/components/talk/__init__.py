"""A talk's pieces (the top room): ``scenes`` and ``curation`` (demo scenes), ``playlists`` (adding to
and playing a playlist), ``presenter`` (the presenter view of a playlist), ``deck`` (a playlist as one
offline HTML file: ``kepp talk export``, **Export deck**)."""
