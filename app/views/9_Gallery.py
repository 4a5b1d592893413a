"""Gallery: the records as a grid of episode tiles (start and goal frames, plan and truth as step chips with ✓/✗,
the verdict in its colour, method, T, seed), filtered and sorted by any column of the records table, paged over
all of it: only the page's tiles are built (:mod:`components.records.gallery`: the columns as codes, once per
version of the records). Each tile opens its record on the Plan page; the filter, sort and page are the page's
address (a saved view); the tiles shown can be added to a playlist."""

from __future__ import annotations

import streamlit as st

from components.records import backend, gallery, paging
from components.talk import playlists
from components.ui import links
from components.ui.config import page_setup, presenting
from components.ui.names import namer
from components.ui.pages import PAGES
from components.ui.url_schema import GALLERY, Expected
from kepp_core.catalog import PATTERN_LABELS
from kepp_core.errors import KeppError

COLUMNS_PER_ROW = 4
PER_PAGE = ["12", "24", "48"]

cfg = page_setup("Gallery")
title_col, link_col = st.columns([5, 1], vertical_alignment="bottom")
title_col.title("Gallery")
if not cfg.presentation:
    st.caption("Every record as a tile: start and goal frames, the plan's steps (✓/✗ against the truth) over the "
               "truth's, the verdict (green: success, red: the failure pattern it is filed under). Filter and sort "
               "by any column; a tile's **Open in Plan** shows its record there. The address keeps the view.")

ds, preds = backend.records_page(cfg, "so there are no episodes to show as tiles.")
if preds is None:
    st.stop()
link = links.PageLink("gallery")
with backend.guarded(link=link):
    browse = backend.browse(cfg)
name_of = namer(backend.method_names(cfg))
task_names = {t: ds.tasks[t].name for t in ds.tasks}
SHOWN = {"method": name_of, "task": lambda t: task_names.get(t, t), "pattern": lambda p: PATTERN_LABELS.get(p, p)}


def known(key: str, options: list[str]):
    """The URL's values of column ``key`` that the records hold (the others said in the page's one line)."""
    def parse(text: str) -> list[str]:
        values = [] if text == "" else GALLERY[key].parse(text)
        unknown = [v for v in values if v not in options]
        if unknown:
            link.ignore(key, ",".join(unknown), "not in these records")
        if unknown and len(unknown) == len(values):
            raise Expected("values the records hold")
        return [v for v in values if v in options]
    return parse


filters: dict[str, list[str]] = {}
with st.expander("Filter and sort", expanded=not cfg.presentation):
    cols = st.columns(5)
    for k, (key, column) in enumerate(gallery.COLUMNS.items()):
        options = browse.options(key)
        link.seed(f"gal_{key}", key, parse=known(key, options), absent="")
        filters[key] = cols[k % 5].multiselect(column.label, options, key=f"gal_{key}", placeholder="every value",
                                               format_func=SHOWN.get(key, str))
        link.keep(**{key: ",".join(filters[key]) or None})
    sort_col, desc_col, per_col = st.columns([2, 1, 1], vertical_alignment="bottom")
    sorts = ["", *gallery.SORTS]
    link.seed("gal_sort", "sort", sorts, absent="")
    sort = sort_col.selectbox("Sort by", sorts, key="gal_sort",
                              format_func=lambda s: gallery.SORTS.get(s, "the records' own order"))
    link.seed("gal_desc", "desc", parse=lambda t: t == "1", absent="0")
    descending = desc_col.toggle("Largest first", key="gal_desc")
    link.seed("gal_per", "per", PER_PAGE, absent=PER_PAGE[0])
    per = per_col.selectbox("Tiles per page", PER_PAGE, key="gal_per")
    link.keep(sort=sort or None, desc="1" if descending else None, per=None if per == PER_PAGE[0] else per)



def thumbnail(tile: gallery.Tile, frame) -> bytes | None:
    """A frame's thumbnail (decoded once, cached), None where the video cannot be read (the tile says so)."""
    try:
        return backend.thumbnail_png(str(tile.video_file), frame.seconds, 160)
    except KeppError:
        return None


rows = backend.gallery_rows(cfg, filters, sort or None, descending)
lo, hi = paging.rows_pager(link, "gal", len(rows), int(per))
tiles = [gallery.tile_of(r, ds) for r in preds.iloc[rows[lo:hi]].to_dict("records")]
add_col, _ = st.columns([2, 4])
with add_col:
    playlists.add_control(cfg, [playlists.item_of_row(t.row) for t in tiles], "gal_add")
link.publish()
with link_col:
    links.copy_link(link, "gal_link")
if not tiles:
    st.info("No record matches these filters: clear one.")
    st.stop()
st.caption(f"**Add to playlist** adds the {len(tiles)} tiles of this page; a step opens its graph.")
st.markdown(gallery.TILE_CSS, unsafe_allow_html=True)
present = {"present": "1"} if presenting() else {}
grid = st.columns(COLUMNS_PER_ROW)
for k, tile in enumerate(tiles):
    with grid[k % COLUMNS_PER_ROW].container(key=f"gal_tile_{k}"):
        pngs = [thumbnail(tile, f) for f in tile.frames]
        st.markdown(gallery.tile_html(tile, pngs, present=bool(present)), unsafe_allow_html=True)
        st.page_link(PAGES["plan"].path, label="Open in Plan", icon=PAGES["plan"].icon,
                     query_params={**tile.query, **present})
