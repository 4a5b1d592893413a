"""The prediction records and the pages that browse them (above ``graph``).

- reading them: ``backend`` (cached access to ``kepp_core.api`` for every page), ``recorded`` (a record
  first, a live re-plan second: the one decision), ``urls`` (the Plan page's query for an evaluated
  episode), ``views`` (what one method's result on one episode shows, every label resolved: described once
  for the Plan page's result and the slides), ``slides`` (what a record, or an A/B pair of records, shows as
  a slide: decided once for the Plan page, the presenter view and the deck), ``paging`` (paged tables that keep their place), ``lookup`` (where a method's, an episode's rows lie in
  the table, found on codes made once per version);
- showing them: ``episodes`` (one evaluated episode), ``slices`` (metrics by slice), ``episode_map`` (the
  map of the test episodes), ``ab`` (two methods episode by episode: the 2×2 table, each cell's
  episodes), ``metric_codes`` (which evaluation code a number comes from: the code picked, the caption
  naming it, the published numbers apart), ``protocol`` (``kepp protocol`` results), ``through`` (the records
  whose plan or truth passes through a step or a transition: the Graph page's list), ``gallery`` (the records as
  a grid of tiles: their columns as codes per row, filtered and sorted on arrays; one tile's view and HTML)."""
