"""Zero-shot planning with the graph alone, for the Plan page of a dataset without models
(an annotation-only dataset such as COIN's JSON): endpoints from a test episode or chosen
by hand, the graph's top-R plans and the plan graph around them."""

from __future__ import annotations

import streamlit as st

from components.ui import links, pickers
from components.graph import network
from components.records import backend
from components.ui.charts import step_cards
from components.ui.colours import PATH_TINT, TRUTH_TINT
from components.ui.text import md
from components.ui.search import find_matches
from kepp_core import api
from kepp_core.catalog import episode_id, scorer_label
from kepp_core.errors import KeppError

ALL_TASKS = "(all tasks)"


def plan_episodes(ds, horizon: int, task: str | None = None, split: str = "test", limit: int | None = 400
                  ) -> list[tuple[str, tuple[int, ...]]]:
    """Episodes of ``horizon`` annotated steps as ``(id, actions)`` (:func:`kepp_core.catalog.episode_id`),
    of one ``task`` or all, from the ``split`` when it has any (else every video), at most ``limit``
    (None: all)."""
    videos = [v for v in ds.videos if task is None or v.task == task]
    videos = [v for v in videos if v.split == split] or videos
    out = []
    for v in sorted(videos, key=lambda v: (v.task, v.id)):
        for i in range(len(v.plan) - horizon + 1):
            out.append((episode_id(v.task, v.id, i, horizon), tuple(int(a) for a in v.plan[i:i + horizon])))
            if limit is not None and len(out) >= limit:
                return out
    return out


def named_plans(found) -> list[tuple[str, tuple[int, ...], float]]:
    """The graph's distinct plans of a :class:`~kepp_core.graph.Recommendation` as
    ``(name, plan, score)`` (``graph plan 1``, ...): the fallback's first path when there is none."""
    k = max(found.found, 1)
    return [(f"graph plan {i + 1}", p, float(s)) for i, (p, s) in enumerate(zip(found.paths[:k], found.scores[:k]))]


def missing_models(cfg) -> str | None:
    """Why the Plan page has no models to plan with (``None`` when it has some). A checkpoints
    folder that was set but cannot be used stays an error (a KeppError)."""
    try:
        root = backend.models_root(cfg)
    except KeppError as e:
        if cfg.checkpoints:
            raise
        return str(e)
    if not backend.horizons(cfg):
        return f"no trained models in {root} (train them with 'kepp train')"
    return None


@st.cache_resource(show_spinner=False, max_entries=32)
def _all_episodes(key: tuple, horizon: int, task: str | None, _ds) -> list[tuple[str, tuple[int, ...]]]:
    return plan_episodes(_ds, horizon, task, limit=None)


def _episodes(cfg, ds, horizon: int, task: str | None) -> list[tuple[str, tuple[int, ...]]]:
    """Every test episode of ``task`` (None: all tasks) at ``horizon``, listed once per dataset (read-only)."""
    return _all_episodes((cfg.dataset_key(), id(ds)), horizon, task, ds)


def _endpoints(cfg, ds, T: int, stop) -> tuple[int, int, tuple[int, ...] | None, str]:
    """Start and goal steps, the ground truth (for an episode) and a description, from the page's controls."""
    tasks = sorted(ds.tasks)
    names = {t: ds.tasks[t].name for t in tasks}
    source = st.radio("Endpoints from", ["a test episode", "steps I choose"], horizontal=True, key="zs_source")
    c1, c2, c3 = st.columns([2, 2, 2])
    task = c1.selectbox("Task", [ALL_TASKS, *tasks], index=1 if tasks else 0, key="zs_task",
                        format_func=lambda t: names.get(t, t))
    task = None if task == ALL_TASKS else task
    if source == "a test episode":
        episodes = _episodes(cfg, ds, T, task)
        if not episodes:
            st.warning(f"No annotated video of this task has {T} steps: choose another task or a shorter horizon.")
            stop()
        query = c3.text_input("Search", key="zs_search", placeholder="video id or task name",
                              help="every word must occur (any case)")
        hits, total = find_matches([f"{e} {names.get(e.split('/', 1)[0], '')}" for e, _ in episodes], query,
                                       pickers.LIMIT)
        if not hits:
            st.warning(f"No episode matches {md(repr(query.strip()))}: change the search or the task.")
            stop()
        shown = [episodes[i] for i in hits]
        options = dict(shown)
        first = next((k for k, (_, p) in enumerate(shown) if p[0] != p[-1]), 0)  # endpoints that differ
        key = f"zs_episode_{task}_{T}"
        if key in st.session_state and st.session_state[key] not in options:  # the search moved on
            st.session_state[key] = shown[first][0]
        ep = c2.selectbox("Episode", list(options), key=key,
                          format_func=lambda e: f"{e} · " + " → ".join(ds.labels(options[e])),
                          **links.default_kwargs(key, index=first))
        c2.caption(pickers.shown_caption(len(shown), total, "episodes" if total != 1 else "episode"))
        truth = options[ep]
        return truth[0], truth[-1], truth, f"episode {ep}"
    steps = list(ds.task_actions(task)) if task else list(range(ds.num_actions))
    start = c2.selectbox("First step", steps, key=f"zs_start_{task}", format_func=lambda a: ds.actions[a])
    goal = c3.selectbox("Last step", steps, index=len(steps) - 1, key=f"zs_goal_{task}",
                        format_func=lambda a: ds.actions[a])
    return int(start), int(goal), None, "chosen steps"


def page(cfg, ds, reason: str, link=None) -> None:
    """The Plan page without models: the graph's top-R plans between two steps, and the plan graph
    (``link``: the page's state, published before the page stops at a message)."""
    st.info(f"No models to plan from video ({md(reason)}). Planning with the **graph alone** (zero-shot): "
            "pick a test episode or a first and last step, and see the graph's top-R plans between them.")
    with backend.guarded(link=link):
        graph = backend.graph(cfg)
    c1, c2, c3 = st.columns([1, 1, 2])
    T = c1.selectbox("Horizon T", list(range(2, 9)), index=1, key="zs_T", help="number of steps to plan")
    R = c2.slider("Plans R", 1, 5, 3, key="zs_R", help="how many of the graph's best plans to show")
    scorers = api.scorer_names()
    scorer = c3.selectbox("Recommendation", scorers, format_func=scorer_label, key="zs_method")
    start, goal, truth, where = _endpoints(cfg, ds, T, link.stop if link is not None else st.stop)
    with backend.guarded():
        found = api.retrieve(graph, start, goal, T, R, scorer)
    named = named_plans(found)
    st.subheader(f"The graph's top-{R} plans")
    st.caption(f"From **{md(ds.actions[start])}** to **{md(ds.actions[goal])}** in {T} steps ({where}), "
               f"scored by {md(scorer_label(scorer))} on the graph of {graph.num_actions} steps and {graph.num_edges} "
               "transitions built from the training plans.")
    if found.fallback:
        st.warning("The graph has no path of this length between these steps: shown is KEPP's fallback "
                   "(the two endpoints repeated).")
    elif found.found < R:
        st.caption(f"The graph has only {found.found} distinct path{'s' if found.found > 1 else ''} of this length.")
    for name, path, score in named:
        correct = None if truth is None else [a == b for a, b in zip(path, truth)]
        step_cards(ds.labels(path), correct, colour=PATH_TINT, ids=path,
                   title=f"{name} · probability {score:.3g}" if not found.fallback else f"{name} · fallback")
    if truth is not None:
        hit = found.paths[0] == tuple(truth)
        st.markdown(f"**Ground truth** · the top plan is {'right' if hit else 'wrong'}")
        step_cards(ds.labels(truth), colour=TRUTH_TINT, ids=truth)
    network.plan_graph_panel(graph, (start, goal), [(n, p) for n, p, _ in named], truth, key="zs",
                             title=f"P²KG: the graph's plans from {ds.actions[start]} to {ds.actions[goal]} (T={T})")
