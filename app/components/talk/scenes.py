"""Scenes for a live demo: named, curated episodes chosen from the loaded prediction records
(:func:`components.talk.curation.choose_scenes`), listed on Home and the Plan page; one click opens the
scene's video, clips, T and planning model on the Plan page and plans it."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from components.ui import plan_link
from components.records import backend
from components.plan import uploads
from components.ui.config import presenting
from components.ui.pages import PAGES
from components.talk.curation import remembered_scenes
from components.ui.names import episode_label, method_name
from components.ui.text import md
from kepp_core.errors import KeppError

# Material Symbols (shipped with Streamlit): they draw without an emoji font on the projector's machine
ICONS = {"success": ":material/check_circle:", "wrong_endpoint": ":material/wrong_location:",
         "repeated": ":material/repeat:", "long": ":material/straighten:", "upload": ":material/upload:"}
# the scene buttons' names (five to a row at 1280 px, in presentation mode's type too): the full one on hover
SHORT = {"success": "Clean success", "wrong_endpoint": "Wrong endpoint", "repeated": "Repeated step",
         "upload": "Uploaded video"}


@st.cache_data(show_spinner=False, max_entries=8)
def _choose(files: tuple[str, ...], mtimes: tuple[float, ...], horizons: tuple[int, ...] | None,
            dataset: tuple, upload_example: bool, _cfg, _videos: set[str], _examples: frozenset[str],
            _lacking: frozenset[str]) -> list[dict]:
    # ``dataset`` keys the playable videos (ten thousand ids hash slowly on every run). The records
    # are read (and shared with the records pages) only when their scenes are not remembered on disk:
    # Home's first page then need not judge every record at each start.
    return remembered_scenes(files, lambda: backend.predictions(_cfg), horizons=horizons, videos=_videos,
                             upload_example=_examples if upload_example else False, unplannable=_lacking)


def available(cfg, ds, horizons=None) -> list[dict]:
    """The scenes of the loaded records that the app can open (trained horizons, videos with features and
    step times, with or without a video file); where an upload makes sense (an encoder the models accept:
    :func:`components.plan.uploads.refused`), one video with a file is offered as an uploaded video too."""
    try:
        files = tuple(map(str, backend.workspace(cfg).prediction_files()))
    except KeppError:
        return []
    if not files:
        return []
    hs = tuple(sorted(int(h) for h in horizons)) if horizons else None
    encodable = uploads.refused(cfg, ds) is None  # an upload is encoded with the dataset's encoder
    mtimes = tuple(Path(f).stat().st_mtime for f in files)
    key = (cfg.dataset_key(), id(ds))
    videos, with_files = _playable_ids(key, hs, cfg, ds)
    lacking = frozenset(v.id for v in ds.videos) - videos  # the dataset's, but not plannable: no scene
    try:
        return _choose(files, mtimes, hs, key, encodable and bool(with_files), cfg, videos, with_files, lacking)
    except KeppError:  # records that cannot be read: no scenes (the records pages say why)
        return []


@st.cache_resource(show_spinner=False, max_entries=8)
def _playable_ids(key: tuple, horizons: tuple[int, ...] | None, _cfg, _ds) -> tuple[set[str], frozenset[str]]:
    """The videos the Plan page can open at the horizons, and those of them with a video file."""
    videos = [v for h in (horizons or (3,)) for v in backend.playable_videos(_cfg, _ds, h)]
    return {v.id for v in videos}, frozenset(v.id for v in videos if v.video_file is not None)


def default_query(scenes: list[dict]) -> dict[str, str] | None:
    """The Plan page's first state: the clean success (without planning at once)."""
    for s in scenes:
        if s["kind"] == "success":
            return plan_link.without(s["query"], "plan")
    return None


def describe(scene: dict, ds) -> str:
    """One line about a scene: its task, video, steps, method and outcome."""
    label = episode_label(scene["episode"], {t: ds.tasks[t].name for t in ds.tasks})
    return f"{label} · {method_name(scene['method'])} · {scene['description']}"


def _load(query: dict[str, str]) -> None:
    """on_click of a scene on the Plan page: its query into the URL (the page seeds from it and plans)."""
    query = dict(query)
    if presenting():
        query["present"] = "1"
    st.query_params.from_dict(query)


def scene_bar(scenes: list[dict], key: str) -> None:
    """The Plan page's row of scene buttons (one click loads and plans a scene)."""
    if not scenes:
        return
    # each button as wide as its name (the row wraps when it must): a name is never cut short
    with st.container(horizontal=True, gap="small", vertical_alignment="center", key=f"{key}_row"):
        st.markdown("**Scenes**", help="curated examples from the prediction records: one click opens one's record",
                    width="content")
        for s in scenes:
            short = SHORT.get(s["kind"], f"Long (T={s['T']})")
            st.button(short, icon=ICONS.get(s["kind"]), key=f"{key}_{s['kind']}", on_click=_load, args=(s["query"],),
                      help=md(s["name"]) + ": " + md(s["episode"]) + " · " + md(s["description"]), width="content")


def scene_list(scenes: list[dict], ds) -> None:
    """Home's list of scenes: a link to the Plan page per scene, with what it shows."""
    for s in scenes:
        st.page_link(PAGES["plan"].path, label=f"**{s['name']}**: {md(describe(s, ds))}",
                     icon=ICONS.get(s["kind"]), query_params={**s["query"], **({"present": "1"} if presenting() else {})})
