"""Planning from clips: observation windows, the KEPP planner of a models folder, one
episode, sampled plans, and the LLM's recommendation beside them.

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

from kepp_core.catalog import DEFAULT_M, DEFAULT_SETTING
from kepp_core.data import Dataset, Video, load_features
from kepp_core.data.episodes import clip_window, windows
from kepp_core.paths import cache_folder
from kepp_core.errors import KeppError
from kepp_core.llm import ChatClient, LLMConfig, LLMRecommender
from kepp_core.llm.client import ENV_MODEL, ENV_URL, allowed_endpoint

__all__ = [
    "episode_clips", "llm_defaults", "llm_recommender", "load_planner", "plan_clips", "playable_videos",
    "sampled_plans", "text_planner", "video_features",
]



def load_planner(root: str | Path, horizon: int, role=None, *, scorer: str | None = None, graph: str | None = None,
                 sampler: str | None = None, sampler_steps: int | None = None,
                 dataset: Dataset | Callable[[], Dataset] | None = None, decode: bool = True, save_decoding: bool = False,
                 device: str | None = None):
    """The KEPP planner of ``ROOT/T<horizon>`` with the planning model ``role`` (a
    :class:`~kepp_core.catalog.ModelRole`; default: the models folder's planning model,
    :func:`~kepp_core.evaluation.planning_model.stored_planning_model`: the one chosen on validation
    episodes where a choice is stored beside the models, else KEPP R=1),
    ranking graph paths with ``scorer`` (default: the model's own), its networks on ``device`` (default: the
    command's, else the GPU where there is one: :func:`kepp_core.devices.chosen`).

    ``decode``: the planner decodes its plans with the graph, as the decoding choice module decides for
    this planning model (:func:`kepp_core.evaluation.methods.choice.planner_decoding`: its ``+dec``
    row's choice, or its ``+jdec`` row's with the endpoint model where that did better on validation
    videos), read from the models folder's ``decoding.json`` or KEPP's cache home; where neither holds
    one it is made now on ``dataset`` (the dataset the models were trained on, or a function giving it;
    without one the planner keeps the argmax plan) and kept in the cache home, or in the models folder
    with ``save_decoding``."""
    from kepp_core.catalog import models_dir
    from kepp_core.evaluation.methods.choice import planner_decoding
    from kepp_core.evaluation.planning_model import stored_planning_model
    from kepp_core.planner import KEPPPlanner
    from kepp_core.training.loop import set_cpu_threads

    # One plan is a batch of one through a small network: extra intra-op threads only fight the
    # server's other work (on 2 busy cores, 2 threads made a plan 20x slower than 1).
    set_cpu_threads()
    role = role or stored_planning_model(models_dir(root, horizon)).role
    planner = KEPPPlanner.from_models(root, horizon, role=role, graph=graph, sampler=sampler,
                                      sampler_steps=sampler_steps, device=device)
    if scorer:
        planner.scorer = scorer
    if decode:
        spec = planner.plan_spec
        given = dataset if callable(dataset) and not isinstance(dataset, Dataset) else lambda: dataset
        planner.use_decoding(planner_decoding(models_dir(root, horizon), role, given, spec.setting, spec.m,
                                              save_decoding))
    return planner


def text_planner(encoder: str, graph, dataset: Dataset | None = None, horizon: int = 3, m: int = DEFAULT_M,
                 setting: str = DEFAULT_SETTING, *, device: str | None = None):
    """Graph + text endpoints with no trained model (:class:`~kepp_core.planner.TextGraphPlanner`):
    the graph's step names grounded by the S3D text tower of ``encoder`` (an ``s3d:PATH`` spec; its
    temperature fitted on ``dataset``'s training episodes of ``horizon`` steps where its features
    are that network's, :func:`~kepp_core.api.media.text_grounding`), observations of ``m`` seconds; the
    network on ``device`` where the spec names none."""
    from kepp_core.api.media import text_grounding
    from kepp_core.planner import TextGraphPlanner
    from kepp_core.video.encoders import encoder_name

    grounding = text_grounding(encoder, list(graph.actions), dataset, horizon, setting, m, device=device)
    return TextGraphPlanner(graph, grounding, m, setting, encoder_name(encoder))


def playable_videos(ds: Dataset, horizon: int, required: bool = False, video: str | None = None) -> list[Video]:
    """The videos the Plan page can open at ``horizon``: per-second features, step times and at least
    ``horizon`` annotated steps; test videos first. A video file is not needed: a video of features
    alone (the released CrossTask, COIN and NIV features come without their mp4 files) is planned from
    its features and shown as its steps' timeline (``video_file`` None: no player).

    ``video``: that one video of the dataset (a list of it, or none). ``required``: none is a KeppError
    that names what is missing: what the dataset's videos lack (feature files, step times, steps), in
    that order, with how many lack it, or what the one ``video`` lacks.

    >>> from kepp_core.data import Step
    >>> v = Video("v1", "t", [Step(0, 0.0, 2.0), Step(1, 2.0, 4.0)], feature_file=Path("v1.npy"))
    >>> ds = Dataset("toy", ["a", "b"], {}, [v, Video("v2", "t", [Step(0), Step(1)])])
    >>> [x.id for x in playable_videos(ds, 2)], playable_videos(ds, 3), playable_videos(ds, 2, video="v2")
    (['v1'], [], [])
    >>> playable_videos(ds, 3, required=True)
    Traceback (most recent call last):
    ...
    kepp_core.errors.KeppError: no video of dataset toy can be planned at T=3: the 1 video with features and step times has fewer than 3 annotated steps (at most 2)
    >>> playable_videos(ds, 2, required=True, video="v2")
    Traceback (most recent call last):
    ...
    kepp_core.errors.KeppError: video v2 cannot be planned at T=2: it has no per-second feature file
    """
    if video is not None:
        v = ds.video(video)
        lacks = _video_lacks(v, horizon)
        if lacks is not None and required:
            raise KeppError(f"video {video} cannot be planned at T={horizon}: it {lacks}")
        return [v] if lacks is None else []
    out = [v for v in ds.videos if _video_lacks(v, horizon) is None]
    if not out and required:
        raise KeppError(f"no video of dataset {ds.name} can be planned at T={horizon}: {_lacking(ds, horizon)}")
    return sorted(out, key=lambda v: (v.split != "test", v.task, v.id))


def _video_lacks(v: Video, horizon: int) -> str | None:
    """What a video lacks to be planned at ``horizon`` (None: nothing), in words after "it"."""
    if v.feature_file is None:
        return "has no per-second feature file"
    if not v.has_segments:
        return "has no step times (its annotations give the steps' order only)"
    if len(v.steps) < horizon:
        return f"has {len(v.steps)} annotated steps, fewer than {horizon}"
    return None


def _lacking(ds: Dataset, horizon: int) -> str:
    """What the dataset's videos lack for :func:`playable_videos`, in words (the first want that leaves none)."""
    featured = [v for v in ds.videos if v.feature_file is not None]
    if not featured:
        where = ds.meta.get("features")
        return (f"none of its {len(ds.videos)} videos has a per-second feature file" + (f" (under {where})" if where else "")
                + ": the Plan page plans from features (kepp features extract makes them from the videos, "
                "or --features names the folder of released ones)")
    timed = [v for v in featured if v.has_segments]
    if not timed:
        return (f"none of the {len(featured)} videos with features has step times (start and end of each step): "
                "its annotations give the steps' order only")
    most = max(len(v.steps) for v in timed)
    return (f"the {len(timed)} video{'s' if len(timed) != 1 else ''} with features and step times "
            f"{'have' if len(timed) != 1 else 'has'} fewer than {horizon} annotated steps (at most {most})")


def episode_clips(video: Video, first: int, horizon: int, setting: str, m: int
                  ) -> tuple[tuple[float, float], tuple[float, float]]:
    """The start and goal clips (seconds) of the episode of ``horizon`` steps from step ``first``."""
    sw, gw = windows(video, first, horizon, setting, m)
    return (float(sw[0]), float(sw[-1] + 1)), (float(gw[0]), float(gw[-1] + 1))


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
    m = planner.plan_spec.m
    v_start = observation(feats, start[0], start[1], m, "start")
    v_goal = observation(feats, goal[0], goal[1], m, "goal")
    return planner.plan(v_start, v_goal, horizon, R), v_start, v_goal


def sampled_plans(planner, v_start, v_goal, k: int, R: int | None = None, seed: int = 0):
    """``k`` plans drawn from the planning model for one query: distinct plans, count, frequency."""
    import pandas as pd

    rows = [{"plan": list(p), "count": c, "frequency": c / k} for p, c in planner.sample(v_start, v_goal, k, R, seed)]
    return pd.DataFrame(rows)


def llm_defaults() -> dict[str, str]:
    """The LLM endpoint to start with: ``KEPP_LLM_URL`` / ``KEPP_LLM_MODEL``."""
    return {"url": os.environ.get(ENV_URL, ""), "model": os.environ.get(ENV_MODEL, "")}


def llm_recommender(url: str, model: str, mapper: str, actions: Sequence[str], allowed: Sequence[str]):
    """An :class:`~kepp_core.llm.LLMRecommender` for an OpenAI-compatible endpoint; ``mapper``
    names how its steps are matched to ``actions`` (``minilm`` or ``lexical``). ``url`` must be one
    of the ``allowed`` endpoints (the operator's: ``AppConfig.llm_urls``), checked before any
    connection: a visitor never chooses where the server sends a request, and the operator's key
    (``KEPP_LLM_API_KEY``) goes only to the operator's endpoints. Replies are cached beside the demo world."""
    endpoint = allowed_endpoint(url, allowed)
    client = ChatClient(LLMConfig.from_env(base_url=endpoint, model=model.strip(), timeout=30.0, retries=1),
                        cache_folder("llm-cache"))
    return LLMRecommender(client, list(actions), mapper)
