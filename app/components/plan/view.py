"""The Plan page's decision drawn (:func:`show`): its messages, a record and the live re-plan as two tabs of
one result (the open one drawn: its input, verdict, endpoints, plan and paths on the left, its plan graph on the
right), or the live plan alone; then, for a live plan, the LLM's recommendation, why this plan, sampled plans
and the details. And the page where nothing plans from video (:func:`without_models`)."""

from __future__ import annotations

import streamlit as st

from components.ui import colours
from components.graph import network
from components.records import backend, recorded, slides, views
from components.plan import plans, result, why, zeroshot
from components.plan.state import TABS, VIEWS, asked, records_of
from components.ui.charts import video_timeline
from components.ui.config import presenting
from components.plan.decision import LIVE, RECORDED, Decision, Message, Models, PlanState, Records, decide
from components.plan.decision import no_plan as no_plan_of
from components.graph.plangraph import graph_paths
from components.ui.text import md, md_code, plan_text
from kepp_core import api
from kepp_core.catalog import DEFAULT_M, DEFAULT_SETTING, TEXT_PLANNER, models_dir, scorer_label
from kepp_core.errors import KeppError

__all__ = ["messages", "more_of_live", "show", "stop_held", "without_models"]


def stop_held(held: Message, link) -> None:
    """The page where an input is held (:attr:`components.plan.decision.PlanState.held`): the decision says
    it, then the page stops (its state published first)."""
    messages(decide(PlanState(held=held), Models(live_label=""), Records()))
    link.stop()


def messages(decision: Decision) -> None:
    """The decision's messages, in order."""
    icons = {"info": ":material/info:", "warning": ":material/warning:", "error": ":material/error:"}
    for m in decision.messages:
        if m.level == "caption":
            st.caption(m.text)
        else:
            getattr(st, m.level)(m.text, icon=icons[m.level] if m.icon is None else m.icon or None)


def _tabs(decision: Decision) -> str:
    """The record's and the live re-plan's tabs (only the open one is drawn); the open view."""
    if st.session_state.get(TABS) != VIEWS[decision.tab]:  # the decision's tab (a press, a link); never set again
        st.session_state[TABS] = VIEWS[decision.tab]
    tabs = st.tabs(list(VIEWS.values()), key=TABS, on_change="rerun")
    return next(view for view, tab in zip(VIEWS, tabs) if tab.open)


def show(cfg, decision: Decision, ds, ctl, clip, saved: dict | None, live: tuple[str, str | None], episode_id,
         root, versus: recorded.Record | None = None) -> None:
    """The result as the decision says: the view open (a record's tabs, or the live plan alone) with its
    plan graph beside it, brought into view when it arrived; below a live plan, more about it. ``versus``:
    method B's record of an A/B slide (:func:`versus_of`), drawn beside the record's in its tab."""
    rec = decision.record
    key = ((rec.episode, rec.method, rec.seed, versus and versus.method) if rec is not None
           else ("live", saved and saved["inputs"], saved and saved["seconds"]))
    result.bring_into_view(key, scroll=decision.scroll)
    left, right = result.columns(pair=versus is not None)
    live_result = saved["result"] if saved else None
    no_plan = no_plan_of(live_result) if live_result is not None else None
    task = getattr(clip.shown, "task", None)
    own = ds.task_actions(task) if task in ds.tasks else None  # the plan graph draws this task's neighbours
    with left:
        view = _tabs(decision) if rec is not None else LIVE
        drawn = [r.method for r in (rec, versus) if r is not None] if view == RECORDED else []
        result.shown_marker(rec.episode if rec is not None else episode_id, drawn)
        if view == RECORDED and versus is not None:
            result.show_pair(views.record_view(rec, ds), views.record_view(versus, ds), clip.path, clip.windows)
        elif view == RECORDED:
            result.show_record(views.record_view(rec, ds), clip.path, clip.windows)
        elif live_result is not None:
            described = views.live_view(ds, live_result, saved["truth"], label=live[0], episode=episode_id,
                                        what="an uploaded video", no_plan=no_plan is not None,
                                        graph_paths=ctl.condition == "graph" and no_plan is None)
            result.show_live(described, live_result, ctl.condition, note=live[1], no_plan=no_plan,
                             head=(clip.path, (clip.start, clip.goal)))
        else:
            st.caption(f"Nothing is planned live here: {md(ctl.width_error or 'press Re-plan live')}.")
    with right, backend.guarded(stop=False):
        if view == RECORDED:  # the graph the record's slide draws (an A/B slide's: both plans), in the deck too
            drawn = slides.graph_request([r for r in (rec, versus) if r is not None], ds)
            network.plan_graph_panel(ctl.planner.graph, drawn["endpoints"], drawn["named_paths"], drawn["truth"],
                                     key="plan", title=drawn["title"], own=drawn["own"],
                                     # the narrower column of an A/B slide (result.columns)
                                     **({"width": (450, 480)} if versus is not None else {}))
        elif live_result is not None:
            named = [] if no_plan is not None else graph_paths(live_result, ctl.condition, live_result.R)
            network.plan_graph_panel(ctl.planner.graph, live_result.path_ends[1], named, saved["truth"], key="plan",
                                     title=f"Live plan · {live[0]} (T={ctl.T})", own=own)
    if view == LIVE and live_result is not None and no_plan is None:
        more_of_live(cfg, ds, ctl, saved, root, described)


def more_of_live(cfg, ds, ctl, saved: dict, setup_root, described: views.PlanView) -> None:
    """Below a live plan (``described``: what it shows): how it was planned, the LLM's recommendation, why this
    plan, sampled plans, details."""
    live, truth = saved["result"], saved["truth"]
    if not cfg.presentation:
        st.caption(_planned_by(cfg, ds, ctl, saved, setup_root))
    if ctl.llm is not None:
        st.subheader("LLM recommendation")
        with backend.guarded(stop=False), st.spinner("Asking the LLM…"):
            llm = backend.llm_recommendation(*ctl.llm, ds, *live.path_ends[1], ctl.T)
            plans.show_llm_plan(llm, ds.labels(llm.actions), truth)
    why.show_why(described, live, expanded=not cfg.presentation)
    if ctl.role is not None:  # graph + text endpoints draws nothing: its plan is the graph's top path
        _samples(ds, ctl, saved)
    if not cfg.presentation:  # debug details stay out of talks
        plans.show_details(live, ds.actions)


def _planned_by(cfg, ds, ctl, saved: dict, root) -> str:
    """The caption on how the live plan was made: the models, recommendation, sampler, dataset, features, time."""
    used = ctl.s3d_label if ctl.s3d is not None else f"encoder {api.Workspace(cfg, ds).feature_encoder()['encoder'] or 'unknown'}"
    ms = saved["seconds"] * 1000
    if ctl.role is None:
        return (f"Planned with {md(ctl.variant)}: the P²KG's top path (R={saved['result'].R} shown) between the steps "
                f"the S3D text tower grounds in the clips (no trained model; the `{TEXT_PLANNER}` row) on dataset "
                f"**{md(ds.name)}** with features from **{md(used)}** · {ms:.0f} ms in all")
    p = ctl.planner
    return (f"Planned by {md_code(str(models_dir(root, ctl.T).relative_to(root.parent)))} ({md(ctl.variant)}; "
            f"{plans.recommendation_text(ctl.condition, scorer_label(ctl.scorer), saved['result'].R)}"
            f"sampler {p.sampler}{f', {p.sampler_steps} steps' if p.sampler == 'ddim' else ''}) "
            f"on dataset **{md(ds.name)}** with features from **{md(used)}** · "
            f"{ms:.0f} ms in all (model {saved['result'].timings['total']:.0f} ms)")


def _samples(ds, ctl, saved: dict) -> None:
    """K plans drawn from the planning model for the same query, with their frequencies."""
    st.subheader("Sampled plans")
    k_col, go_col = st.columns([1, 3])
    K = k_col.number_input("K plans", 2, 200, 10, key="plan_K", help="plans drawn with different noise")
    if go_col.button(f"Draw {K} plans", key="plan_sample"):
        with backend.guarded(stop=False):
            st.session_state["plan_samples"] = {"inputs": (saved["inputs"], K), "table": api.sampled_plans(
                ctl.planner, *saved["obs"], int(K), saved["result"].R)}
    drawn = st.session_state.get("plan_samples")
    if drawn and drawn["inputs"] == (saved["inputs"], K):
        table = drawn["table"].assign(steps=lambda d: [plan_text(ds.labels(p)) for p in d["plan"]])
        plans.show_samples(table, K, saved["result"], saved["truth"])


def without_models(cfg, ds, reason: str, link, playing: tuple[str, int] | None) -> None:
    """The Plan page where nothing plans from video (no models, or none of the record's horizon: ``reason``;
    no S3D encoder): the record the address names (Open in Plan, a scene, a playlist item, the episode map)
    shown as recorded, on its episode, with its plan graph; else the graph alone (:func:`components.plan.zeroshot.page`).
    ``playing``: the playlist place played (:func:`components.talk.playlists.playing_bar`, whose item's query the
    link already holds). The decision is :func:`components.plan.decision.decide`'s; the keys it cannot honour
    are said. Stops the page."""
    records = None
    with backend.guarded(stop=False):
        records = backend.predictions(cfg)
    query = {k: asked(link, k) for k in ("T", "video", "ep", "seed")}
    ep = recorded.whole_key(query, "ep") or 0
    try:
        video = ds.video(query["video"]) if query["video"] is not None else None
    except KeppError:
        video = None
    query["rec"] = rec = asked(link, "rec") if video is not None else None
    found = recorded.shown(query | {"ep": str(ep)}, records, video.task if video is not None else None).record
    state = PlanState(rec=rec, seed=recorded.whole_key(query, "seed"), live=asked(link, "live") == "1",
                      plan=link.from_url("plan") == "1", arrived=link.arrived, news=any(link.new(k) for k in link.keys),
                      from_dataset=video is not None, playlist=playing[0] if playing else None,
                      item=playing[1] if playing else None, presenting=presenting(),
                      asked=tuple(k for k in link.url if link.foreign))
    decision = decide(state, Models(live_label="", missing=reason), records_of(found, rec))
    for key, because in decision.ignored:
        link.ignore(key, link.from_url(key), because)
    link.keep(**decision.keep)
    if decision.zero_shot:
        messages(decision)
        zeroshot.page(cfg, ds, reason, link)
        link.stop()
    rec = decision.record
    link.keep(T=rec.horizon, video=video.id, ep=ep)
    link.publish()
    messages(decision)
    clips = None
    with backend.guarded(stop=False):  # the episode's observation windows (a video's with steps)
        clips = api.episode_clips(video, ep, rec.horizon, DEFAULT_SETTING, DEFAULT_M)
    duration = float(video.duration or max(s.end for s in video.steps))
    if clips is not None:
        shaded = {"start": (clips[0], colours.RIGHT), "goal": (clips[1], colours.WRONG)}
        st.markdown(video_timeline(video, ds.actions, range(ep, ep + rec.horizon), shaded, duration),
                    unsafe_allow_html=True)
    result.bring_into_view((rec.episode, rec.method, rec.seed), scroll=decision.scroll)
    left, right = result.columns()
    with left:
        result.show_record(views.record_view(rec, ds), None if video.video_file is None else str(video.video_file), clips)
    with right, backend.guarded(stop=False):
        own = ds.task_actions(video.task) if video.task in ds.tasks else None
        network.plan_graph_panel(backend.graph(cfg), rec.endpoints or (rec.plan[0], rec.plan[-1]), rec.named_paths(),
                                 rec.truth, key="plan", title=f"Recorded plan · {rec.label} (T={rec.horizon})", own=own)
    link.stop()
