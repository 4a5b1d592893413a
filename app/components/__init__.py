"""Components of the KEPP app: plain Python and Streamlit pieces the pages are made of; no modelling
code lives here (the app stands on ``kepp_core.api``, the catalogue, the evaluation codes' metric families
and the errors). The modules sit in rooms by what they serve, each room's ``__init__`` naming its
modules (``tests/test_docs.py`` holds each list to its folder):

- ``ui``: what every page shares: configuration, words, colours, figures, links and URL keys;
- ``graph``: graph drawings (the P²KG around a step, the plan graph, expert trajectories, heatmaps);
- ``records``: the prediction records and the pages that browse them (one episode, slices, A and B,
  the episode map, the protocol's results, which evaluation code a number comes from);
- ``plan``: the Plan page (its decision, inputs, planning and result);
- ``talk``: a talk's pieces (scenes, playlists, the presenter view, the offline deck).

A room imports only from the rooms below it, in the order ``ui`` ← ``graph`` ← ``records`` ← ``plan`` ←
``talk``, and the pages (``app/Home.py``, ``app/views/``) stand on top of them all
(``tests/test_app_rooms.py`` reads every import and fails on one that looks up).

The app imports ``kepp_core`` as an installed package (``make`` installs the checkout in editable
mode; ``kepp app`` also puts the checkout on ``PYTHONPATH`` for the server)."""
