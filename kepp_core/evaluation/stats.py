"""The statistics of every result table: summaries over seeds (mean ± standard deviation or ±
Student-t confidence interval, :func:`summarise`), the t interval itself (:func:`mean_ci`) and a
paired sign-flip permutation test over episodes and seeds. The one place intervals and tests
are computed: the demo table, ``kepp protocol`` and the app's Results page all call these.

No statistics package is a dependency, so the t quantile is computed here: the t
distribution's CDF from the regularised incomplete beta function (continued fraction,
modified Lentz; Numerical Recipes §6.4), inverted by bisection to ~1e-12.

>>> round(t_quantile(0.95, 1), 4), round(t_quantile(0.95, 4), 4)   # tables: 6.3138, 2.1318
(6.3138, 2.1318)
>>> mean_ci([50.0, 52.0, 54.0])[0], round(mean_ci([50.0, 52.0, 54.0])[1], 4)   # 2.92 · 2 / √3
(52.0, 3.3717)
>>> paired_permutation_test([1, 1, 1, 0, 0])   # exact: 2 of the 2³ sign patterns are as extreme
0.25
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence

import numpy as np

from kepp_core.catalog import CONFIDENCE
from kepp_core.errors import KeppError

EXACT_LIMIT = 16  # at most this many non-zero differences: enumerate every sign pattern


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz)."""
    tiny, qab, qap, qam = 1e-300, a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 500):
        m2 = 2 * m
        for aa in (m * (b - m) * x / ((qam + m2) * (a + m2)), -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + aa / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def betainc(a: float, b: float, x: float) -> float:
    """The regularised incomplete beta function ``I_x(a, b)``.

    >>> round(betainc(2.0, 3.0, 0.4), 6)   # 1 - (1-x)^4 - 4x(1-x)^3 = 0.5248
    0.5248
    """
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1) / (a + b + 2):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    """``P(T <= t)`` for Student's t with ``df`` degrees of freedom."""
    tail = 0.5 * betainc(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t > 0 else tail


def t_quantile(p: float, df: float) -> float:
    """The ``p`` quantile of Student's t with ``df`` degrees of freedom (bisection on the CDF)."""
    if not 0 < p < 1 or not df > 0:
        raise KeppError(f"t quantile needs 0 < p < 1 and df > 0 (got p={p}, df={df})")
    if p < 0.5:
        return -t_quantile(1 - p, df)
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < p:
        hi *= 2.0
    for _ in range(200):
        mid = (lo + hi) / 2
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-13:
            break
    return (lo + hi) / 2


def mean_ci(values: Sequence[float], confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Mean and the half-width of its two-sided ``confidence`` interval (Student t over the
    values, ``n - 1`` degrees of freedom); the half-width is NaN for a single value."""
    x = np.asarray(values, dtype=np.float64)
    if x.size == 0:
        raise KeppError("no values to summarise")
    if x.size == 1:
        return float(x[0]), float("nan")
    half = t_quantile(0.5 + confidence / 2, x.size - 1) * x.std(ddof=1) / math.sqrt(x.size)
    return float(x.mean()), float(half)


SPREADS = ("std", "ci")  # what follows "±" in a summary: standard deviation or confidence-interval half-width


def summarise(rows: Iterable[dict], metrics: Sequence[str], keys: Sequence[str] = ("method", "T", "setting"),
              spread: str = "ci", confidence: float = CONFIDENCE) -> list[dict]:
    """One row per group of ``rows`` sharing ``keys`` (e.g. the seeds of one method and horizon):
    the keys, ``seeds`` (rows in the group) and, for each of ``metrics`` the group's rows have,
    the mean and its spread: ``<metric>_std`` (standard deviation over the rows, ``ddof=0``) or
    ``<metric>_ci`` (half-width of the two-sided ``confidence`` interval, :func:`mean_ci`; NaN
    for one row). Groups keep the order of their first row.

    >>> rows = [{"method": "a", "T": 3, "SR": v} for v in (40.0, 44.0)]
    >>> summarise(rows, ["SR"], ("method", "T"), "std")
    [{'method': 'a', 'T': 3, 'seeds': 2, 'SR': 42.0, 'SR_std': 2.0}]
    >>> round(summarise(rows, ["SR"], ("method", "T"))[0]["SR_ci"], 4)   # t(0.95, 1) · √8 / √2
    12.6275
    """
    if spread not in SPREADS:
        raise KeppError(f"summary spread must be one of {', '.join(SPREADS)} (got {spread!r})")
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault(tuple(r[k] for k in keys), []).append(r)
    out = []
    for key, rs in groups.items():
        row = {**dict(zip(keys, key)), "seeds": len(rs)}
        for m in metrics:
            vals = [r[m] for r in rs if r.get(m) is not None]
            if not vals:
                continue
            if spread == "ci":
                row[m], row[f"{m}_ci"] = mean_ci(vals, confidence)
            else:
                row[m], row[f"{m}_std"] = float(np.mean(vals)), float(np.std(vals))
        out.append(row)
    return out


def paired_permutation_test(diffs: Sequence[float], permutations: int = 20_000, seed: int = 0) -> float:
    """Two-sided p-value of a paired sign-flip permutation test of mean difference 0.

    ``diffs``: per-unit differences (here: one per test episode and seed, method A minus
    method B). Under the null each difference's sign is equally likely to be flipped; the
    p-value is the share of sign patterns whose mean is at least as far from 0 as the observed
    one. With at most :data:`EXACT_LIMIT` non-zero differences every pattern is enumerated
    (exact); otherwise ``permutations`` random patterns are drawn and ``p = (1 + hits) /
    (1 + permutations)`` (never 0).
    """
    d = np.asarray(diffs, dtype=np.float64)
    d = d[d != 0]
    if d.size == 0:
        return 1.0
    observed = abs(d.sum())
    eps = 1e-9 * max(1.0, np.abs(d).sum())
    if d.size <= EXACT_LIMIT:
        signs = np.array(list(itertools.product((1.0, -1.0), repeat=d.size)))
        return float((np.abs(signs @ d) >= observed - eps).mean())
    rng = np.random.default_rng(seed)
    hits = 0
    for start in range(0, permutations, 1000):
        n = min(1000, permutations - start)
        signs = rng.integers(0, 2, size=(n, d.size)) * 2.0 - 1.0
        hits += int((np.abs(signs @ d) >= observed - eps).sum())
    return (1 + hits) / (1 + permutations)


__all__ = ["SPREADS", "betainc", "mean_ci", "paired_permutation_test", "summarise", "t_cdf", "t_quantile"]
