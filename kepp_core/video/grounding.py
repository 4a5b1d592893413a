"""Zero-shot step grounding with the S3D text tower: how much each second of a video resembles
each step name, a per-second step timeline, and distributions of a clip's first or last step.

The S3D HowTo100M network maps video and text into one space (:mod:`kepp_core.video.s3d`): the
dot product of a second's ``video_embedding`` and a step name's ``text_embedding`` is their
score (the network was trained with MIL-NCE on exactly these dot products). So with per-second
S3D features ``[S, 512]`` and the names of ``K`` steps:

- :func:`second_scores`: the ``[S, K]`` scores; :func:`step_timeline`: the best step of each
  second and its top 3;
- :class:`TextEndpoints`: ``p(a | clip) = softmax_a(mean score of the clip's seconds / τ)``, the
  distribution of a start clip's first step and a goal clip's last step, with the interface of the
  endpoint model (``endpoint_log_probs(obs_start, obs_goal)``), so it serves wherever endpoint
  distributions do (the ``graph-text`` row, the planner's joint decoding). The temperature ``τ``
  is 1 (MIL-NCE's own logits) unless fitted on training episodes
  (:meth:`TextEndpoints.fitted`: the maximum-likelihood ``τ`` of their true first and last steps).

An observation of ``M`` seconds is the ``M`` per-second vectors concatenated (``M × 512``
values); its clip score is the mean over its seconds.

>>> texts = StepTexts(("crack egg", "stir"), np.array([[1.0, 0.0], [0.0, 1.0]]))
>>> second_scores(np.array([[2.0, 0.5], [0.0, 1.0]]), texts).tolist()
[[2.0, 0.5], [0.0, 1.0]]
>>> [row["label"] for row in step_timeline(np.array([[2.0, 0.5], [0.0, 1.0]]), texts)]
['crack egg', 'stir']
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from kepp_core.arrays import as_numpy
from kepp_core.calibration import calibrated_log_probs, fit_temperature
from kepp_core.errors import KeppError

DEFAULT_TEMPERATURE = 1.0  # MIL-NCE trains on the raw dot products: its own logits
MAX_NAMES = 20_000  # step names grounded at once (COIN has 778 steps)
MAX_SCORES = 2**26  # seconds × steps of one score matrix (512 MiB of float64): a day of video × 770 steps
TOP = 3  # the steps a timeline second lists
SPREAD_BOUNDS = (math.exp(-9.0), math.exp(9.0))  # the search range of τ, relative to the scores' spread


@dataclass(frozen=True)
class StepTexts:
    """Step names and their text embeddings ``[K, D]`` (S3D's ``text_embedding``)."""

    names: tuple[str, ...]
    embeddings: np.ndarray

    @classmethod
    def embed(cls, network, names) -> StepTexts:
        """The names embedded by an S3D network's text tower (``network.text``); an empty list,
        or a name that is not text, is a KeppError."""
        names = tuple(names)
        if not names:
            raise KeppError("the step list is empty: give at least one step name to ground")
        if len(names) > MAX_NAMES:
            raise KeppError(f"the step list has {len(names):,} names, more than the {MAX_NAMES:,} grounded at once")
        bad = next((n for n in names if not isinstance(n, str) or not n.strip()), None)
        if bad is not None:
            raise KeppError(f"step name {bad!r} is not a non-empty text")
        emb = network.text(list(names)).float().cpu().numpy().astype(np.float64)
        return cls(names, emb)

    @property
    def dim(self) -> int:
        return int(self.embeddings.shape[1])


def _as_array(x) -> np.ndarray:
    return np.asarray(as_numpy(x), dtype=np.float64)


def second_scores(features, texts: StepTexts) -> np.ndarray:
    """The score of every second of ``features [S, D]`` against every step ``[S, K]``."""
    feats = _as_array(features)
    if feats.ndim != 2 or feats.shape[1] != texts.dim:
        raise KeppError(f"features of shape {list(feats.shape)} cannot be scored against {texts.dim}-d text "
                        f"embeddings: expected the S3D video_embedding of each second [seconds, {texts.dim}]")
    if len(feats) * len(texts.names) > MAX_SCORES:
        raise KeppError(f"{len(feats):,} seconds × {len(texts.names):,} steps = {len(feats) * len(texts.names):,} "
                        f"scores, more than the {MAX_SCORES:,} one grounding holds: ground fewer steps at once")
    return feats @ texts.embeddings.T


def step_timeline(features, texts: StepTexts, top: int = TOP) -> list[dict]:
    """Per second of ``features``: the step it most resembles and its ``top`` steps with scores
    (``{"second", "step", "label", "score", "top": [{"label", "score"}, ...]}``)."""
    scores = second_scores(features, texts)
    order = np.argsort(-scores, axis=1, kind="stable")[:, :top]
    return [{"second": s, "step": int(order[s, 0]), "label": texts.names[order[s, 0]],
             "score": float(scores[s, order[s, 0]]),
             "top": [{"label": texts.names[k], "score": float(scores[s, k])} for k in order[s]]}
            for s in range(len(scores))]


def clip_scores(obs, texts: StepTexts) -> np.ndarray:
    """The mean score over an observation's seconds ``[N, K]`` (``obs``: ``[N, M × D]`` values, or
    one ``[M × D]``)."""
    x = _as_array(obs)
    x = x.reshape(1, -1) if x.ndim == 1 else x
    if x.ndim != 2 or x.shape[1] % texts.dim:
        raise KeppError(f"observations of {x.shape[-1]} values are not whole seconds of {texts.dim}-d S3D "
                        f"video embeddings (M × {texts.dim}): text grounding needs the S3D encoder's "
                        f"video_embedding features")
    return x.reshape(len(x), -1, texts.dim).mean(axis=1) @ texts.embeddings.T


class TextEndpoints:
    """Distributions of a start clip's first step and a goal clip's last step from the S3D text
    tower: ``softmax`` over the steps of the clip's mean score divided by ``temperature`` (module
    docstring). ``endpoint_log_probs`` is the endpoint model's interface."""

    def __init__(self, texts: StepTexts, temperature: float = DEFAULT_TEMPERATURE) -> None:
        if not (math.isfinite(temperature) and temperature > 0):
            raise KeppError(f"text endpoint temperature {temperature!r}: expected a number > 0")
        self.texts, self.temperature = texts, float(temperature)

    @property
    def num_actions(self) -> int:
        return len(self.texts.names)

    def timeline(self, features, top: int = TOP) -> list[dict]:
        """The step each second of ``features [S, 512]`` most resembles, with its ``top`` steps
        (:func:`step_timeline`)."""
        return step_timeline(features, self.texts, top)

    def endpoint_log_probs(self, obs_start, obs_goal, hierarchical: bool = True) -> np.ndarray:
        """``log p(a_1 | start)`` and ``log p(a_T | goal)`` ``[N, 2, K]`` (float64; ``hierarchical``
        is accepted for the endpoint model's interface and has no effect)."""
        return np.stack([calibrated_log_probs(clip_scores(obs_start, self.texts), self.temperature),
                         calibrated_log_probs(clip_scores(obs_goal, self.texts), self.temperature)], axis=1)

    def fitted(self, obs_start, obs_goal, first, last) -> TextEndpoints:
        """The same texts with ``τ`` fitted on training episodes: their start and goal observations
        and true first and last steps (one ``τ`` for both ends)."""
        scores = np.concatenate([clip_scores(obs_start, self.texts), clip_scores(obs_goal, self.texts)])
        labels = np.concatenate([_as_array(first), _as_array(last)]).astype(np.int64)
        if len(scores) == 0:
            return TextEndpoints(self.texts)
        # dot products of any scale: the temperature is fitted relative to their spread
        spread = float(scores.std()) or 1.0
        return TextEndpoints(self.texts, spread * fit_temperature(scores / spread, labels, bounds=SPREAD_BOUNDS))
