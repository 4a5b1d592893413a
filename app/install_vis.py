"""Copy vis.js from the installed pyvis package into ``app/static/``, where the app serves it
(:func:`components.graph.vis.install`): a step of ``make install``, never of the running app.

    python app/install_vis.py
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the app's components

from components.graph import vis  # noqa: E402

if __name__ == "__main__":
    written = vis.install()
    print(f"vis.js for the app: {', '.join(p.name for p in written) or 'already in place'} in app/static/")
