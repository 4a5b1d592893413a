"""KEPP app: the home page (the app's first page: ``app/Home.py`` runs it at the app's root)."""

from __future__ import annotations

import streamlit as st

from components.records import backend
from components.talk import scenes
from components.ui.config import page_setup
from components.ui.pages import PAGES
from components.ui.text import dataset_caption, md_code
from kepp_core.errors import KeppError

cfg = page_setup("Home")

st.title("KEPP: knowledge-enhanced procedure planning")
st.markdown(
    "Given a short clip of the **start** state and of the **goal** state of an instructional "
    "video, KEPP plans the `T` steps in between: a *step model* predicts the first and last "
    "steps, the probabilistic procedure knowledge graph (**P²KG**) built from training plans "
    "recommends the most probable paths between them, and a *planning model* writes the final "
    "plan conditioned on those recommendations.")

with backend.guarded():
    ds = backend.dataset(cfg)
    if not cfg.presentation:
        st.caption(dataset_caption(cfg, ds))
    splits = {s: len(ds.split(s)) for s in ("train", "test")}
    c = st.columns(4)
    c[0].metric("Tasks", len(ds.tasks))
    c[1].metric("Actions", ds.num_actions)
    c[2].metric("Train videos", splits["train"])
    c[3].metric("Test videos", splits["test"])

ws = backend.workspace(cfg)
try:
    demo_scenes = scenes.available(cfg, ds, backend.horizons(cfg))
except KeppError:  # no models or records: nothing to show a scene with
    demo_scenes = []

# a newcomer's first three clicks: a plan, where plans fail, a talk
st.subheader("Start here")
first = next((s for s in demo_scenes if s["kind"] == "success"), None)
steps = st.columns(3)
with steps[0]:
    st.page_link(PAGES["plan"].path, label="**1. See a plan**", icon=PAGES["plan"].icon,
                 query_params=first["query"] if first else None)
    st.caption("A test episode's start and goal, the steps KEPP planned between them and the graph around them.")
with steps[1]:
    st.page_link(PAGES["failures"].path, label="**2. See where plans fail**", icon=PAGES["failures"].icon)
    st.caption("The failures by pattern, each episode with its record; add the ones to explain to a playlist.")
with steps[2]:
    st.page_link(PAGES["playlists"].path, label="**3. Prepare a talk**", icon=PAGES["playlists"].icon)
    st.caption("Order the episodes you added, then Present: → and ← (or a clicker) move between them.")

if demo_scenes:
    st.subheader("Scenes")
    st.caption("Curated examples from the prediction records: each opens the Plan page on its episode and plans it.")
    scenes.scene_list(demo_scenes, ds)

loaded = {"dataset": f"{cfg.dataset} at {backend.dataset_root(cfg) or cfg.root}"}
for name, get in [("models", lambda: str(ws.models_root())),
                  ("encoder", lambda: ws.feature_encoder()["encoder"] or "unknown (no features.json)"),
                  ("graph", lambda: cfg.graph or "built from the training plans"),
                  ("prediction records", lambda: ", ".join(p.name for p in ws.prediction_files()) or "none")]:
    try:
        loaded[name] = get()
    except KeppError as e:
        loaded[name] = f"— ({e})"
if not cfg.presentation:  # paths and cache folders stay out of talks
    st.markdown("\n".join(f"- **{k}**: {md_code(v)}" for k, v in loaded.items()))

st.subheader("Pages")
for page in PAGES.values():
    if page.what:
        st.page_link(page.path, label=f"**{page.label}**: {page.what}", icon=page.icon)
