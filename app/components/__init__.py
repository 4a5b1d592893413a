"""Components of the KEPP app: configuration and sidebar (``config``), cached access to
``kepp_core.api`` (``backend``), text escapes (``text``), figures and tables (``charts``),
graph drawings (``network``), episodes (``episodes``) and uploads (``uploads``). No
modelling code lives here."""

from __future__ import annotations

import sys
from pathlib import Path

# The app imports kepp_core from the checkout it lives in, installed or not.
_REPO = str(Path(__file__).resolve().parents[2])
if _REPO not in sys.path:
    sys.path.insert(0, _REPO)
