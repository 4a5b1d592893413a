"""Plan: pick a video (or upload one), choose the start and goal clips, and plan with KEPP."""

from __future__ import annotations

import time

import streamlit as st

from components import backend, network, plans, zeroshot
from components.charts import video_timeline
from components.config import page_setup
from components.text import dataset_caption, md, md_code, plan_text
from components.uploads import store_upload
from kepp_core import api

cfg = page_setup("Plan", "🧭")
st.title("Plan from a video")

with backend.guarded():
    ds = backend.dataset(cfg)
    enc = api.feature_encoder(ds)
st.caption(dataset_caption(cfg, ds))

# --- models (none, e.g. an annotation-only dataset: zero-shot planning with the graph alone) ------------
with backend.guarded():
    no_models = zeroshot.missing_models(cfg)
if no_models:
    zeroshot.page(cfg, ds, no_models)
    st.stop()
with backend.guarded():
    root = backend.models_root(cfg)
    horizons = backend.horizons(cfg)
if not horizons:
    st.error(f"No trained models in `{root}`: train them with `kepp train` (or `kepp demo --no-app`).")
    st.stop()

controls = st.columns([1, 1, 2, 2, 2])
choices = sorted(set(range(3, 7)) | set(horizons))
T = controls[0].selectbox("Horizon T", choices, index=choices.index(horizons[0]), key="plan_T",
                          help="number of steps to plan")
R = controls[1].slider("Paths R", 1, 5, 2, key="plan_R", help="graph paths recommended to the planning model")
if T not in horizons:
    st.error(f"No model is trained for horizon T={T} (trained horizons: {', '.join(map(str, horizons))}). "
             "Choose another horizon or train one with `kepp train`.")
    st.stop()
with backend.guarded():
    variants = api.plan_variants(root, T)
    method_labels = api.recommendation_methods()
if not variants:
    st.error(f"`{root}/T{T}` has a step model but no planning model.")
    st.stop()
variant = controls[2].selectbox("Planning model", list(variants), key="plan_variant")
condition, trained_r = variants[variant]
method = controls[3].selectbox("Recommendation", list(method_labels), format_func=method_labels.get, key="plan_method",
                               help="how graph paths are scored (an LLM's plan is shown beside them when an "
                                    "LLM endpoint is set in the sidebar)",
                               disabled=condition != "graph")
with st.sidebar.expander("LLM recommendation", expanded=False):
    llm_default = api.llm_defaults()
    llm_url = st.text_input("Endpoint URL", llm_default["url"], key="plan_llm_url", placeholder="http://127.0.0.1:8080/v1",
                            help="an OpenAI-compatible chat endpoint (default: $KEPP_LLM_URL; key: $KEPP_LLM_API_KEY); "
                                 "empty: no LLM plan")
    llm_model = st.text_input("Model", llm_default["model"], key="plan_llm_model", help="default: $KEPP_LLM_MODEL")
    llm_mapper = st.selectbox("Map steps with", list(backend.LLM_MAPPERS), key="plan_llm_mapper",
                              help="how generated steps are matched to dataset actions")

sampler = controls[4].selectbox("Sampler", list(backend.SAMPLERS), key="plan_sampler",
                                help="the models' own sampler reproduces their recorded metrics; "
                                     "DDIM with 5 steps is faster")
with backend.guarded():
    planner = backend.planner(cfg, T, condition, trained_r, method, ds, sampler)
m_obs, setting = api.observation_settings(planner)

# --- the video and its clips ------------------------------------------------------------------------
source = st.radio("Video", ["From the dataset", "Upload a video"], horizontal=True, key="plan_source")
video = None
video_path = None
truth = None
if source == "From the dataset":
    playable = api.playable_videos(ds, T)
    if not playable:
        st.warning("This dataset has no videos with features and step segments of at least "
                   f"{T} steps; upload a video instead.")
        st.stop()
    labels = {v.id: f"{ds.tasks[v.task].name if v.task in ds.tasks else v.task} · {v.id} ({v.split})" for v in playable}
    vid = st.selectbox("Video", list(labels), format_func=labels.get, key="plan_video")
    video = ds.video(vid)
    video_path = str(video.video_file)
    ep_i = st.selectbox("Episode (annotated steps)", list(range(len(video.steps) - T + 1)),
                        format_func=lambda i: f"steps {i + 1}–{i + T}: " + plan_text(ds.labels(video.plan[i:i + T])),
                        key=f"plan_episode_{vid}_{T}")
    default_start, default_goal = api.episode_clips(video, ep_i, T, setting, m_obs)
    truth = video.plan[ep_i:ep_i + T]
    clip_key = f"{vid}_{ep_i}_{T}"
else:
    up = st.file_uploader("Upload a video (.mp4)", type=["mp4", "m4v", "mov", "webm", "mkv"], key="plan_upload")
    if up is None:
        st.info("Upload a video to plan from it.")
        st.stop()
    with backend.guarded():
        video_path = store_upload(up.getvalue(), up.name)
    if not enc["encoder"]:
        st.error("The loaded dataset's features do not say which encoder made them (no features.json), "
                 "so an uploaded video cannot be encoded to match them.")
        st.stop()
    st.caption(f"The upload is encoded with the dataset's encoder **{md(enc['encoder'])}** (D={md(enc['dim'])}).")
    default_start, default_goal = None, None
    clip_key = f"upload_{video_path}"

with backend.guarded():
    meta = backend.video_meta(video_path)
duration = float(meta["duration"])
default_start, default_goal = api.default_clips(duration, m_obs, default_start, default_goal)

left, right = st.columns([2, 3])
with left:
    st.video(video_path)
with right:
    start_clip = st.slider("Start clip (s)", 0.0, duration, default_start, step=0.5, key=f"plan_start_{clip_key}")
    goal_clip = st.slider("Goal clip (s)", 0.0, duration, default_goal, step=0.5, key=f"plan_goal_{clip_key}")
    thumbs = st.columns(4)
    for col, (name, t) in zip(thumbs, [("start from", start_clip[0]), ("start to", max(start_clip[0], start_clip[1] - 0.01)),
                                       ("goal from", goal_clip[0]), ("goal to", max(goal_clip[0], goal_clip[1] - 0.01))]):
        with backend.guarded(stop=False):
            col.image(backend.thumbnail_png(video_path, round(t, 2)), caption=f"{name} {t:.1f}s")

if video is not None:
    episode = range(ep_i, ep_i + T) if truth is not None else None
    clips = {"start": (start_clip, "#2e7d32"), "goal": (goal_clip, "#c62828")}
    st.plotly_chart(video_timeline(video, ds.actions, episode, clips, duration), width="stretch",
                    key="plan_timeline", config={"displaylogo": False})

# --- planning ------------------------------------------------------------------------------------------
def features():
    """Per-second features of the chosen video (an upload is encoded with the dataset's encoder)."""
    if video is not None:
        return api.video_features(video)
    return backend.encode_upload(video_path, api.encoder_spec(enc["encoder"], cfg.encoders))


inputs = (cfg, clip_key, tuple(start_clip), tuple(goal_clip), T, R, condition, trained_r, method, sampler)
if st.button("Plan", type="primary", key="plan_go"):
    t0 = time.perf_counter()
    with backend.guarded():
        result, v_start, v_goal = api.plan_clips(planner, features, start_clip, goal_clip, T, R)
    st.session_state["plan_result"] = {"inputs": inputs, "result": result, "truth": truth,
                                       "seconds": time.perf_counter() - t0, "obs": (v_start, v_goal)}

saved = st.session_state.get("plan_result")
if not saved or saved["inputs"] != inputs:
    st.info("Choose the clips and press **Plan**.")
    st.stop()

result = saved["result"]
truth = saved["truth"]
st.caption(f"Planned by {md_code(f'{root.name}/T{T}')} ({md(variant)}; {plans.recommendation_text(condition, method_labels[method], R)}"
           f"sampler {planner.sampler}{f', {planner.sampler_steps} steps' if planner.sampler == 'ddim' else ''}) "
           f"on dataset **{md(ds.name)}** with features from encoder **{md(enc['encoder'] or 'unknown')}** · "
           f"{saved['seconds'] * 1000:.0f} ms in all (model {result.timings['total']:.0f} ms)")

out_left, out_right = st.columns([3, 2]) if cfg.presentation else (st.container(), None)
with out_left:
    plans.show_endpoints(ds, result, truth)
    plans.show_paths(ds, result, R, condition)
    if llm_url.strip():
        st.subheader("LLM recommendation")
        with backend.guarded(stop=False), st.spinner("Asking the LLM…"):
            plans.show_llm_plan(ds, backend.llm_recommendation(llm_url, llm_model, llm_mapper, ds, *result.endpoints, T),
                                truth)
    plans.show_plan(ds, result, truth)
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
        network.plan_graph_panel(planner.graph, result.endpoints, api.graph_paths(result, condition, R), truth,
                                 key="plan", title=f"P²KG around the plan (T={T})")
