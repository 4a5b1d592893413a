"""The Plan page's inputs, top to bottom: the title row, the models (or the zero-shot page without
them), one row of planning controls with the Plan button (on the first screen), the video encoder and
the LLM settings (sidebar; in presentation mode the page's folded *Settings*), then the video, its
episode and its clips, and the step timeline. Each function draws one part and returns what it chose;
a part the page cannot go on from raises :class:`Held` with the fact, in the words of
:mod:`components.plan.decision` (no model of the horizon, no planning model, a playlist item's missing video,
nothing uploaded, no video matching the search): the page hands it to the decision
(:attr:`~components.plan.decision.PlanState.held`), which says it, and stops. The widgets decide nothing.

The choices are only those that exist: horizons with a model (:func:`components.plan.decision.horizon_choices`),
the R a planning model was trained with (:func:`components.plan.decision.r_choices`), the LLM endpoint the
person running the app configured (never one a visitor types)."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

import streamlit as st

from components.ui import colours, links, pickers, plan_link
from components.records import backend, recorded
from components.plan import decision, uploads, zeroshot
from components.ui.charts import step_timeline, video_timeline
from components.ui.config import start_config
from components.plan.decision import SYMBOLS
from components.plan.result import clip_words
from components.ui.search import default_clips
from components.ui.text import dataset_caption, md, plan_text
from components.plan.uploads import store_example, store_upload
from kepp_core import api
from kepp_core.catalog import TEXT_PLANNER, models_dir, plan_model_id, scorer_label
from kepp_core.errors import KeppError

__all__ = ["DATASET_FEATURES", "SOURCES", "TEXT_VARIANT", "Clip", "Controls", "Held", "Setup", "controls", "dataset",
           "header", "llm_settings", "models", "plan_button", "step_timeline_of", "video", "window_steps"]

TEXT_VARIANT = "graph + text endpoints (S3D, no model)"  # the P²KG between the text tower's endpoints (model=graph-text)
DATASET_FEATURES = "the dataset's features"
SOURCES = {"dataset": "From the dataset", "upload": "Upload a video"}


def header() -> tuple[plan_link.PlanLink, object]:
    """The title row (the title, then Copy link and Playlist in the corner: the returned column) and the
    page's link, made before any exit (each one publishes the state first)."""
    title_col, corner = st.columns([5, 1], vertical_alignment="bottom")
    title_col.title("Plan from a video")
    return plan_link.PlanLink(), corner


def dataset(cfg, link):
    """The configured dataset and its features' encoder (and, outside presentation mode, what is loaded)."""
    with backend.guarded(link=link):
        ds = backend.dataset(cfg)
        enc = api.Workspace(cfg, ds).feature_encoder()
    if not cfg.presentation:
        st.caption(dataset_caption(cfg, ds))
    return ds, enc


class Held(Exception):
    """An input the page cannot go on from, as the decision's :class:`~components.plan.decision.Message`."""

    def __init__(self, message: decision.Message) -> None:
        super().__init__(message.text)
        self.message = message


@dataclass(frozen=True)
class Setup:
    """The models side: the models folder (``root``), its trained ``horizons``, why there are none
    (``no_models``) and the S3D encoders the person running the app allowed (``s3d_choices``)."""

    root: object
    horizons: list
    no_models: str | None
    s3d_choices: dict
    untrained: str | None = None  # the address names a record of a horizon no model is trained for: why

    @property
    def planless(self) -> str | None:
        """Why nothing plans the address's episode from video here (None: something does): no models, or none
        of the record's horizon, and no S3D encoder (graph + text endpoints plan any). The page shows the
        record the address names, else plans with the graph alone (:func:`components.plan.view.without_models`)."""
        return None if self.s3d_choices else self.no_models or self.untrained


def models(cfg, link) -> Setup:
    """The models to plan with (none: :attr:`Setup.no_models` says why, and :attr:`Setup.planless` where no S3D
    encoder plans with graph + text endpoints either; a record the address names at a horizon without a
    model: :attr:`Setup.untrained`)."""
    s3d_choices = cfg.grounding_encoders()  # the S3D encoders the person running the app allowed
    with backend.guarded(link=link):
        no_models = zeroshot.missing_models(cfg)
    root, horizons = None, []
    if not no_models:
        with backend.guarded(link=link):
            root, horizons = backend.models_root(cfg), backend.horizons(cfg)
    return Setup(root, horizons, no_models, s3d_choices, _untrained(link, horizons))


def _untrained(link, horizons) -> str | None:
    """Why the record the address names cannot be re-planned: its horizon has no trained model (None: it has,
    or no record is named). A new address's keys, else the ones the page published last (its reruns)."""
    def held(key: str) -> str | None:
        return link.from_url(key) if link.foreign else link.last(key)

    T = recorded.whole_key({"T": held("T")}, "T")
    if not horizons or not held("rec") or T is None or T in horizons:
        return None
    return f"no model is trained for T={T} (trained: {', '.join(map(str, horizons))})"


@dataclass(frozen=True)
class Controls:
    """What the planning controls chose: ``T``, the planning model (``variant``, its ``role``: None for
    graph + text endpoints), ``R`` (None: the model's own), the scorer, the sampler, the S3D encoder
    (``s3d`` spec and ``s3d_label``, None: the dataset's features), the typed steps, the LLM mapper (None:
    no LLM configured), the planner with its observation window (``m_obs``, ``setting``), why it cannot
    take the encoder's features (``width_error``) and the Plan button's place (``go``)."""

    T: int
    variant: str
    role: object
    R: int | None
    scorer: str
    sampler: str
    s3d: str | None
    s3d_label: str | None
    steps_text: str
    llm: tuple[str, str] | None  # the operator's LLM endpoint chosen and the step mapper
    planner: object
    m_obs: int
    setting: str
    width_error: str | None
    go: object
    choice: str | None = None  # the stored planning-model choice in words, where the page plans with its model

    @property
    def condition(self) -> str:
        """The planning model's condition (``graph`` for graph + text endpoints)."""
        return "graph" if self.role is None else self.role.condition


def controls(cfg, ds, setup: Setup, link) -> Controls:
    """The planning controls in one row (horizon, planning model, R, recommendation, sampler, the Plan
    button's place), the encoder and LLM settings, and the planner they make."""
    settings = st.expander("Settings", expanded=False) if cfg.presentation else st.container()
    row = settings.columns([1.3, 3.2, 1, 2, 2, 1.5], vertical_alignment="bottom")
    go = (st.columns([8, 1.5])[1] if cfg.presentation else row[5]).empty()  # in a talk: beside the folded settings
    T = _horizon(row[0], setup, link)
    s3d, s3d_label, steps_text = _encoder(cfg, setup, link, settings)
    variants = _variants(cfg, setup, T, s3d, link)
    with backend.guarded(link=link):
        chosen = backend.planning_model(cfg, T) if T in setup.horizons else None
    variant, role = _model(row[1], variants, link, chosen)
    R = _paths(row[2], role, link)
    scorer = _scorer(row[3], role, link)
    sampler = _sampler(row[4], link)
    llm = llm_settings(settings.container() if cfg.presentation else st.sidebar.expander("LLM recommendation"))
    with backend.guarded(link=link):
        planner = (backend.text_planner(cfg, s3d, ds, T) if role is None
                   else backend.planner(cfg, T, role, scorer, ds, sampler))
    m_obs, setting = planner.plan_spec.m, planner.plan_spec.setting
    width_error = None  # the models cannot take this encoder's features: said before anything is encoded
    if s3d is not None:
        try:
            planner.check_encoder(s3d)
        except KeppError as e:
            width_error = str(e)
    return Controls(T, variant, role, R, scorer, sampler, s3d, s3d_label, steps_text, llm, planner, m_obs, setting,
                    width_error, go, decision.choice_words(chosen, role))


def plan_button(ctl: Controls, found, live_label: str) -> bool:
    """The Plan button in the controls row (``Re-plan live`` where a record is shown: ``found``); whether it
    was pressed this run."""
    return ctl.go.button("Re-plan live" if found is not None else "Plan", type="primary", key="plan_go",
                         disabled=bool(ctl.width_error), width="stretch",
                         help=f"plan these clips now with {live_label}"
                              + (" (a second view of the result: the Live re-plan tab)" if found is not None else ""))


def _horizon(where, setup: Setup, link) -> int:
    choices = decision.horizon_choices(setup.horizons, bool(setup.s3d_choices))
    link.seed("plan_T", "T", choices)
    first = setup.horizons[0] if setup.horizons else choices[0]
    T = where.selectbox("Horizon T", choices, key="plan_T", **links.default_kwargs("plan_T", index=choices.index(first)),
                        help="the number of steps to plan: the horizons the models folder has a model for"
                             + (" (graph + text endpoints plan any)" if setup.s3d_choices else ""))
    link.keep(T=T)
    return T


def _encoder(cfg, setup: Setup, link, settings) -> tuple[str | None, str | None, str]:
    """The video encoder (the dataset's features or an allowed S3D network) and the steps typed for the
    step timeline; a link to graph + text endpoints takes the first S3D encoder."""
    encoder_ids = {} if setup.no_models else {DATASET_FEATURES: "dataset"}
    encoder_ids |= {label: eid for eid, (_, label) in setup.s3d_choices.items()}
    text_link = link.new("model") == TEXT_PLANNER  # a link to graph + text endpoints (e.g. a graph-text row's)
    if text_link and not setup.s3d_choices:
        st.info(f"This link plans with graph + text endpoints (`{TEXT_PLANNER}`), which needs an S3D encoder: none "
                "is allowed here (`kepp app --encoder s3d:PATH`), so a trained planning model plans instead.")
    if not setup.s3d_choices:
        return None, None, ""
    with (settings.container() if cfg.presentation else st.sidebar.expander("Video encoder", expanded=True)):
        if text_link and link.from_url("encoder") is None:  # such a link names no encoder: the first S3D one
            st.session_state["plan_encoder"] = next(label for label, eid in encoder_ids.items() if eid in setup.s3d_choices)
        link.seed("plan_encoder", "encoder", list(encoder_ids), {v: k for k, v in encoder_ids.items()}.__getitem__,
                  absent=None if setup.no_models or text_link else "dataset")
        label = st.selectbox("Encoder", list(encoder_ids), key="plan_encoder",
                             help="S3D HowTo100M: the official models' features; its text tower draws the step "
                                  "timeline and plans with graph + text endpoints (no model needed)")
        steps_text = st.text_area("Steps to ground", key="plan_steps", height=90,
                                  max_chars=decision.MAX_TYPED_STEPS * (decision.MAX_STEP_CHARS + 1),
                                  placeholder="one step name per line (empty: the dataset's steps)",
                                  help=f"the step timeline scores each second against these names (at most "
                                       f"{decision.MAX_TYPED_STEPS})")
    eid = encoder_ids[label]
    link.keep(encoder=None if eid == "dataset" else eid)
    spec, name = setup.s3d_choices.get(eid, (None, None))
    return spec, name, steps_text


def _variants(cfg, setup: Setup, T: int, s3d: str | None, link) -> dict:
    """The planning models of horizon ``T`` (label -> role; None: graph + text endpoints)."""
    if T not in setup.horizons and s3d is None:
        raise Held(decision.untrained_horizon(T, setup.horizons))
    with backend.guarded(link=link):
        variants = backend.workspace(cfg).plan_variants(T) if T in setup.horizons else {}
    if s3d is not None:
        variants[TEXT_VARIANT] = None  # None: no planning model
    if not variants:
        raise Held(decision.no_planning_model(str(models_dir(setup.root, T))))
    return variants


def _model(where, variants: dict, link, chosen) -> tuple[str, object]:
    """The planning model: the link's, else the models folder's (``chosen``: its stored choice, else KEPP R=1)."""
    model_ids = {label: TEXT_PLANNER if role is None else plan_model_id(role) for label, role in variants.items()}
    link.seed("plan_variant", "model", list(variants), lambda m: {v: k for k, v in model_ids.items()}[m])
    first = decision.default_model(list(variants.values()), chosen.role if chosen is not None else None)
    variant = where.selectbox("Planning model", list(variants), key="plan_variant",
                              **links.default_kwargs("plan_variant", index=first),
                              help="the models folder's planning models of this horizon (and graph + text endpoints "
                                   "where an S3D encoder is allowed)")
    link.keep(model=model_ids[variant])
    return variant, variants[variant]


def _paths(where, role, link) -> int | None:
    """R: a graph-conditioned model's own (the one it was trained with), 1-5 paths for graph + text
    endpoints, none for a model without the graph condition."""
    graph = role is None or role.condition == "graph"
    choices = decision.r_choices(role.R if role is not None and graph else None, graph)
    if not choices:
        where.selectbox("Paths R", ["—"], key="plan_R_none", disabled=True,
                        help="this planning model has no graph condition: no graph paths are recommended to it")
        link.keep(R=None)
        return None
    link.seed("plan_R", "R", choices)
    if st.session_state.get("plan_R") not in choices:
        st.session_state["plan_R"] = choices[0] if role is not None else min(2, choices[-1])
    R = where.selectbox("Paths R", choices, key="plan_R", disabled=len(choices) == 1, help=SYMBOLS["R"])
    link.keep(R=R)
    return R


def _scorer(where, role, link) -> str:
    scorers = api.scorer_names()
    link.seed("plan_method", "method", scorers)
    scorer = where.selectbox("Recommendation", scorers, format_func=scorer_label, key="plan_method",
                             help="how the graph's paths between â₁ and â_T are scored (an LLM's plan is shown "
                                  "beside them where the person running the app configured an LLM)",
                             disabled=role is None or role.condition != "graph")
    link.keep(method=scorer)
    return scorer


def _sampler(where, link) -> str:
    sampler_ids = {label: ("own" if spec[0] is None else f"{spec[0]}{spec[1]}")
                   for label, spec in backend.SAMPLER_CHOICES.items()}
    link.seed("plan_sampler", "sampler", list(sampler_ids), lambda x: {v: k for k, v in sampler_ids.items()}[x])
    sampler = where.selectbox("Sampler", list(backend.SAMPLER_CHOICES), key="plan_sampler",
                              help="the models' own sampler reproduces their recorded metrics; DDIM with 5 steps is faster")
    link.keep(sampler=sampler_ids[sampler])
    return sampler


def llm_settings(where) -> tuple[str, str] | None:
    """The LLM recommendation's settings: the endpoints and model the person running the app configured
    (``kepp app --llm-url``, ``KEPP_LLM_URL``, ``KEPP_LLM_MODEL`` where ``kepp app`` runs), shown by host
    only (a visitor never types where the server sends requests, nor sees credentials in an address; with
    several endpoints the visitor picks one of them), and how generated steps map to actions: ``(endpoint,
    mapper)``, or None when no LLM is configured (one line says so)."""
    urls, model = start_config().llm_urls, api.llm_defaults()["model"]
    with where:
        if not urls or not model:
            st.caption("LLM recommendation is off: the person running the app starts kepp app with --llm-url "
                       "(or KEPP_LLM_URL) and KEPP_LLM_MODEL to offer it.")
            return None
        host = lambda url: urlsplit(url).hostname or "the configured server"  # noqa: E731
        if len(urls) == 1:
            url = urls[0]
            st.caption(f"Endpoint: **{md(host(url))}** · model **{md(model)}** (set by the person running the app).")
        else:
            url = st.selectbox("Endpoint (set by the person running the app)", list(urls), format_func=host,
                               key="plan_llm_url", help=f"model {model}")
        mapper = st.selectbox("Map steps with", list(backend.LLM_MAPPERS), key="plan_llm_mapper",
                              help="how generated steps are matched to dataset actions")
        return url, mapper


@dataclass(frozen=True)
class Clip:
    """The video shown and its clips: the dataset's ``video`` (None for an upload), the upload scene's
    ``example``, the file (``path``), the episode (``ep``; its ``truth``), the episode's observation windows
    (``windows``: the clips its records were planned from), the chosen ``start`` and ``goal`` clips, the
    video's ``duration`` and the sliders' key part (``key``)."""

    video: object | None
    example: object | None
    path: str | None  # None: a video of features alone (no player)
    ep: int | None
    truth: tuple | None
    windows: tuple | None
    start: tuple
    goal: tuple
    duration: float
    key: str

    @property
    def shown(self):
        """The dataset video shown (the upload scene's too; None for a user's own upload)."""
        return self.video if self.video is not None else self.example

    @property
    def linkable(self) -> bool:
        """Whether a link can carry the video (a user's own upload cannot)."""
        return self.shown is not None


def video(cfg, ds, enc, ctl: Controls, link, playing) -> Clip:
    """The video (a dataset video with its episode, or an upload where one can be encoded for the models),
    then the clips beside it with their frames (a video of features alone: no player, its clips named by
    the steps they show), and the video's annotated steps as a timeline. A playlist item (``playing``: its
    name and item) whose video the dataset lacks says so and stops: nothing else is shown under its number."""
    refused = uploads.refused(cfg, ds, ctl.s3d_label, ctl.width_error)
    sources = list(SOURCES.values()) if refused is None else [SOURCES["dataset"]]
    link.seed("plan_source", "source", sources, SOURCES.__getitem__, absent="dataset")
    source = st.radio("Video", sources, horizontal=True, key="plan_source") if refused is None else SOURCES["dataset"]
    if refused is not None and not cfg.presentation:
        st.caption(refused.text)
    playable = backend.playable_videos(cfg, ds, ctl.T)
    if playing is not None:
        asked = link.new("video") if source == SOURCES["dataset"] else link.new("upload")
        said = decision.missing_video(asked, [v.id for v in playable], *playing, ctl.T)
        if said is not None:
            raise Held(said)
    if source == SOURCES["dataset"]:
        vid, ep, windows = _dataset_video(ds, ctl, link, playable)
        shown, example, key = ds.video(vid), None, f"{vid}_{ep}_{ctl.T}"
        path = None if shown.video_file is None else str(shown.video_file)  # None: features alone, no player
    else:
        example, path, ep, windows = _upload(ds, enc, ctl, link, playable)
        shown, key = None, f"upload_{path}_{ctl.T}_{link.shown('ep') or ''}"
    if path is None:
        duration = float(shown.duration or max(s.end for s in shown.steps))
    else:
        with backend.guarded(link=link):
            duration = float(backend.video_meta(path)["duration"])
    windows = default_clips(duration, ctl.m_obs, *(windows or (None, None)))
    start, goal = _clips(link, key, path, duration, windows, shown or example, ds)
    truth = tuple(shown.plan[ep:ep + ctl.T]) if shown is not None else None
    if shown is not None:
        clips = {"start": (start, colours.RIGHT), "goal": (goal, colours.WRONG)}
        st.markdown(video_timeline(shown, ds.actions, range(ep, ep + ctl.T), clips, duration), unsafe_allow_html=True)
    return Clip(shown, example, path, ep, truth, windows if shown or example else None, start, goal, duration, key)


def _dataset_video(ds, ctl: Controls, link, playable) -> tuple[str, int, tuple]:
    """A dataset video (the picker) and its episode (with previous / next), and the episode's windows."""
    link.keep(source=None, upload=None)  # the dataset's videos: the upload scene's key does not apply
    if not playable:  # said as what the videos lack: feature files, step times or steps (never "upload one")
        with backend.guarded(link=link):
            api.playable_videos(ds, ctl.T, required=True)
    asked = link.new("video")
    if asked is not None and asked not in {v.id for v in playable}:  # a linked video the page cannot plan: why
        try:
            api.playable_videos(ds, ctl.T, required=True, video=asked)
        except KeppError as e:
            link.ignore("video", asked, str(e))
    vid = pickers.video_picker(ds, playable, link)
    if vid is None:
        link.keep(video=None)  # no video matches the search: none is shown
        raise Held(decision.NO_MATCH)
    video = ds.video(vid)
    ep_key, options = f"plan_episode_{vid}_{ctl.T}", list(range(len(video.steps) - ctl.T + 1))
    link.seed(ep_key, "ep", options)
    ep_col, prev_col, next_col = st.columns([6, 1, 1], vertical_alignment="bottom")
    ep = ep_col.selectbox("Episode (annotated steps)", options, key=ep_key,
                          format_func=lambda i: f"steps {i + 1}–{i + ctl.T}: " + plan_text(ds.labels(video.plan[i:i + ctl.T])))
    links.episode_buttons(ep_key, options, (prev_col, next_col), prefix="plan_ep")
    link.keep(video=vid, ep=ep)
    return vid, ep, api.episode_clips(video, ep, ctl.T, ctl.setting, ctl.m_obs)


def _upload(ds, enc, ctl: Controls, link, playable) -> tuple[object, str, int | None, tuple | None]:
    """An uploaded video, or the upload scene's dataset video loaded as one (``?upload=<video id>``: a video
    with a file)."""
    link.keep(source="upload", video=None, vtask=None, vq=None)  # an upload: the picker's keys do not apply
    up = st.file_uploader("Upload a video (.mp4)", type=["mp4", "m4v", "mov", "webm", "mkv"], key="plan_upload")
    example_id = link.from_url("upload") or link.last("upload")
    with_files = {v.id for v in playable if v.video_file is not None}
    example = ds.video(example_id) if up is None and example_id in with_files else None
    if example is None:  # a user's own file (or none yet): no link can carry it, nor its episode, clips or plan
        link.keep(upload=None, ep=None, start=None, goal=None, plan=None)
    if up is None and example is None:
        raise Held(decision.NO_UPLOAD)
    with backend.guarded(link=link):
        path = (store_upload(up.getvalue(), up.name) if up is not None
                else store_example(example.video_file, f"{example.id}{example.video_file.suffix}"))
    ep = windows = None
    if example is not None:
        ep = _example_episode(link, example, ctl.T)
        st.caption(f"Example upload: the file of test video **{md(example.id)}** "
                   f"({md(ds.tasks[example.task].name if example.task in ds.tasks else example.task)}), loaded the way "
                   "an uploaded video is: encoded from its pixels, its annotations unused. Upload a file to replace it.")
        link.keep(upload=example.id, ep=ep)
        windows = api.episode_clips(example, ep, ctl.T, ctl.setting, ctl.m_obs)  # the recorded episode's clips
    st.caption(f"The upload is encoded with **{md(ctl.s3d_label)}**." if ctl.s3d is not None else
               f"The upload is encoded with the dataset's encoder **{md(enc['encoder'])}** (D={md(enc['dim'])}).")
    return example, path, ep, windows


def _example_episode(link, example, T: int) -> int:
    """The upload scene's episode: the address's (or the last) ``ep``, inside the video's episodes."""
    raw = link.from_url("ep") or link.last("ep") or "0"
    try:
        ep = plan_link.KEYS["ep"].parse(raw)
    except ValueError:
        ep = 0
    return min(max(ep, 0), max(len(example.steps) - T, 0))


def _clips(link, key: str, path: str | None, duration: float, windows: tuple, shown, ds) -> tuple[tuple, tuple]:
    """The video beside the start and goal clip sliders (defaults: the episode's observation windows) and
    each clip's first and last frame, named as the result names them; a video of features alone (no
    ``path``) has no player or frames: its clips are named by the annotated steps they show."""
    def clip_value(text: str) -> tuple[float, float]:
        a, b = (min(max(x, 0.0), duration) for x in plan_link.parse_clip(text))
        if not a < b:
            raise ValueError(text)
        return a, b

    same = (shown is not None and link.last("video" if link.shown("video") else "upload") == shown.id
            and link.last("T") == link.shown("T") and link.last("ep") == link.shown("ep"))
    if same or link.new("start") or link.new("goal"):
        link.seed(f"plan_start_{key}", "start", parse=clip_value)  # the clips of this episode, as linked
        link.seed(f"plan_goal_{key}", "goal", parse=clip_value)
    left, right = st.columns([2, 3])
    if path is not None:
        left.video(path)
    with right:
        start = st.slider("Start clip (s)", 0.0, duration, step=0.5, key=f"plan_start_{key}",
                          **links.default_kwargs(f"plan_start_{key}", value=windows[0]))
        goal = st.slider("Goal clip (s)", 0.0, duration, step=0.5, key=f"plan_goal_{key}",
                         **links.default_kwargs(f"plan_goal_{key}", value=windows[1]))
        link.keep(start=start if shown is not None else None, goal=goal if shown is not None else None)
        frames = [("start", start, start[0], "first"), ("start", start, max(start[0], start[1] - 0.01), "last"),
                  ("goal", goal, goal[0], "first"), ("goal", goal, max(goal[0], goal[1] - 0.01), "last")]
        for col, (name, clip, t, which) in zip(st.columns(4) if path is not None else (), frames):
            with backend.guarded(stop=False):
                col.image(backend.thumbnail_png(path, round(t, 2)), caption=f"{clip_words(name, clip)}: {which} frame")
    if path is None:
        with left.container(border=True, key="plan_no_player"):
            st.markdown(f"**No video file** for video **{md(shown.id)}**: the dataset has its per-second features and "
                        "annotated steps, not its mp4, so it is planned from the features and shown as its steps' "
                        "timeline (below).")
            for name, clip in (("start", start), ("goal", goal)):
                st.markdown(f"**{clip_words(name, clip)}** · {md(window_steps(shown, clip, ds.actions))}")
    return tuple(start), tuple(goal)


def window_steps(video, clip, actions) -> str:
    """The annotated steps a clip shows (those its seconds overlap), in words: what a clip of a video with no
    player is a clip of.

    >>> from types import SimpleNamespace as S
    >>> v = S(steps=[S(start=0.0, end=5.0, action=0), S(start=5.0, end=9.0, action=1)])
    >>> window_steps(v, (4.0, 7.0), ["boil water", "pour"]), window_steps(v, (9.5, 11.0), ["a", "b"])
    ('during boil water, pour', 'between annotated steps')
    """
    names = [actions[s.action] for s in video.steps if s.start < clip[1] and s.end > clip[0]]
    return "during " + ", ".join(names) if names else "between annotated steps"


def step_timeline_of(cfg, ds, ctl: Controls, clip: Clip, features) -> None:
    """With an S3D encoder: the step each second most resembles (the text tower, zero-shot) against the
    dataset's steps or the steps typed (at most :data:`components.plan.decision.MAX_TYPED_STEPS`)."""
    if ctl.s3d is None:
        return
    typed, said = decision.typed_steps(ctl.steps_text)
    if said is not None:
        st.warning(said.text, icon=":material/content_cut:")
    steps, whose = (typed, "typed steps") if typed else (list(ds.actions), "the dataset's steps")
    clips = {"start": (clip.start, colours.RIGHT), "goal": (clip.goal, colours.WRONG)}
    with backend.guarded(stop=False):
        timeline = backend.grounding(cfg, ctl.s3d, steps, ds, ctl.T, ctl.setting, ctl.m_obs).timeline(features())
        st.markdown(step_timeline(timeline, clips, clip.duration), unsafe_allow_html=True)
        st.caption(f"Step timeline: the step each second most resembles among {len(steps)} {whose}, scored "
                   "zero-shot by the S3D text tower; hover a second for its top 3.")
