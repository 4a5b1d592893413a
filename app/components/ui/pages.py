"""The app's pages, registered once (:data:`PAGES`): each page's name, label, icon, script, what it is
for and its URL keys. Plain Python (no Streamlit): ``app/Home.py`` hands this list to Streamlit's
``st.navigation`` (``components.ui.config.navigation``), :class:`components.ui.links.PageLink` reads a
page's keys here, Home and the presentation bar list the pages from it, ``docs/app.md`` and the tests
hold themselves to it.

A page's address is its label with ``_`` for spaces (``/Failure_cases``), as Streamlit's file-based
navigation named it, so every link written before the pages were registered here still opens its page;
the first page (Home) is the app's root.

>>> PAGES["failures"].url_path, PAGES["failures"].path, PAGES["home"].url_path
('Failure_cases', 'views/4_Failure_cases.py', '')
>>> [p.name for p in PAGES.values() if not p.on_bar]
['groups', 'playlists', 'presenter', 'gallery']
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from components.ui import url_schema
from components.ui.url_schema import Key

__all__ = ["FOLDER", "PAGES", "TABLES", "Page", "by_label"]

FOLDER = "views"  # the pages' scripts, beside app/Home.py (not "pages/": that folder would put Streamlit in
# its file-based navigation, whatever st.navigation the main script calls)


@dataclass(frozen=True, kw_only=True)
class Page:
    """One page of the app: ``name`` (the one key every room names it by), its script ``file`` under
    :data:`FOLDER`, its ``label`` (the title, the navigation's and the page bar's name), its Material
    ``icon`` (no emoji font needed on the projector's machine), what it is for (Home lists it), its URL
    ``keys`` (:mod:`components.ui.url_schema`'s table; none: the page reads no URL key), whether the
    presentation bar shows it and whether it is the app's first page."""

    name: str
    file: str
    label: str
    icon: str
    what: str = ""
    keys: Mapping[str, Key] = field(default_factory=dict)
    on_bar: bool = True
    home: bool = False

    @property
    def path(self) -> str:
        """The script relative to ``app/Home.py`` (what ``st.Page``, ``st.page_link`` and
        ``st.switch_page`` take)."""
        return f"{FOLDER}/{self.file}"

    @property
    def url_path(self) -> str:
        """The page's address under the app's root: the label with ``_`` for spaces; "" for Home."""
        return "" if self.home else self.label.replace(" ", "_")


# Every page, in the app's order: the one place a page is written.
PAGES: dict[str, Page] = {p.name: p for p in (
    Page(name="home", file="0_Home.py", label="Home", icon=":material/home:", home=True),
    Page(name="plan", file="1_Plan.py", label="Plan", icon=":material/route:", keys=url_schema.PLAN,
         what="plan from a video: step model, graph paths, final plan, sub-graph"),
    Page(name="graph", file="2_Graph.py", label="Graph", icon=":material/hub:", keys=url_schema.GRAPH,
         what="explore the P²KG around a step; expert trajectories of a task"),
    Page(name="heatmaps", file="3_Heatmaps.py", label="Heatmaps", icon=":material/grid_on:", keys=url_schema.HEATMAPS,
         what="step transition heatmaps: training, test, predictions"),
    Page(name="failures", file="4_Failure_cases.py", label="Failure cases", icon=":material/search:",
         keys=url_schema.FAILURES, what="the paper's failure patterns and statistics"),
    Page(name="results", file="5_Results.py", label="Results", icon=":material/bar_chart:", keys=url_schema.RESULTS,
         what="metrics per method and horizon; browse and compare episodes"),
    # a table of its own, as W&B Tables' and Zeno's group-by views are: it reads every record, and the Results
    # page keeps to its method x T table; off the bar (a researcher's page, not a talk's)
    Page(name="groups", file="5_Results_grouped.py", label="Groups", icon=":material/table_rows:", keys=url_schema.GROUPS,
         on_bar=False, what="the records grouped by any columns: counts, SR, mAcc, mIoU and their intervals"),
    Page(name="training", file="6_Training.py", label="Training", icon=":material/show_chart:",
         keys=url_schema.TRAINING, what="loss and validation curves of training runs"),
    # off the presentation bar, so that it keeps to one line at 1280 px: Playlists is where a talk is
    # prepared (its Present link and the Plan page's playing bar lead on; the sidebar lists it too)
    Page(name="playlists", file="7_Playlists.py", label="Playlists", icon=":material/playlist_play:",
         keys=url_schema.PLAYLISTS, what="episodes curated for a talk, played in presentation mode", on_bar=False),
    Page(name="presenter", file="8_Presenter.py", label="Presenter", icon=":material/speaker_notes:",
         keys=url_schema.PRESENTER, on_bar=False,
         what="the speaker's second tab: the slide, the next one, the note and the clock; it follows the slides"),
    # off the presentation bar (it keeps to one line at 1280 px); the sidebar and Home list it
    Page(name="gallery", file="9_Gallery.py", label="Gallery", icon=":material/grid_view:", keys=url_schema.GALLERY,
         what="every record as a tile (frames, plan and truth, verdict), filtered and sorted by any column",
         on_bar=False),
)}

# page name -> its URL keys (the pages that read any): what docs/app.md's URL key tables list
TABLES: dict[str, Mapping[str, Key]] = {p.name: p.keys for p in PAGES.values() if p.keys}


def by_label(label: str) -> Page:
    """The page whose label is ``label`` (a page names itself by its title).

    >>> by_label("Failure cases").name
    'failures'
    """
    for page in PAGES.values():
        if page.label == label:
            return page
    raise KeyError(label)
