"""The app's configuration (dataset, graph, checkpoints, logs, presentation mode) and the
sidebar that edits it.

Start values come from ``kepp app`` options (environment variables ``KEPP_APP_*``) and an
optional TOML config file, read with the schema in ``kepp_core.api.config``; the sidebar
changes them for the session. The values live in ``st.session_state["kepp_cfg"]`` so every
page of the multipage app sees the same ones.
"""

from __future__ import annotations

from dataclasses import asdict, replace

import streamlit as st

from components.ui import activity, colours, scripts
from components.ui.pages import PAGES, by_label

from kepp_core.api import AppConfig
from kepp_core.errors import KeppError

__all__ = ["COMPACT_STEP_PX", "MIN_PRESENT_PX", "RECORDS_HOW", "STEP_PRESENT_PX", "AppConfig", "current_config", "font_scale", "initial_config", "missing", "navigation",
           "page_icon", "page_setup",
           "presenting", "set_config", "sidebar", "start_config", "top_bar"]

STATE_KEY = "kepp_cfg"
# Presentation mode: the root font size grows 1.43x, so every rem-sized thing does too (titles 44 -> 63 px,
# key values 36 -> 51 px, text 16 -> 23 px, Streamlit's small type 14 -> 20 px, widgets); tables (drawn on a
# canvas) are zoomed; the app's own small type is never under MIN_PRESENT_PX, step names and the ✓/✗ marks
# that carry a verdict never under STEP_PRESENT_PX; no Streamlit menu, deploy button, download button or
# debug details. The header (and with it the sidebar's expand control) stays: hiding the toolbar once hid the
# only way back to the sidebar.
FONT_SCALE = 1.43  # presentation mode: the root font size, plotly fonts (graph drawings: components.graph.network)
MIN_PRESENT_PX = 20  # presentation mode: no text smaller than this (CSS px at 1280x720): about 15 pt projected
STEP_PRESENT_PX = 28  # presentation mode: step names and verdict marks (✓/✗) at least this
COMPACT_STEP_PX = 22  # a slide too tall for the window: its step names this size (never under MIN_PRESENT_PX)
COMPACT_PAIR_SHARE = 50  # ... and an A/B slide's cards half the width (not 13/23): the graph keeps six names whole
PRESENTATION_CSS = f"""
<span class="kepp-present"></span>
<style>
html {{ font-size: {FONT_SCALE * 100:g}% !important; }}
[data-testid="stElementContainer"]:has(> [data-testid="stDataFrame"]),
[data-testid="stElementContainer"]:has(> [data-testid="stTable"]) {{ zoom: 1.4; width: calc(100% / 1.4) !important; }}
[data-testid="stMainMenu"], [data-testid="stAppDeployButton"], [data-testid="stDecoration"], footer,
[data-testid="stDownloadButton"], .kepp-debug {{ display: none !important; }}
[data-testid="stMainBlockContainer"] {{ padding-top: 3rem; padding-left: 2.5rem; padding-right: 2.5rem; }}
.st-key-kepp_bar p, .st-key-kepp_bar span {{ font-size: {MIN_PRESENT_PX}px !important; }}  /* the page bar: one line */
.st-key-kepp_bar {{ gap: 0.15rem !important; flex-wrap: nowrap !important; }}
.st-key-kepp_bar a, .st-key-kepp_bar button {{ padding-left: 0.3rem !important; padding-right: 0.3rem !important; }}
/* small type of the app's own HTML (step cards' heads, the timeline): never below the back row's least */
.kepp-small, .kepp-timeline div, .kepp-step-timeline div {{ font-size: max({MIN_PRESENT_PX}px, 0.75em) !important; }}
code {{ font-size: max({MIN_PRESENT_PX}px, 0.75em) !important; }}
/* what the room reads first: step names and the marks that carry a verdict */
.kepp-card-label, .kepp-step {{ font-size: max({STEP_PRESENT_PX}px, 0.85em) !important; }}
.kepp-mark {{ font-size: max({STEP_PRESENT_PX}px, 1em) !important; line-height: 1; }}
/* a playing slide that runs below the window (app/static/kepp-present.js marks the page kepp-compact): each card's
   number beside its name, its name at COMPACT_STEP_PX, the rows and the head tighter, an A/B slide's two columns
   even (the graph's step names drawn smaller, down to MIN_PRESENT_PX, where a word would be cut: kepp-graph.js) */
.kepp-compact .kepp-card {{ padding: 1px 3px !important; margin: 1px !important; line-height: 1.1 !important; }}
.kepp-compact .kepp-card > .kepp-small, .kepp-compact .kepp-card-label {{ display: inline; margin-right: 0.2em; }}
.kepp-compact .kepp-step-word {{ display: none; }}
.kepp-compact .kepp-input, .kepp-compact .kepp-verdict-line {{ font-size: {MIN_PRESENT_PX}px; }}
.kepp-compact .kepp-card-label {{ font-size: max({COMPACT_STEP_PX}px, 0.7em) !important; margin-right: 0; }}
.kepp-compact [data-testid="stHorizontalBlock"]:has(> [data-testid="stColumn"] .kepp-shown[data-methods*=","])
  > [data-testid="stColumn"]:first-child {{ flex: 0 0 {COMPACT_PAIR_SHARE}% !important; width: {COMPACT_PAIR_SHARE}% !important;
  max-width: {COMPACT_PAIR_SHARE}% !important; }}
.kepp-compact [data-testid="stHorizontalBlock"]:has(> [data-testid="stColumn"] .kepp-shown[data-methods*=","])
  > [data-testid="stColumn"]:last-child {{ flex: 1 1 0 !important; width: auto !important; min-width: 0 !important; }}
/* a bigger screen: the same page, zoomed (app/static/kepp-present.js sets --kepp-zoom) */
[data-testid="stMainBlockContainer"] {{ zoom: var(--kepp-zoom, 1); }}
/* a move to another slide (app/static/kepp-keys.js marks the page kepp-moving until its run has ended): what the
   last run drew is hidden, never the old slide under the new number, and no "Running..." on the room's screen */
.kepp-moving [data-stale="true"] {{ visibility: hidden !important; }}
/* Streamlit's "Running... Stop" never on the room's screen (a first key after a restart runs a while) */
[data-testid="stStatusWidget"] {{ display: none !important; }}
/* the server away (app/static/kepp-present.js): the slide stays, with a quiet mark; no developer dialog */
[data-kepp-connection], [data-testid="stConnectionStatus"] {{ display: none !important; }}
.kepp-reconnecting {{ display: none; }}
.kepp-reconnecting.kepp-away {{ display: block; position: fixed; right: 1rem; bottom: 0.6rem; z-index: 1000002;
  font: {MIN_PRESENT_PX}px sans-serif; color: var(--kepp-soft); background: var(--kepp-bar); padding: 0.1rem 0.5rem;
  border-radius: 0.4rem; }}
</style>
"""
BASE_SCREEN = (1280, 720)  # presentation mode is laid out for this window; a bigger one zooms it (kepp-present.js)
RECONNECTING = "reconnecting…"  # presentation mode's mark while the server is away
CONNECTION_DIALOG = "Connection error"  # the title of Streamlit's dialog when the server is away
PRESENT_SEEN = "kepp_present_seen"  # the last ?present= value applied
PANEL_OPEN = "kepp_panel_open"  # the sidebar's settings panel is open


def initial_config() -> AppConfig:
    """The start configuration ``kepp app`` handed over (``KEPP_APP_*``, ``KEPP_APP_CONFIG``)."""
    return AppConfig.from_env()


def current_config() -> AppConfig:
    """This session's configuration (the start configuration on first use)."""
    if STATE_KEY not in st.session_state:
        try:
            st.session_state[STATE_KEY] = initial_config()
        except KeppError as e:
            st.session_state[STATE_KEY] = AppConfig()
            st.session_state["kepp_cfg_error"] = str(e)
    return st.session_state[STATE_KEY]


def set_config(cfg: AppConfig) -> None:
    """Replace this session's configuration."""
    st.session_state[STATE_KEY] = cfg


def start_config() -> AppConfig:
    """The configuration the server was started with (what decides which folders a visitor may open)."""
    try:
        return initial_config()
    except KeppError:
        return AppConfig()


def _apply_widget(name: str) -> None:
    """on_change callback: copy one sidebar widget into the stored config (a path only when it lies
    under a folder the person running the server allowed)."""
    value = st.session_state[f"cfg_{name}"]
    if name in AppConfig.PATH_KEYS:
        value = value.strip() or None
        if value is not None:
            try:
                start_config().check_allowed(value)
            except KeppError as e:
                st.session_state["kepp_cfg_error"] = str(e)
                return
        st.session_state.pop("kepp_cfg_error", None)
    set_config(replace(current_config(), **{name: value}))


def _load_config_file() -> None:
    path = st.session_state.get("cfg_file", "").strip()
    if not path:
        return
    try:
        start = start_config()
        start.check_allowed(path)
        values = AppConfig.read_file(path)
        values.pop("encoders", None)  # only the person starting the app chooses code to load
        values.pop("device", None)  # ... and where its networks run
        for key in AppConfig.PATH_KEYS:
            if values.get(key):
                start.check_allowed(values[key])
        cfg = AppConfig(presentation=current_config().presentation, encoders=current_config().encoders,
                        allow_roots=current_config().allow_roots, device=current_config().device).updated(values)
    except KeppError as e:
        st.session_state["kepp_cfg_error"] = str(e)
        return
    st.session_state.pop("kepp_cfg_error", None)
    set_config(cfg)


def _clear_caches() -> None:
    st.cache_resource.clear()
    st.cache_data.clear()


def _sync_widgets(cfg: AppConfig) -> None:
    """Give every sidebar widget the stored value (widget state does not survive a page switch)."""
    for name, value in asdict(cfg).items():
        if name == "encoders":
            continue
        key = f"cfg_{name}"
        st.session_state[key] = (value or "") if name in AppConfig.PATH_KEYS else value


def _set_presentation(on: bool) -> None:
    """Turn presentation mode on or off (and say so in the URL, ``?present=1``)."""
    set_config(replace(current_config(), presentation=on))
    st.session_state["cfg_presentation"] = on
    if on:
        st.query_params["present"] = "1"
    elif "present" in st.query_params:
        del st.query_params["present"]
    st.session_state[PRESENT_SEEN] = "1" if on else None


def _remember_panel() -> None:
    """on_change of the sidebar's settings panel: open or closed, on every page."""
    st.session_state[PANEL_OPEN] = bool(st.session_state["cfg_panel"])


def _toggle_presentation() -> None:
    """on_change of the sidebar toggle."""
    _set_presentation(bool(st.session_state["cfg_presentation"]))


def _presentation_from_url() -> None:
    """``?present=1`` / ``?present=0`` in a link (or after a reload) turns the mode on or off."""
    raw = st.query_params.get("present")
    if raw is not None and raw != st.session_state.get(PRESENT_SEEN):
        _set_presentation(raw.strip().lower() in ("1", "true", "yes", "on"))
    elif current_config().presentation and raw is None:
        st.query_params["present"] = "1"  # a page switch clears the query: keep the mode in the URL
        st.session_state[PRESENT_SEEN] = "1"


def presenting() -> bool:
    """True in presentation mode."""
    return bool(current_config().presentation)


def font_scale() -> float:
    """How much larger type is in this mode (plotly fonts): 1.0, or :data:`FONT_SCALE` when presenting."""
    return FONT_SCALE if presenting() else 1.0


def top_bar() -> None:
    """Presentation mode's page bar: every page, and the way out of the mode (no sidebar needed)."""
    with st.container(horizontal=True, vertical_alignment="center", gap="small", key="kepp_bar"):
        for page in PAGES.values():
            if page.on_bar:
                st.page_link(page.path, label=page.label, icon=page.icon)
        st.button("Exit presentation", key="present_exit", icon=":material/close_fullscreen:", type="tertiary",
                  on_click=_set_presentation,
                  args=(False,), help="back to the normal layout with settings (or open the page with ?present=0)")


def sidebar(cfg: AppConfig) -> None:
    """The sidebar: presentation mode, then (outside presentation mode) data and model paths,
    config file, reload."""
    _sync_widgets(cfg)
    with st.sidebar:
        st.toggle("Presentation mode", key="cfg_presentation", on_change=_toggle_presentation,
                  help="large type for a projector, a page bar on top, no settings or debug details "
                       "(also ?present=1 in the URL)")
        if cfg.presentation:
            return
        # drawn only while open: its widgets' scripts stay out of every page's first load
        st.session_state["cfg_panel"] = bool(st.session_state.get(PANEL_OPEN))
        with st.expander("Data and models", key="cfg_panel", on_change=_remember_panel) as panel:
            if panel.open:
                _settings()
        if err := st.session_state.get("kepp_cfg_error"):
            st.error(err)


def _settings() -> None:
    """The settings panel's widgets: dataset format, paths, config file, reload."""
    st.selectbox("Dataset format", list(AppConfig.DATASET_FORMATS), key="cfg_dataset", on_change=_apply_widget,
                 args=("dataset",))
    for name in AppConfig.PATH_KEYS:
        st.text_input(name.capitalize(), key=f"cfg_{name}", on_change=_apply_widget, args=(name,),
                      help=AppConfig.PATH_HELP[name], placeholder="default")
    st.text_input("Config file (TOML)", key="cfg_file", placeholder="app.toml")
    st.button("Load config file", on_click=_load_config_file, key="cfg_load")
    st.button("Reload data and models", on_click=_clear_caches, key="cfg_reload",
              help="read the dataset, graph, models, logs and records from disk again")


RECORDS_HOW = ("Prediction records are written by `kepp eval --records FILE`; start the app with "
               "`kepp app --predictions FILE` (a file or a folder), or set **Predictions** under *Data and models* "
               "in the sidebar.")


def missing(message: str, how: str) -> None:
    """What a page lacks, in words for whoever reads it in a browser (``message``), and, outside presentation
    mode and folded away, how the person running the app adds it (``how``: Markdown, commands and settings)."""
    st.info(message, icon=":material/info:")
    if not presenting():
        with st.expander("How the person running the app adds them"):
            st.markdown(how)


def page_icon(label: str) -> str:
    """The Material icon of the page ``label`` (as the page bar shows it)."""
    return by_label(label).icon


def navigation() -> None:
    """Register every page of :data:`components.ui.pages.PAGES` with Streamlit (``st.navigation``, listed in the
    sidebar as Streamlit's file-based navigation listed them, folded) and run the one the address names."""
    with activity.running():  # the start's warm-up visits wait while a visitor's run goes on (app/serve.py)
        st.navigation([st.Page(p.path, title=p.label, icon=p.icon, url_path=p.url_path or None, default=p.home)
                       for p in PAGES.values()], expanded=False).run()


def page_setup(title: str) -> AppConfig:
    """Page config, presentation mode (from the sidebar or ``?present=``: styling, page bar) and
    the sidebar; returns the current config. Icons are Material Symbols, not emoji: Streamlit reads
    its emoji catalog (0.3 s) on the first emoji icon."""
    current_config()
    _presentation_from_url()
    cfg = current_config()
    st.set_page_config(page_title=f"KEPP · {title}", page_icon=page_icon(title),
                       layout="wide", initial_sidebar_state="collapsed" if cfg.presentation else "auto")
    st.html(colours.css_variables())  # the colours the app's stylesheets and components read as var(--kepp-…)
    if cfg.presentation:
        st.markdown(PRESENTATION_CSS, unsafe_allow_html=True)
        st.html(scripts.call("kepp-present.js", {"text": RECONNECTING, "title": CONNECTION_DIALOG, "base": BASE_SCREEN}),
                unsafe_allow_javascript=True)
        top_bar()
    sidebar(cfg)
    return current_config()
