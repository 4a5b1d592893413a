"""Plan: pick a video (or upload one), choose the start and goal clips, and plan with KEPP.

The page's state is its URL (the keys of :mod:`components.plan_state`); every exit publishes it first
(``link.stop()``, and ``backend.guarded(link=link)`` on an error)."""

from __future__ import annotations

import time

import streamlit as st

from components import backend, colours, links, network, pickers, plan_state, plans, playlists, scenes, why, zeroshot
from components.charts import video_timeline
from components.config import page_setup
from components.plangraph import graph_paths
from components.search import default_clips
from components.urls import plan_model_id
from components.text import dataset_caption, md, md_code, plan_text
from components.uploads import store_example, store_upload
from kepp_core import api
from kepp_core.catalog import models_dir, scorer_label

cfg = page_setup("Plan")
link = plan_state.PlanLink()  # before any exit: each one publishes the page's state first
title_col, link_col = st.columns([5, 1], vertical_alignment="bottom")
title_col.title("Plan from a video")

with backend.guarded(link=link):
    ds = backend.dataset(cfg)
    enc = api.feature_encoder(ds)
if not cfg.presentation:
    st.caption(dataset_caption(cfg, ds))

# --- models (none, e.g. an annotation-only dataset: zero-shot planning with the graph alone) ------------
with backend.guarded(link=link):
    no_models = zeroshot.missing_models(cfg)
if no_models:
    zeroshot.page(cfg, ds, no_models, link)
    link.stop()
with backend.guarded(link=link):
    root = backend.models_root(cfg)
    horizons = backend.horizons(cfg)
if not horizons:
    st.error(f"No trained models in `{root}`: train them with `kepp train` (or `kepp demo --no-app`).")
    link.stop()

# --- the page's state: the URL (a link, a reload, a scene) or, on first opening, a clean success --------
demo_scenes = scenes.available(cfg, ds, horizons)
link.start_at(scenes.default_query(demo_scenes))
scenes.scene_bar(demo_scenes, "plan_scene")
playlists.playing_bar(cfg, ds, link)

settings = st.expander("Settings", expanded=False) if cfg.presentation else st.container()
controls = settings.columns([1, 1, 2, 2, 2])
choices = sorted(set(range(3, 7)) | set(horizons))
link.seed("plan_T", "T", choices)
link.seed("plan_R", "R", range(1, 6))
T = controls[0].selectbox("Horizon T", choices, key="plan_T", help="number of steps to plan",
                          **links.default_kwargs("plan_T", index=choices.index(horizons[0])))
R = controls[1].slider("Paths R", 1, 5, key="plan_R", help="graph paths recommended to the planning model",
                       **links.default_kwargs("plan_R", value=2))
link.keep(T=T, R=R)
if T not in horizons:
    st.error(f"No model is trained for horizon T={T} (trained horizons: {', '.join(map(str, horizons))}). "
             "Choose another horizon or train one with `kepp train`.")
    link.stop()
with backend.guarded(link=link):
    variants = api.plan_variants(root, T)
if not variants:
    st.error(f"`{models_dir(root, T)}` has a step model but no planning model.")
    link.stop()
model_ids = {label: plan_model_id(role) for label, role in variants.items()}
link.seed("plan_variant", "model", list(variants), lambda m: {v: k for k, v in model_ids.items()}[m])
variant = controls[2].selectbox("Planning model", list(variants), key="plan_variant")
role = variants[variant]
condition = role.condition
scorers = api.scorer_names()
link.seed("plan_method", "method", scorers)
scorer = controls[3].selectbox("Recommendation", scorers, format_func=scorer_label, key="plan_method",
                               help="how graph paths are scored (an LLM's plan is shown beside them when an "
                                    "LLM endpoint is set in the sidebar)",
                               disabled=condition != "graph")
link.keep(model=model_ids[variant], method=scorer)
# settings stay out of the sidebar in presentation mode (in the page's collapsed Settings instead)
with (settings.container() if cfg.presentation else st.sidebar.expander("LLM recommendation", expanded=False)):
    llm_default = api.llm_defaults()
    llm_url = st.text_input("Endpoint URL", llm_default["url"], key="plan_llm_url", placeholder="http://127.0.0.1:8080/v1",
                            help="an OpenAI-compatible chat endpoint (default: $KEPP_LLM_URL; key: $KEPP_LLM_API_KEY); "
                                 "empty: no LLM plan")
    llm_model = st.text_input("Model", llm_default["model"], key="plan_llm_model", help="default: $KEPP_LLM_MODEL")
    llm_mapper = st.selectbox("Map steps with", list(backend.LLM_MAPPERS), key="plan_llm_mapper",
                              help="how generated steps are matched to dataset actions")

sampler_ids = {label: ("own" if spec[0] is None else f"{spec[0]}{spec[1]}") for label, spec in backend.SAMPLER_CHOICES.items()}
link.seed("plan_sampler", "sampler", list(sampler_ids), lambda x: {v: k for k, v in sampler_ids.items()}[x])
sampler = controls[4].selectbox("Sampler", list(backend.SAMPLER_CHOICES), key="plan_sampler",
                                help="the models' own sampler reproduces their recorded metrics; "
                                     "DDIM with 5 steps is faster")
link.keep(sampler=sampler_ids[sampler])
with backend.guarded(link=link):
    planner = backend.planner(cfg, T, role, scorer, ds, sampler)
m_obs, setting = api.observation_settings(planner)

# --- the video and its clips ------------------------------------------------------------------------
SOURCES = {"dataset": "From the dataset", "upload": "Upload a video"}
link.seed("plan_source", "source", list(SOURCES.values()), SOURCES.__getitem__, absent="dataset")
source = st.radio("Video", list(SOURCES.values()), horizontal=True, key="plan_source")
video = None
video_path = None
truth = None
example = None  # the upload scene: a dataset video loaded as an upload (?upload=<video id>)
if source == SOURCES["dataset"]:
    link.keep(source=None, upload=None)  # the dataset's videos: the upload scene's key does not apply
    playable = backend.playable_videos(cfg, ds, T)
    if not playable:
        st.warning("This dataset has no videos with features and step segments of at least "
                   f"{T} steps; upload a video instead.")
        link.stop()
    vid = pickers.video_picker(ds, playable, link)
    if vid is None:
        link.keep(video=None)  # no video matches the search: none is shown
        link.stop()
    video = ds.video(vid)
    video_path = str(video.video_file)
    ep_key = f"plan_episode_{vid}_{T}"
    ep_options = list(range(len(video.steps) - T + 1))
    link.seed(ep_key, "ep", ep_options)
    ep_col, prev_col, next_col = st.columns([6, 1, 1], vertical_alignment="bottom")
    ep_i = ep_col.selectbox("Episode (annotated steps)", ep_options,
                            format_func=lambda i: f"steps {i + 1}–{i + T}: " + plan_text(ds.labels(video.plan[i:i + T])),
                            key=ep_key)
    links.episode_buttons(ep_key, ep_options, (prev_col, next_col), prefix="plan_ep")
    link.keep(video=vid, ep=ep_i)
    default_start, default_goal = api.episode_clips(video, ep_i, T, setting, m_obs)
    truth = video.plan[ep_i:ep_i + T]
    clip_key = f"{vid}_{ep_i}_{T}"
else:
    link.keep(source="upload", video=None, vtask=None, vq=None)  # an upload: the picker's keys do not apply
    up = st.file_uploader("Upload a video (.mp4)", type=["mp4", "m4v", "mov", "webm", "mkv"], key="plan_upload")
    example_id = link.from_url("upload") or link.last("upload")
    if up is None and example_id in {v.id for v in backend.playable_videos(cfg, ds, T)}:
        example = ds.video(example_id)
    if example is None:  # a user's own file (or none yet): no link can carry it, nor its episode, clips or plan
        link.keep(upload=None, ep=None, start=None, goal=None, plan=None)
    if up is None and example is None:
        st.info("Upload a video to plan from it.")
        link.stop()
    with backend.guarded(link=link):
        video_path = (store_upload(up.getvalue(), up.name) if up is not None
                      else store_example(example.video_file, f"{example.id}{example.video_file.suffix}"))
    if example is not None:
        raw_ep = str(link.from_url("ep") or link.last("ep") or 0)
        example_ep = min(max(int(raw_ep), 0), len(example.steps) - T) if raw_ep.isdigit() else 0
        st.caption(f"Example upload: the file of test video **{md(example.id)}** "
                   f"({md(ds.tasks[example.task].name if example.task in ds.tasks else example.task)}), loaded the way "
                   "an uploaded video is: encoded from its pixels, its annotations unused. "
                   "Upload a file to replace it.")
        link.keep(upload=example.id, ep=example_ep)
    if not enc["encoder"]:
        st.error("The loaded dataset's features do not say which encoder made them (no features.json), "
                 "so an uploaded video cannot be encoded to match them.")
        link.stop()
    st.caption(f"The upload is encoded with the dataset's encoder **{md(enc['encoder'])}** (D={md(enc['dim'])}).")
    default_start, default_goal = None, None
    if example is not None:  # the clips of the recorded episode (the scene's), as the dataset's page would
        default_start, default_goal = api.episode_clips(example, example_ep, T, setting, m_obs)
    clip_key = f"upload_{video_path}_{T}_{link.shown('ep') or ''}"

with backend.guarded(link=link):
    meta = backend.video_meta(video_path)
duration = float(meta["duration"])
default_start, default_goal = default_clips(duration, m_obs, default_start, default_goal)

def clip_value(text: str) -> tuple[float, float]:
    """A clip ``a-b`` (seconds) from the URL, inside the video."""
    a, b = (min(max(x, 0.0), duration) for x in plan_state.parse_clip(text))
    if not a < b:
        raise ValueError(text)
    return a, b


shown_before = (video is not None and link.last("video") == video.id
                or example is not None and link.last("upload") == example.id)
same_episode = shown_before and link.last("T") == str(T) and link.last("ep") == link.shown("ep")
if same_episode or link.new("start") or link.new("goal"):
    link.seed(f"plan_start_{clip_key}", "start", parse=clip_value)  # the clips of this episode, as linked
    link.seed(f"plan_goal_{clip_key}", "goal", parse=clip_value)
left, right = st.columns([2, 3])
with left:
    st.video(video_path)
with right:
    start_clip = st.slider("Start clip (s)", 0.0, duration, step=0.5, key=f"plan_start_{clip_key}",
                           **links.default_kwargs(f"plan_start_{clip_key}", value=default_start))
    goal_clip = st.slider("Goal clip (s)", 0.0, duration, step=0.5, key=f"plan_goal_{clip_key}",
                          **links.default_kwargs(f"plan_goal_{clip_key}", value=default_goal))
    linkable = video is not None or example is not None  # a user's own upload cannot travel in a link
    link.keep(start=start_clip if linkable else None, goal=goal_clip if linkable else None)
    thumbs = st.columns(4)
    for col, (name, t) in zip(thumbs, [("start from", start_clip[0]), ("start to", max(start_clip[0], start_clip[1] - 0.01)),
                                       ("goal from", goal_clip[0]), ("goal to", max(goal_clip[0], goal_clip[1] - 0.01))]):
        with backend.guarded(stop=False):
            col.image(backend.thumbnail_png(video_path, round(t, 2)), caption=f"{name} {t:.1f}s")

if video is not None:
    episode = range(ep_i, ep_i + T) if truth is not None else None
    clips = {"start": (start_clip, colours.RIGHT), "goal": (goal_clip, colours.WRONG)}
    st.markdown(video_timeline(video, ds.actions, episode, clips, duration), unsafe_allow_html=True)

# --- planning ------------------------------------------------------------------------------------------
def features():
    """Per-second features of the chosen video (an upload is encoded with the dataset's encoder)."""
    if video is not None:
        return api.video_features(video)
    return backend.encode_upload(video_path, api.encoder_spec(enc["encoder"], cfg.encoders))


inputs = (cfg, clip_key, tuple(start_clip), tuple(goal_clip), T, R, role, scorer, sampler)
# a link, a reload or a scene with plan=1 plans at once (the speaker sees the result, not a button)
auto = link.from_url("plan") == "1" and any(link.new(p) for p in plan_state.KEYS) and linkable
if st.button("Plan", type="primary", key="plan_go") or auto:
    t0 = time.perf_counter()
    with backend.guarded(link=link):
        result, v_start, v_goal = api.plan_clips(planner, features, start_clip, goal_clip, T, R)
    st.session_state["plan_result"] = {"inputs": inputs, "result": result, "truth": truth,
                                       "seconds": time.perf_counter() - t0, "obs": (v_start, v_goal)}
    st.session_state["plan_scroll"] = time.time()  # bring the result into view (presentation mode)

saved = st.session_state.get("plan_result")
shown = bool(saved) and saved["inputs"] == inputs and linkable
link.keep(plan=True if shown else None)
link.publish()
with link_col:
    links.copy_link(link, "plan_link")
    playlists.plan_control(cfg, link, video if video is not None else example)
if not saved or saved["inputs"] != inputs:
    st.info("Choose the clips and press **Plan**.")
    link.stop()

result = saved["result"]
truth = saved["truth"]
st.markdown('<div class="kepp-result" style="scroll-margin-top:64px"></div>', unsafe_allow_html=True)
if cfg.presentation and st.session_state.pop("plan_scroll", None):
    scenes.scroll_to(".kepp-result")
if not cfg.presentation:
    st.caption(f"Planned by {md_code(str(models_dir(root, T).relative_to(root.parent)))} ({md(variant)}; {plans.recommendation_text(condition, scorer_label(scorer), R)}"
               f"sampler {planner.sampler}{f', {planner.sampler_steps} steps' if planner.sampler == 'ddim' else ''}) "
               f"on dataset **{md(ds.name)}** with features from encoder **{md(enc['encoder'] or 'unknown')}** · "
               f"{saved['seconds'] * 1000:.0f} ms in all (model {result.timings['total']:.0f} ms)")

out_left, out_right = st.columns([1, 1]) if cfg.presentation else (st.container(), None)  # the graph: full width, or half
with out_left:
    plans.show_endpoints(ds, result, truth)
    if cfg.presentation:  # result first: the plan right under the endpoints, inside one screen
        plans.show_plan(ds, result, truth)
    plans.show_paths(ds, result, R, condition)
    if llm_url.strip():
        st.subheader("LLM recommendation")
        with backend.guarded(stop=False), st.spinner("Asking the LLM…"):
            plans.show_llm_plan(ds, backend.llm_recommendation(llm_url, llm_model, llm_mapper, ds, *result.step_endpoints, T),
                                truth)
    if not cfg.presentation:
        plans.show_plan(ds, result, truth)
    # why this plan: per-step scores, the plan before and after graph decoding (components/why.py)
    why.show_why(ds, result, expanded=not cfg.presentation)
    st.subheader("Sampled plans")
    k_col, go_col = st.columns([1, 3])
    K = k_col.number_input("K plans", 2, 200, 10, key="plan_K", help="plans drawn with different noise")
    if go_col.button(f"Draw {K} plans", key="plan_sample"):
        with backend.guarded(stop=False):
            st.session_state["plan_samples"] = {"inputs": (inputs, K), "table": api.sampled_plans(
                planner, *saved["obs"], int(K), R)}
    drawn = st.session_state.get("plan_samples")
    if drawn and drawn["inputs"] == (inputs, K):
        plans.show_samples(ds, drawn["table"], K, result, truth)
    if not cfg.presentation:  # debug details stay out of talks
        plans.show_details(ds, result)
with out_right if out_right is not None else st.container():  # full width, beside the plan when presenting
    with backend.guarded(stop=False):
        network.plan_graph_panel(planner.graph, result.step_endpoints, graph_paths(result, condition, R), truth,
                                 key="plan", title=f"P²KG around the plan (T={T})")
