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

from kepp_core.api import (
    DATASET_FORMATS,
    PATH_KEYS,
    AppConfig,
    config_from_env,
    config_from_mapping,
    read_app_config,
)
from kepp_core.errors import KeppError

__all__ = ["AppConfig", "current_config", "initial_config", "page_setup", "set_config", "sidebar"]

STATE_KEY = "kepp_cfg"
PATH_FIELDS = PATH_KEYS
PATH_HELP = {
    "root": "dataset folder or annotation file (empty: the demo world)",
    "features": "folder of per-second .npy features (empty: the dataset's own)",
    "graph": "P²KG JSON file (empty: built from the training plans)",
    "checkpoints": "folder of trained models (empty: the shipped demo models)",
    "predictions": "prediction records file or folder (empty: from the checkpoints folder)",
    "runs": "folder of training runs with metrics JSONL logs (empty: from the checkpoints folder)",
}

PRESENTATION_CSS = """
<style>
html, body, [class*="st-"], .stMarkdown p, .stMarkdown li { font-size: 1.25rem; }
h1 { font-size: 3rem !important; } h2 { font-size: 2.2rem !important; } h3 { font-size: 1.7rem !important; }
[data-testid="stToolbar"], [data-testid="stDecoration"], footer, .kepp-debug { display: none !important; }
</style>
"""


def initial_config() -> AppConfig:
    """The start configuration ``kepp app`` handed over (``KEPP_APP_*``, ``KEPP_APP_CONFIG``)."""
    return config_from_env()


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


def _apply_widget(name: str) -> None:
    """on_change callback: copy one sidebar widget into the stored config."""
    value = st.session_state[f"cfg_{name}"]
    if name in PATH_FIELDS:
        value = value.strip() or None
    set_config(replace(current_config(), **{name: value}))


def _load_config_file() -> None:
    path = st.session_state.get("cfg_file", "").strip()
    if not path:
        return
    try:
        values = read_app_config(path)
        values.pop("encoders", None)  # only the person starting the app chooses code to load
        cfg = config_from_mapping(values, AppConfig(presentation=current_config().presentation,
                                                    encoders=current_config().encoders))
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
        st.session_state[key] = (value or "") if name in PATH_FIELDS else value


def sidebar(cfg: AppConfig) -> None:
    """The sidebar: presentation mode, data and model paths, config file, reload."""
    _sync_widgets(cfg)
    with st.sidebar:
        st.toggle("Presentation mode", key="cfg_presentation", on_change=_apply_widget,
                  args=("presentation",), help="wide layout, large type, no debug details")
        with st.expander("Data and models", expanded=False):
            st.selectbox("Dataset format", list(DATASET_FORMATS), key="cfg_dataset", on_change=_apply_widget,
                         args=("dataset",))
            for name in PATH_FIELDS:
                st.text_input(name.capitalize(), key=f"cfg_{name}", on_change=_apply_widget, args=(name,),
                              help=PATH_HELP[name], placeholder="default")
            st.text_input("Config file (TOML)", key="cfg_file", placeholder="app.toml")
            st.button("Load config file", on_click=_load_config_file, key="cfg_load")
            st.button("Reload data and models", on_click=_clear_caches, key="cfg_reload",
                      help="read the dataset, graph, models, logs and records from disk again")
        if err := st.session_state.get("kepp_cfg_error"):
            st.error(err)


def page_setup(title: str, icon: str = "📘") -> AppConfig:
    """Page config, presentation styling and the sidebar; returns the current config."""
    cfg = current_config()
    st.set_page_config(page_title=f"KEPP · {title}", page_icon=icon,
                       layout="wide", initial_sidebar_state="collapsed" if cfg.presentation else "auto")
    if cfg.presentation:
        st.markdown(PRESENTATION_CSS, unsafe_allow_html=True)
    sidebar(cfg)
    return current_config()
