"""Planning from clips: observation windows, the KEPP planner of a models folder, one
episode or a batch, sampled plans, and the LLM's recommendation beside them.

A clip's observation is the ``m`` seconds at its centre
(:func:`kepp_core.data.episodes.clip_window`); :func:`observation` refuses a clip shorter
than ``m`` seconds with a message for the person who chose it.

>>> import numpy as np
>>> observation(np.arange(10.0)[:, None], 2.0, 7.0, 3, "start")[:, 0].tolist()
[3.0, 4.0, 5.0]
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from kepp_core.data import Dataset, Video, load_features
from kepp_core.data.episodes import clip_window, windows
from kepp_core.paths import cache_folder
from kepp_core.errors import KeppError
from kepp_core.graph import method_names
from kepp_core.llm import ChatClient, LLMConfig, LLMRecommender
from kepp_core.llm.client import ENV_MODEL, ENV_URL

# Samplers the Plan page offers: the models' own (as trained and evaluated) or a fast DDIM.
SAMPLERS = {"the model's own": (None, None), "fast (DDIM, 5 steps)": ("ddim", 5)}
# How the LLM's generated steps are matched to dataset actions.
LLM_MAPPERS = {"MiniLM sentence embeddings": "minilm", "lexical (no model)": "lexical"}
METHOD_LABELS = {"p2kg": "P²KG (probabilistic)", "pkg": "frequency graph (PKG)"}


def set_cpu_threads(n: int | None = None) -> int:
    """Intra-op CPU threads: ``n``, else ``$KEPP_THREADS``, else half the cores (returns the number)."""
    from kepp_core.training.loop import set_cpu_threads as set_threads

    return set_threads(n)


def recommendation_methods() -> dict[str, str]:
    """The graph's path recommendation methods: name -> label.

    >>> recommendation_methods()["p2kg"]
    'P²KG (probabilistic)'
    """
    return {m: METHOD_LABELS.get(m, m) for m in method_names()}


def load_planner(root: str | Path, horizon: int, condition: str = "graph", trained_r: int = 1,
                 method: str | None = None, graph: str | None = None, sampler: str | None = None,
                 sampler_steps: int | None = None):
    """The KEPP planner of ``ROOT/T<horizon>`` (planning model for ``condition`` and ``trained_r``),
    recommending paths with ``method`` (default: the model's own)."""
    from kepp_core.planner import KEPPPlanner

    # One plan is a batch of one through a small network: extra intra-op threads only fight the
    # server's other work (on 2 busy cores, 2 threads made a plan 20x slower than 1).
    set_cpu_threads()
    planner = KEPPPlanner.from_models(root, horizon, R=trained_r, condition=condition, graph=graph,
                                      sampler=sampler, sampler_steps=sampler_steps)
    if method:
        planner.method = method
    return planner


def check_planner(planner, ds: Dataset, where: str) -> None:
    """KeppError unless the planner's models were trained on ``ds``'s vocabulary and features."""
    from kepp_core.models.checkpoint import check_compatible

    check_compatible(planner.plan_config, ds, planner.horizon, where=where)


def observation_settings(planner) -> tuple[int, str]:
    """The planner's observation window ``m`` (seconds) and observation setting."""
    return planner.plan_spec.m, planner.plan_spec.setting


def playable_videos(ds: Dataset, horizon: int) -> list[Video]:
    """Videos with a file, features and at least ``horizon`` annotated steps; test videos first."""
    out = [v for v in ds.videos if v.video_file is not None and v.feature_file is not None
           and v.has_segments and len(v.steps) >= horizon]
    return sorted(out, key=lambda v: (v.split != "test", v.task, v.id))


def find_matches(texts: Sequence[str], query: str, limit: int | None = None) -> tuple[list[int], int]:
    """Positions of the ``texts`` that hold every word of ``query`` (any case; an empty query
    matches all), the first ``limit`` of them, and how many match in all.

    >>> find_matches(["make tea · a1", "make coffee · a2", "make tea · b3"], "TEA", limit=1)
    ([0], 2)
    >>> find_matches(["make tea · a1", "make coffee · a2"], "make a2")
    ([1], 1)
    """
    words = query.lower().split()
    hits = [i for i, t in enumerate(texts) if all(w in t.lower() for w in words)] if words else range(len(texts))
    return list(hits[:limit] if limit is not None else hits), len(hits)


def find_videos(videos: Sequence[Video], task_names: dict[str, str], task: str | None = None, query: str = "",
                limit: int | None = 200) -> tuple[list[Video], int]:
    """The first ``limit`` of ``videos`` (in their order) of ``task`` (None: every task) whose id,
    task id or task name holds every word of ``query`` (:func:`find_matches`), and how many match.

    >>> vs = [Video("a1", "tea", []), Video("b2", "tea", []), Video("a3", "coffee", [])]
    >>> names = {"tea": "make tea", "coffee": "make coffee"}
    >>> [v.id for v in find_videos(vs, names, query="COFFEE")[0]], [v.id for v in find_videos(vs, names, "tea", "B2")[0]]
    (['a3'], ['b2'])
    >>> [v.id for v in find_videos(vs, names, "tea", "make", limit=1)[0]], find_videos(vs, names, "tea", "make")[1]
    (['a1'], 2)
    """
    pool = [v for v in videos if task is None or v.task == task]
    hits, total = find_matches([f"{v.id} {v.task} {task_names.get(v.task, '')}" for v in pool], query, limit)
    return [pool[i] for i in hits], total


def episode_clips(video: Video, first: int, horizon: int, setting: str, m: int
                  ) -> tuple[tuple[float, float], tuple[float, float]]:
    """The start and goal clips (seconds) of the episode of ``horizon`` steps from step ``first``."""
    sw, gw = windows(video, first, horizon, setting, m)
    return (float(sw[0]), float(sw[-1] + 1)), (float(gw[0]), float(gw[-1] + 1))


def default_clips(duration: float, m: int, start: tuple[float, float] | None = None,
                  goal: tuple[float, float] | None = None) -> tuple[tuple[float, float], tuple[float, float]]:
    """Start and goal clips inside a video of ``duration`` seconds (default: its first and last ``m`` s).

    >>> default_clips(10.0, 3)
    ((0.0, 3.0), (7.0, 10.0))
    """
    start = start or (0.0, min(duration, float(m)))
    goal = goal or (max(0.0, duration - m), duration)
    # annotations may run a fraction of a second past the decoded video: keep the clips inside it
    return (min(start[0], duration), min(start[1], duration)), (min(goal[0], duration), min(goal[1], duration))


def observation(feats: np.ndarray, start: float, end: float, m: int, which: str = "start") -> np.ndarray:
    """The ``[m, D]`` per-second features of the clip ``[start, end)`` seconds (its centre,
    :func:`~kepp_core.data.episodes.clip_window`). A clip shorter than ``m`` seconds raises a KeppError."""
    first, last = max(0, math.floor(start + 1e-6)), min(len(feats), math.ceil(end - 1e-6))
    if last - first < m:
        raise KeppError(f"the {which} clip covers {max(last - first, 0)} s of features ({start:.1f}–{end:.1f} s), "
                        f"shorter than the model's observation window of {m} s: widen it")
    return feats[list(clip_window(start, end, len(feats), m))]


def video_features(video: Video) -> np.ndarray:
    """A dataset video's per-second features ``[seconds, D]``."""
    return load_features(video.feature_file)


def plan_clips(planner, features: np.ndarray | Callable[[], np.ndarray], start: Sequence[float],
               goal: Sequence[float], horizon: int | None = None, R: int | None = None):
    """Plan one episode from a start clip and a goal clip (seconds) of a video's per-second
    ``features`` (or a function giving them): ``(PlanResult, v_start, v_goal)``."""
    if goal[0] < start[0]:
        raise KeppError(f"the goal clip ({goal[0]:.1f} s) starts before the start clip "
                        f"({start[0]:.1f} s): the goal must come after the start")
    feats = features() if callable(features) else features
    m = observation_settings(planner)[0]
    v_start = observation(feats, start[0], start[1], m, "start")
    v_goal = observation(feats, goal[0], goal[1], m, "goal")
    return planner.plan(v_start, v_goal, horizon, R), v_start, v_goal


def plan_batch(planner, obs_start, obs_goal, R: int | None = None, endpoints=None, seed: int | None = None):
    """Plans for ``N`` queries ``[N, M·D]`` (a :class:`~kepp_core.planner.BatchPlans`)."""
    return planner.plan_batch(obs_start, obs_goal, R, endpoints=endpoints, seed=seed)


def sampled_plans(planner, v_start, v_goal, k: int, R: int | None = None, seed: int = 0):
    """``k`` plans drawn from the planning model for one query: distinct plans, count, frequency."""
    import pandas as pd

    rows = [{"plan": list(p), "count": c, "frequency": c / k} for p, c in planner.sample(v_start, v_goal, k, R, seed)]
    return pd.DataFrame(rows)


def llm_defaults() -> dict[str, str]:
    """The LLM endpoint to start with: ``KEPP_LLM_URL`` / ``KEPP_LLM_MODEL``."""
    return {"url": os.environ.get(ENV_URL, ""), "model": os.environ.get(ENV_MODEL, "")}


def llm_recommender(url: str, model: str, mapper: str, actions: Sequence[str]):
    """An :class:`~kepp_core.llm.LLMRecommender` for an OpenAI-compatible endpoint; ``mapper`` is
    a name or a label of :data:`LLM_MAPPERS`. The key stays in ``KEPP_LLM_API_KEY``; replies are
    cached beside the demo world."""
    client = ChatClient(LLMConfig.from_env(base_url=url.strip(), model=model.strip(), timeout=30.0, retries=1),
                        cache_folder("llm-cache"))
    return LLMRecommender(client, list(actions), LLM_MAPPERS.get(mapper, mapper))
