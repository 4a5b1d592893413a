"""Plan: pick a video (or upload one), choose the start and goal clips, and plan with KEPP.

An episode opened from the records (Open in Plan, a scene, a playlist item: ``rec=METHOD``) shows
that method's record first, as Failure cases and Results do; a live re-plan is a second, labelled
view (:mod:`components.recorded` decides). The result (the input, the plan beside its graph) is
brought into view whenever a new one arrives (:mod:`components.result`).

The page's state is its URL (the keys of :mod:`components.plan_state`); every exit publishes it first
(``link.stop()``, and ``backend.guarded(link=link)`` on an error)."""

from __future__ import annotations

import time

import streamlit as st

from components import backend, colours, links, network, pickers, plan_state, plans, playlists, recorded, result, scenes, why, zeroshot
from components.charts import step_timeline, video_timeline
from components.config import page_setup
from components.plangraph import graph_paths
from components.search import default_clips
from components.urls import plan_model_id
from components.text import dataset_caption, md, md_code, plan_text
from components.uploads import store_example, store_upload
from kepp_core import api
from kepp_core import catalog
from components.names import method_name
from kepp_core.catalog import TEXT_PLANNER, models_dir, scorer_label
from kepp_core.errors import KeppError

TEXT_VARIANT = "graph + text endpoints (S3D, no model)"  # the P²KG between the text tower's endpoints (model=graph-text)
DATASET_FEATURES = "the dataset's features"

cfg = page_setup("Plan")
link = plan_state.PlanLink()  # before any exit: each one publishes the page's state first
title_col, link_col = st.columns([5, 1], vertical_alignment="bottom")
title_col.title("Plan from a video")

with backend.guarded(link=link):
    ds = backend.dataset(cfg)
    enc = api.feature_encoder(ds)
s3d_choices = cfg.grounding_encoders()  # the S3D encoders the person running the app allowed
if not cfg.presentation:
    st.caption(dataset_caption(cfg, ds))

# --- models (none, e.g. an annotation-only dataset: zero-shot planning with the graph alone) ------------
with backend.guarded(link=link):
    no_models = zeroshot.missing_models(cfg)
if no_models and not s3d_choices:
    zeroshot.page(cfg, ds, no_models, link)
    link.stop()
root, horizons = None, []  # no trained model: graph + text endpoints (an allowed S3D encoder's text tower)
if not no_models:
    with backend.guarded(link=link):
        root = backend.models_root(cfg)
        horizons = backend.horizons(cfg)
    if not horizons:
        st.error(f"No trained models in `{root}`: train them with `kepp train` (or `kepp demo --no-app`).")
        link.stop()

# --- the page's state: the URL (a link, a reload, a scene) or, on first opening, a clean success --------
demo_scenes = scenes.available(cfg, ds, horizons)
link.start_at(scenes.default_query(demo_scenes))
playlists.playing_bar(cfg, ds, link)  # first: a link naming only a playlist's place gets its item's query
scenes.scene_bar(demo_scenes, "plan_scene")
with backend.guarded(stop=False):
    records = backend.predictions(cfg)


def asked(key: str) -> str | None:
    """A key the page carries without a widget: a new address's value (leaving it out drops it), else the last."""
    return link.from_url(key) if link.foreign or link.from_url(key) is not None else link.last(key)

settings = st.expander("Settings", expanded=False) if cfg.presentation else st.container()
controls = settings.columns([1, 1, 2, 2, 2])
choices = sorted(set(range(3, 7)) | set(horizons))
link.seed("plan_T", "T", choices)
link.seed("plan_R", "R", range(1, 6))
T = controls[0].selectbox("Horizon T", choices, key="plan_T", help="number of steps to plan",
                          **links.default_kwargs("plan_T", index=choices.index(horizons[0] if horizons else 3)))
R = controls[1].slider("Paths R", 1, 5, key="plan_R", help="graph paths recommended to the planning model",
                       **links.default_kwargs("plan_R", value=2))
link.keep(T=T, R=R)

# --- the video encoder: the dataset's features, or an allowed S3D network (its text tower grounds steps) ----
encoder_ids = {} if no_models else {DATASET_FEATURES: "dataset"}
encoder_ids |= {label: eid for eid, (_, label) in s3d_choices.items()}
steps_text, s3d = "", None
text_link = link.new("model") == TEXT_PLANNER  # a link to graph + text endpoints (e.g. a graph-text row's)
if text_link and not s3d_choices:
    st.info(f"This link plans with graph + text endpoints (`{TEXT_PLANNER}`), which needs an S3D encoder: none "
            "is allowed here (`kepp app --encoder s3d:PATH`), so a trained planning model plans instead.")
if s3d_choices:
    with (settings.container() if cfg.presentation else st.sidebar.expander("Video encoder", expanded=True)):
        first_s3d = next(label for label, eid in encoder_ids.items() if eid in s3d_choices)
        if text_link and link.from_url("encoder") is None:  # such a link names no encoder: the first S3D one
            st.session_state["plan_encoder"] = first_s3d
        link.seed("plan_encoder", "encoder", list(encoder_ids), {v: k for k, v in encoder_ids.items()}.__getitem__,
                  absent=None if no_models or text_link else "dataset")
        enc_label = st.selectbox("Encoder", list(encoder_ids), key="plan_encoder",
                                 help="S3D HowTo100M: the official models' features; its text tower draws the "
                                      "step timeline and plans with graph + text endpoints (no model needed)")
        steps_text = st.text_area("Steps to ground", key="plan_steps", height=90,
                                  placeholder="one step name per line (empty: the dataset's steps)",
                                  help="the step timeline scores each second against these names")
    link.keep(encoder=None if encoder_ids[enc_label] == "dataset" else encoder_ids[enc_label])
    s3d = s3d_choices[encoder_ids[enc_label]][0] if encoder_ids[enc_label] in s3d_choices else None
if T not in horizons and s3d is None:
    st.error(f"No model is trained for horizon T={T} (trained horizons: {', '.join(map(str, horizons))}). "
             "Choose another horizon or train one with `kepp train`.")
    link.stop()
with backend.guarded(link=link):
    variants = api.plan_variants(root, T) if T in horizons else {}
if s3d is not None:
    variants[TEXT_VARIANT] = None  # None: no planning model
if not variants:
    st.error(f"`{models_dir(root, T)}` has a step model but no planning model.")
    link.stop()
model_ids = {label: TEXT_PLANNER if role is None else plan_model_id(role) for label, role in variants.items()}
link.seed("plan_variant", "model", list(variants), lambda m: {v: k for k, v in model_ids.items()}[m])
variant = controls[2].selectbox("Planning model", list(variants), key="plan_variant")
role = variants[variant]  # None: graph + text endpoints
condition = "graph" if role is None else role.condition
scorers = api.scorer_names()
link.seed("plan_method", "method", scorers)
scorer = controls[3].selectbox("Recommendation", scorers, format_func=scorer_label, key="plan_method",
                               help="how graph paths are scored (an LLM's plan is shown beside them when an "
                                    "LLM endpoint is set in the sidebar)",
                               disabled=condition != "graph" or role is None)
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
    planner = (backend.text_planner(cfg, s3d, ds, T) if role is None
               else backend.planner(cfg, T, role, scorer, ds, sampler))
m_obs, setting = api.observation_settings(planner)
width_error = None  # the models cannot take this encoder's features: said before anything is encoded
if s3d is not None:
    try:
        planner.check_encoder(s3d)
    except KeppError as e:
        width_error = str(e)

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
    if not enc["encoder"] and s3d is None:
        st.error("The loaded dataset's features do not say which encoder made them (no features.json), "
                 "so an uploaded video cannot be encoded to match them.")
        link.stop()
    st.caption(f"The upload is encoded with **{md(s3d_choices[encoder_ids[enc_label]][1])}**." if s3d is not None else
               f"The upload is encoded with the dataset's encoder **{md(enc['encoder'])}** (D={md(enc['dim'])}).")
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

clips = {"start": (start_clip, colours.RIGHT), "goal": (goal_clip, colours.WRONG)}
if video is not None:
    episode = range(ep_i, ep_i + T) if truth is not None else None
    st.markdown(video_timeline(video, ds.actions, episode, clips, duration), unsafe_allow_html=True)

# --- what the page shows: a record first (components.recorded), the live planner's result second ----------
shown_video = video if video is not None else example
task = shown_video.task if shown_video is not None else None
rec_asked = asked("rec") if linkable and source == SOURCES["dataset"] else None
view = recorded.shown({**link.out, "rec": rec_asked, "seed": asked("seed"), "live": asked("live")}, records, task)
rec = view.record
link.keep(rec=rec.method if rec else None, seed=rec.seed if rec else None, live=True if rec and view.live else None)
with backend.guarded(link=link):  # graph + text endpoints (no model): the catalogue's row of the same plans
    live_name = recorded.live_method(planner, role) if role is not None else TEXT_PLANNER
live_label = method_name(live_name) if live_name else variant


def dataset_made_by(spec: str) -> bool:
    """Whether the dataset's features are this encoder's (then a dataset video's are read, not encoded)."""
    try:
        return bool(enc["encoder"]) and api.encoder_spec(enc["encoder"], (spec,)) == spec
    except KeppError:
        return False


def features():
    """Per-second features of the chosen video: a dataset video's own, or the file encoded with the S3D
    encoder chosen in the sidebar (an upload: with it, or with the dataset's encoder)."""
    if s3d is not None and not (video is not None and dataset_made_by(s3d)):
        return backend.encode_upload(video_path, s3d)
    if video is not None:
        return api.video_features(video)
    return backend.encode_upload(video_path, api.encoder_spec(enc["encoder"], cfg.encoders))


if s3d is not None:  # the step timeline: which step each second most resembles (the S3D text tower)
    typed = [line.strip() for line in steps_text.splitlines() if line.strip()]
    steps, whose = (typed, "typed steps") if typed else (list(ds.actions), "the dataset's steps")
    with backend.guarded(stop=False):
        timeline = backend.grounding(cfg, s3d, steps, ds, T, setting, m_obs).timeline(features())
        st.markdown(step_timeline(timeline, clips, duration), unsafe_allow_html=True)
        st.caption(f"Step timeline: the step each second most resembles among {len(steps)} {whose}, scored "
                   "zero-shot by the S3D text tower; hover a second for its top 3.")

# --- planning ------------------------------------------------------------------------------------------
inputs = (cfg, clip_key, tuple(start_clip), tuple(goal_clip), T, R, role, scorer, sampler, s3d)
# a link, a reload, a scene or a slide with plan=1 (or a record's live=1, or a record the records do not
# hold: a graph-text row's without its records, say) plans at once: the speaker sees the result, not a button
auto = (linkable and not width_error and any(link.new(p) for p in plan_state.KEYS)
        and ((link.from_url("plan") == "1" or rec_asked is not None) if rec is None else view.live))
if width_error:
    st.error(md(width_error), icon=":material/warning:")
go = st.button("Re-plan live" if rec else "Plan", type="primary", key="plan_go", disabled=bool(width_error),
               help=f"plan these clips now with {live_label}" + (" (a second view beside the record)" if rec else ""))
if go or auto:
    t0 = time.perf_counter()
    with backend.guarded(link=link):
        planned, v_start, v_goal = api.plan_clips(planner, features, start_clip, goal_clip, T, R)
    st.session_state["plan_result"] = {"inputs": inputs, "result": planned, "truth": truth,
                                       "seconds": time.perf_counter() - t0, "obs": (v_start, v_goal)}
    if rec is not None:
        link.keep(live=True)

saved = st.session_state.get("plan_result")
live_shown = bool(saved) and saved["inputs"] == inputs and (rec is None or link.shown("live") == "1")
link.keep(plan=True if live_shown and rec is None and linkable else None)
link.publish()
with link_col:
    links.copy_link(link, "plan_link")
    playlists.plan_control(cfg, link, shown_video)
if rec is None and not live_shown:
    st.info("Choose the clips and press **Plan**.")
    link.stop()

# --- the result: the input, the plan beside its graph (one screen), brought into view when it is new ------------
episode_id = None if shown_video is None else catalog.episode_id(shown_video.task, shown_video.id,
                                                                    int(link.shown("ep") or 0), T)
scrolled = result.bring_into_view((rec.episode, rec.method, rec.seed) if rec else ("live", inputs, saved["seconds"]))
left, right = result.columns()
own_steps = ds.task_actions(task) if task in ds.tasks else None  # the plan graph draws this task's neighbours
with left:
    if rec is not None:
        result.show_record(ds, rec, video_path)
    else:
        result.show_live(ds, saved["result"], saved["truth"], live_label, condition, R,
                         head=(episode_id, video_path, start_clip[0], max(start_clip[0], goal_clip[1] - 0.01),
                               "an uploaded video"))
with right, backend.guarded(stop=False):
    if rec is not None:
        network.plan_graph_panel(planner.graph, rec.endpoints or (rec.plan[0], rec.plan[-1]), rec.named_paths(),
                                 rec.truth, key="plan", title=f"Recorded plan · {rec.label} (T={T})", own=own_steps)
    else:
        network.plan_graph_panel(planner.graph, saved["result"].path_ends[1], graph_paths(saved["result"], condition, R),
                                 saved["truth"], key="plan", title=f"Live plan · {live_label} (T={T})", own=own_steps)

if rec is not None and not live_shown:
    st.caption(f"**Re-plan live** runs {md(live_label)} on these clips now: a second view, below.")
    link.stop()

# --- the live planner's result in full: below the record when there is one ------------------------------------
live = saved["result"]
truth = saved["truth"]
if rec is not None:
    st.divider()
    result.bring_into_view(("live", inputs, saved["seconds"]), anchor=result.LIVE_ANCHOR, scroll=not scrolled)
    st.subheader(f"Live re-plan · {live_label}")
    live_left, live_right = result.columns()
    with live_left:
        result.show_live(ds, live, truth, live_label, condition, R)
    with live_right, backend.guarded(stop=False):
        network.plan_graph_panel(planner.graph, live.path_ends[1], graph_paths(live, condition, R), truth,
                                 key="plan_live", title=f"Live plan · {live_label} (T={T})", own=own_steps)
used = s3d_choices[encoder_ids[enc_label]][1] if s3d is not None else f"encoder {enc['encoder'] or 'unknown'}"
if not cfg.presentation and role is None:
    st.caption(f"Planned with {md(variant)}: the P²KG's top path (R={R} shown) between the steps the S3D text "
               f"tower grounds in the clips (no trained model; the `{TEXT_PLANNER}` row) on dataset "
               f"**{md(ds.name)}** with features from **{md(used)}** · {saved['seconds'] * 1000:.0f} ms in all")
elif not cfg.presentation:
    st.caption(f"Planned by {md_code(str(models_dir(root, T).relative_to(root.parent)))} ({md(variant)}; {plans.recommendation_text(condition, scorer_label(scorer), R)}"
               f"sampler {planner.sampler}{f', {planner.sampler_steps} steps' if planner.sampler == 'ddim' else ''}) "
               f"on dataset **{md(ds.name)}** with features from **{md(used)}** · "
               f"{saved['seconds'] * 1000:.0f} ms in all (model {live.timings['total']:.0f} ms)")
if llm_url.strip():
    st.subheader("LLM recommendation")
    with backend.guarded(stop=False), st.spinner("Asking the LLM…"):
        plans.show_llm_plan(ds, backend.llm_recommendation(llm_url, llm_model, llm_mapper, ds, *live.path_ends[1], T),
                            truth)
# why this plan: per-step scores, the plan before and after graph decoding (components/why.py)
why.show_why(ds, live, expanded=not cfg.presentation)
if role is not None:  # graph + text endpoints draws nothing: its plan is the graph's top path
    st.subheader("Sampled plans")
    k_col, go_col = st.columns([1, 3])
    K = k_col.number_input("K plans", 2, 200, 10, key="plan_K", help="plans drawn with different noise")
    if go_col.button(f"Draw {K} plans", key="plan_sample"):
        with backend.guarded(stop=False):
            st.session_state["plan_samples"] = {"inputs": (inputs, K), "table": api.sampled_plans(
                planner, *saved["obs"], int(K), R)}
    drawn = st.session_state.get("plan_samples")
    if drawn and drawn["inputs"] == (inputs, K):
        plans.show_samples(ds, drawn["table"], K, live, truth)
if not cfg.presentation:  # debug details stay out of talks
    plans.show_details(ds, live)
