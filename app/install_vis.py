"""Copy vis.js from the installed pyvis package into ``app/static/``, where the app serves it
(:func:`components.graph.vis.install`): a step of ``make install``, never of the running app.

    python app/install_vis.py
"""

from components.graph import vis  # this script's folder is the path's first entry, as for the pages

if __name__ == "__main__":
    written = vis.install()
    print(f"vis.js for the app: {', '.join(p.name for p in written) or 'already in place'} in app/static/")
