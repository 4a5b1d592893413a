"""A 2-D map of the test episodes: the first two principal components of each episode's start
and goal observation windows (the features a planner sees, :func:`kepp_core.data.episodes.observations`),
so that episodes that look alike lie close together and clusters of failures can be seen.

PCA of the centred matrix ``X = U S Vᵀ``: the coordinates are ``U[:, :2] S[:2]`` (= ``X V[:, :2]``),
each component's sign fixed so that its largest loading is positive (the same features always
give the same picture). The two components come from a randomised subspace iteration (Halko,
Martinsson and Tropp, "Finding structure with randomness", 2011, algorithm 4.4: a seeded block of
``2 + OVERSAMPLE`` directions, ``POWER_STEPS`` steps ``Q ← qr(Xᵀ X Q)``, then numpy's SVD of the
``N × 10`` matrix ``X Q``): a pass over ``X`` costs ``N·D·10`` instead of the ``N·D·min(N, D)``
of a full SVD, so a COIN-scale world's 30,000 episodes × 1,536 features take seconds, not
minutes. When ``D ≤ 10`` the block spans every direction and the result is exact.

>>> x = np.array([[0.0, 0.0], [2.0, 0.0], [4.0, 0.0], [2.0, 1.0]])
>>> xy, share = pca_2d(x)
>>> (xy.round(3) + 0.0).tolist(), share.round(3).tolist()   # + 0.0: no -0.0
([[-2.0, -0.25], [0.0, -0.25], [2.0, -0.25], [0.0, 0.75]], [0.914, 0.086])
"""

from __future__ import annotations

import numpy as np

from kepp_core.catalog import DEFAULT_M, DEFAULT_SETTING
from kepp_core.data import Dataset
from kepp_core.data.episodes import make_episodes, observations
from kepp_core.errors import KeppError

__all__ = ["OVERSAMPLE", "POWER_STEPS", "episode_coordinates", "pca_2d"]

OVERSAMPLE = 8  # directions beyond the two kept: the subspace iteration converges with the gap to the 10th
POWER_STEPS = 8


def pca_2d(x: np.ndarray, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``[N, 2]`` coordinates of the rows of ``x`` on its first two principal components and the
    share of the variance each explains (zeros where there is none: one row, or all alike)."""
    x = np.asarray(x)
    if x.ndim != 2 or x.shape[0] == 0 or x.shape[1] == 0:
        raise KeppError(f"PCA needs a non-empty [N, D] matrix (got shape {x.shape})")
    # float32 keeps a COIN-scale matrix (30,000 x 1,536) at 180 MB; small ones are done in float64
    centred = x.astype(np.float64 if x.size <= 4_000_000 else np.float32)
    centred -= centred.mean(axis=0)
    q = np.random.default_rng(seed).standard_normal((x.shape[1], min(2 + OVERSAMPLE, x.shape[1])))
    q = np.linalg.qr(q.astype(centred.dtype))[0]
    for _ in range(POWER_STEPS if x.shape[1] > q.shape[1] else 0):
        q = np.linalg.qr(centred.T @ (centred @ q))[0]
    u, s, wt = np.linalg.svd(centred @ q, full_matrices=False)
    k = min(2, int((s > 0).sum()))
    loadings = q @ wt[:k].T  # [D, k]: the components
    signs = np.sign(loadings[np.abs(loadings).argmax(axis=0), np.arange(k)])
    xy = np.zeros((x.shape[0], 2))
    xy[:, :k] = u[:, :k] * s[:k] * signs
    total = float(np.square(centred, dtype=np.float64).sum())
    share = np.zeros(2)
    if total > 0:
        share[:k] = s[:k].astype(np.float64) ** 2 / total
    return xy, share


def episode_coordinates(dataset: Dataset, horizon: int, setting: str = DEFAULT_SETTING, m: int = DEFAULT_M) -> dict:
    """The map of ``dataset``'s test episodes of ``horizon`` (JSON-ready): ``episodes`` (ids),
    ``x``, ``y`` (rounded to 5 decimals), ``explained`` (the two components' shares of the
    variance) and ``skipped`` (test episodes without segments or a feature file). A KeppError
    when no test episode has features."""
    episodes = make_episodes(dataset, horizon, "test", setting, m)
    usable = [e for e in episodes if e.start_window is not None and e.video.feature_file is not None]
    if not usable:
        raise KeppError(f"{dataset.name}: no test episode of T={horizon} has observation features "
                        "(the map needs per-second feature files: 'kepp features extract')")
    start, goal = observations(usable)
    xy, share = pca_2d(np.concatenate([start, goal], axis=1))
    return {"episodes": [e.id for e in usable], "x": np.round(xy[:, 0], 5).tolist(),
            "y": np.round(xy[:, 1], 5).tolist(), "explained": np.round(share, 4).tolist(),
            "skipped": len(episodes) - len(usable)}
