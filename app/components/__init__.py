"""Components of the KEPP app: configuration and sidebar (``config``), cached access to
``kepp_core.api`` (``backend``), text escapes (``text``), figures and tables (``charts``),
graph drawings (``network``), episodes (``episodes``) and uploads (``uploads``). No
modelling code lives here.

The app imports ``kepp_core`` as an installed package (``make`` installs the checkout in editable
mode; ``kepp app`` also puts the checkout on ``PYTHONPATH`` for the server)."""
