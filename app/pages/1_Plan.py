"""Plan: pick a video (or upload one), choose the start and goal clips, and plan with KEPP."""

from __future__ import annotations

import time

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from components import backend, graphviews
from components.config import page_setup
from components.views import PATH_COLOUR_NAMES, dataset_caption, md, md_code, plan_text, show_graph, show_table, step_cards
from kepp_core.errors import KeppError

cfg = page_setup("Plan", "🧭")
st.title("Plan from a video")

with backend.guarded():
    ds = backend.dataset(cfg)
    enc = backend.feature_encoder(ds)
st.caption(dataset_caption(cfg, ds))

# --- models --------------------------------------------------------------------------------------
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
    variants = backend.plan_variants(cfg, T)
    from kepp_core.graph.retrieval import method_names

    methods = method_names()
if not variants:
    st.error(f"`{root}/T{T}` has a step model but no planning model.")
    st.stop()
variant = controls[2].selectbox("Planning model", list(variants), key="plan_variant")
condition, trained_r = variants[variant]
method_labels = {m: {"p2kg": "P²KG (probabilistic)", "pkg": "frequency graph (PKG)"}.get(m, m) for m in methods}
method = controls[3].selectbox("Recommendation", methods, format_func=method_labels.get, key="plan_method",
                               help="how graph paths are scored (an LLM's plan is shown beside them when an "
                                    "LLM endpoint is set in the sidebar)",
                               disabled=condition != "graph")
with st.sidebar.expander("LLM recommendation", expanded=False):
    llm_default = backend.llm_defaults()
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
m_obs = int(planner.plan_config.get("dataset", {}).get("m", 3))
setting = planner.plan_config.get("dataset", {}).get("setting", "conventional")

# --- the video and its clips ------------------------------------------------------------------------
source = st.radio("Video", ["From the dataset", "Upload a video"], horizontal=True, key="plan_source")
video = None
video_path = None
truth = None
if source == "From the dataset":
    playable = [v for v in ds.videos if v.video_file is not None and v.feature_file is not None
                and v.has_segments and len(v.steps) >= T]
    if not playable:
        st.warning("This dataset has no videos with features and step segments of at least "
                   f"{T} steps; upload a video instead.")
        st.stop()
    playable.sort(key=lambda v: (v.split != "test", v.task, v.id))
    labels = {v.id: f"{ds.tasks[v.task].name if v.task in ds.tasks else v.task} · {v.id} ({v.split})" for v in playable}
    vid = st.selectbox("Video", list(labels), format_func=labels.get, key="plan_video")
    video = ds.video(vid)
    video_path = str(video.video_file)
    episodes = [(i, video.plan[i:i + T]) for i in range(len(video.steps) - T + 1)]
    ep_i = st.selectbox("Episode (annotated steps)", [i for i, _ in episodes],
                        format_func=lambda i: f"steps {i + 1}–{i + T}: " + plan_text(ds.labels(video.plan[i:i + T])),
                        key=f"plan_episode_{vid}_{T}")
    from kepp_core.data.episodes import windows

    sw, gw = windows(video, ep_i, T, setting, m_obs)
    default_start, default_goal = (float(sw[0]), float(sw[-1] + 1)), (float(gw[0]), float(gw[-1] + 1))
    truth = video.plan[ep_i:ep_i + T]
    clip_key = f"{vid}_{ep_i}_{T}"
else:
    up = st.file_uploader("Upload a video (.mp4)", type=["mp4", "m4v", "mov", "webm", "mkv"], key="plan_upload")
    if up is None:
        st.info("Upload a video to plan from it.")
        st.stop()
    with backend.guarded():
        video_path = backend.store_upload(up.getvalue(), up.name)
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
if default_start is None:
    default_start = (0.0, min(duration, float(m_obs)))
    default_goal = (max(0.0, duration - m_obs), duration)
# annotations may run a fraction of a second past the decoded video: keep defaults inside it
default_start, default_goal = [(min(a, duration), min(b, duration)) for a, b in (default_start, default_goal)]

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
    fig = go.Figure()
    for k, s in enumerate(video.steps):
        in_ep = truth is not None and ep_i <= k < ep_i + T
        fig.add_trace(go.Bar(x=[s.end - s.start], base=[s.start], y=["steps"], orientation="h",
                             marker_color="#1565c0" if in_ep else "#90a4ae", showlegend=False,
                             text=ds.actions[s.action], textposition="inside", insidetextanchor="middle",
                             hovertemplate=f"{ds.actions[s.action]}<br>{s.start:.1f}–{s.end:.1f} s<extra></extra>"))
    for (a, b), colour, name in [(start_clip, "#2e7d32", "start"), (goal_clip, "#c62828", "goal")]:
        fig.add_vrect(x0=a, x1=b, fillcolor=colour, opacity=0.25, line_width=0, annotation_text=name)
    fig.update_layout(height=150, barmode="overlay", margin=dict(l=10, r=10, t=10, b=30),
                      xaxis=dict(range=[0, duration], title="seconds"), yaxis=dict(visible=False))
    st.plotly_chart(fig, width="stretch", key="plan_timeline", config={"displaylogo": False})

# --- planning ------------------------------------------------------------------------------------------
inputs = (cfg, clip_key, tuple(start_clip), tuple(goal_clip), T, R, condition, trained_r, method, sampler)
if st.button("Plan", type="primary", key="plan_go"):
    t0 = time.perf_counter()
    with backend.guarded():
        if goal_clip[0] < start_clip[0]:
            raise KeppError(f"the goal clip ({goal_clip[0]:.1f} s) starts before the start clip "
                                    f"({start_clip[0]:.1f} s): the goal must come after the start")
        if video is not None:
            from kepp_core.data.feature_files import load_features

            feats = load_features(video.feature_file)
        else:
            feats = backend.encode_upload(video_path, backend.encoder_spec(enc["encoder"], cfg.encoders))
        v_start = backend.clip_observation(feats, *start_clip, m_obs, "start")
        v_goal = backend.clip_observation(feats, *goal_clip, m_obs, "goal")
        result = planner.plan(v_start, v_goal, T=T, R=R)
    st.session_state["plan_result"] = {"inputs": inputs, "result": result, "truth": truth,
                                       "seconds": time.perf_counter() - t0, "obs": (v_start, v_goal)}

saved = st.session_state.get("plan_result")
if not saved or saved["inputs"] != inputs:
    st.info("Choose the clips and press **Plan**.")
    st.stop()

result = saved["result"]
truth = saved["truth"]
st.caption(f"Planned by {md_code(f'{root.name}/T{T}')} ({md(variant)}; recommendation: {method_labels[method]}, R={R}; "
           f"sampler {planner.sampler}{f', {planner.sampler_steps} steps' if planner.sampler == 'ddim' else ''}) "
           f"on dataset **{md(ds.name)}** with features from encoder **{md(enc['encoder'] or 'unknown')}** · "
           f"{saved['seconds'] * 1000:.0f} ms in all (model {result.timings['total']:.0f} ms)")

out_left, out_right = st.columns([3, 2])
with out_left:
    st.subheader("Step model")
    e1, e2 = st.columns(2)
    for col, name, a, score, t_i in [(e1, "first step â₁", result.endpoints[0], result.endpoint_scores[0], 0),
                                     (e2, "last step â_T", result.endpoints[1], result.endpoint_scores[1], -1)]:
        col.metric(name, ds.actions[a], help="the step model's prediction and its confidence")
        verdict = "" if truth is None else (" · :green-badge[correct]" if a == truth[t_i] else
                                            f" · :red-badge[wrong: truth is {md(ds.actions[truth[t_i]])}]")
        col.markdown(f"confidence {score:.2f}{verdict}")
    st.subheader(f"Top-{R} graph paths")
    distinct = len(set(result.paths))
    if result.fallback:
        st.caption("No path of this length joins â₁ and â_T in the graph: these are KEPP's fallback "
                   "variations of the two endpoints.")
    elif distinct < R:
        st.caption(f"The graph has only {distinct} distinct path{'s' if distinct > 1 else ''} of this length "
                   "between â₁ and â_T; as in KEPP, they repeat in rank order up to R.")
    for k, (p, s) in enumerate(zip(result.paths, result.path_scores)):
        step_cards(ds.labels(p), title=f"path {k + 1} · probability {s:.3f}", colour="#ede7f6")
    if llm_url.strip():
        st.subheader("LLM recommendation")
        with backend.guarded(stop=False), st.spinner("Asking the LLM…"):
            rec = backend.llm_recommendation(llm_url, llm_model, llm_mapper, ds, *result.endpoints, T)
            if rec.used_fallback:
                st.warning(f"The LLM gave no usable plan ({md(rec.fallback_reason)}); shown: the fallback "
                           f"**{md(rec.fallback)}**.")
            llm_correct = None if truth is None else [a == b for a, b in zip(rec.actions, truth)]
            step_cards(ds.labels(rec.actions), llm_correct, colour="#e0f7fa",
                       title=f"LLM plan · {rec.source}" + ("" if rec.verified is None else
                                                          f" · plausibility check: {'yes' if rec.verified else 'no'}"))
            if rec.voted_steps:
                st.caption("Voted steps: " + md(plan_text(rec.voted_steps)) + " · similarity to the mapped actions: "
                           + ", ".join(f"{x:.2f}" for x in rec.similarities))
    st.subheader("KEPP plan")
    correct = None if truth is None else [a == b for a, b in zip(result.plan, truth)]
    step_cards(ds.labels(result.plan), correct, colour="#fff8e1")
    if truth is not None:
        st.markdown(f"**Ground truth** · {sum(correct)}/{T} steps correct · "
                    f"{'success' if all(correct) else 'failure'}")
        step_cards(ds.labels(truth), colour="#e8f5e9")
    st.subheader("Sampled plans")
    k_col, go_col = st.columns([1, 3])
    K = k_col.number_input("K plans", 2, 200, 10, key="plan_K", help="plans drawn with different noise")
    if go_col.button(f"Draw {K} plans", key="plan_sample"):
        with backend.guarded(stop=False):
            st.session_state["plan_samples"] = {"inputs": (inputs, K), "table": backend.sampled_plans(
                planner, *saved["obs"], int(K), R)}
    drawn = st.session_state.get("plan_samples")
    if drawn and drawn["inputs"] == (inputs, K):
        table = drawn["table"].assign(
            steps=lambda d: [plan_text(ds.labels(p)) for p in d["plan"]],
            KEPP_plan=lambda d: [tuple(p) == tuple(result.plan) for p in d["plan"]])
        if truth is not None:
            table["ground_truth"] = [list(p) == list(truth) for p in table["plan"]]
        st.caption(f"{len(table)} distinct plan{'s' if len(table) != 1 else ''} in {K} samples "
                   "(the step model's endpoints and the condition of the plan above, new noise each)")
        show_table(table.drop(columns=["plan"]), "sampled_plans", key="plan_samples",
                   column_config={"frequency": st.column_config.ProgressColumn("frequency", min_value=0.0,
                                                                               max_value=1.0, format="%.2f")})
    if not cfg.presentation:  # debug details stay out of talks
        with st.expander("Timings and condition", expanded=False):
            st.json({"timings_ms": {k: round(v, 1) for k, v in result.timings.items()}})
            show_table(pd.DataFrame(result.condition, columns=ds.actions).loc[:, lambda d: d.sum() > 0],
                       "condition", key="plan_condition")
with out_right:
    st.subheader("P²KG around the endpoints")
    depth = st.slider("Depth", 1, 3, 1, key="plan_depth")
    with backend.guarded(stop=False):
        graph = planner.graph
        drawing = graphviews.plan_drawing(graph, result, truth, depth=depth)
        show_graph(drawing, height=640, download_name="kepp_plan_graph.html", key="plan_graph_dl")
        st.caption("Green node: â₁, red node: â_T; " + ", ".join(
            f"path {k + 1}: {PATH_COLOUR_NAMES[k % len(PATH_COLOUR_NAMES)]}" for k in range(len(result.paths)))
                   + "; thick gold: the final plan; dashed: a step pair the graph never saw. "
                     "Edge labels are P²KG probabilities.")
