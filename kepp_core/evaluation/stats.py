"""The statistics of every result table: summaries over seeds (mean ± standard deviation or ±
Student-t confidence interval, :func:`summarise`), the t interval itself (:func:`mean_ci`), a
paired sign-flip permutation test over episodes and seeds, McNemar's exact test of two methods'
discordant episodes (:func:`mcnemar_exact`) and the percentile bootstrap of a mean over episodes
(:func:`bootstrap_interval`; on per-episode differences A − B it is the paired bootstrap; for many groups at
once, drawn on each group's value counts, :func:`group_bootstrap_intervals`). The one
place intervals and tests are computed: the demo table, ``kepp protocol``, ``kepp eval compare``
and the app's Results and Failure cases pages all call these.

No statistics package is a dependency, so the t quantile is computed here: the t
distribution's CDF from the regularised incomplete beta function (continued fraction,
modified Lentz; Numerical Recipes §6.4), inverted by bisection to ~1e-12.

>>> round(t_quantile(0.95, 1), 4), round(t_quantile(0.95, 4), 4)   # tables: 6.3138, 2.1318
(6.3138, 2.1318)
>>> mean_ci([50.0, 52.0, 54.0])[0], round(mean_ci([50.0, 52.0, 54.0])[1], 4)   # 2.92 · 2 / √3
(52.0, 3.3717)
>>> paired_permutation_test([1, 1, 1, 0, 0])   # exact: 2 of the 2³ sign patterns are as extreme
0.25
>>> mcnemar_exact(1, 5)   # 2 · P(X ≤ 1), X ~ Binomial(6, 1/2) = 2 · 7/64
0.21875
>>> bootstrap_interval([0, 0, 0, 0], resamples=100)   # no difference anywhere: no spread
(0.0, 0.0)

A one-run method against a several-seed one is tested seed by seed and the seeds combined by the
Cochran–Mantel–Haenszel test (:func:`cmh_test`) over each seed's 2×2 table of method × outcome.
"""

from __future__ import annotations

import functools
import itertools
import math
import random
from collections.abc import Iterable, Sequence
from fractions import Fraction

import numpy as np

from kepp_core.catalog.benchmark import BENCHMARK_BOOTSTRAP_PERCENTILES, BENCHMARK_BOOTSTRAP_RESAMPLES, BENCHMARK_BOOTSTRAP_SEED
from kepp_core.catalog import BOOTSTRAP_RESAMPLES, CONFIDENCE
from kepp_core.errors import KeppError

EXACT_LIMIT = 16  # at most this many non-zero differences: enumerate every sign pattern
EXACT_BINOMIAL = 20_000  # at most this many discordant units: McNemar's tail in whole numbers


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


@functools.lru_cache(maxsize=256)  # a table asks the same few (p, df) for every cell
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


def benchmark_bootstrap(series: Sequence[Sequence[float]], seed: int = BENCHMARK_BOOTSTRAP_SEED,
                        resamples: int = BENCHMARK_BOOTSTRAP_RESAMPLES) -> list[float]:
    """The unified benchmark's own 90% interval of each of ``series`` (the per-run numbers of SR, mAcc
    and mIoU, in that order), as ViterbiPlanNet's ``calculate_results.py`` computes it: Python's
    ``random`` seeded once with ``seed``, then for each series in turn ``resamples`` means of ``n``
    values drawn with ``random.choice`` (``n``: the series' length), and the distance between their
    5th and 95th percentiles (numpy's linear interpolation). The benchmark reports ``mean ± width``
    with this full width (not a half-width, as the Student t interval of :func:`mean_ci` is). The
    series' order is the runs' order (here: seeds ascending).

    >>> [round(w, 4) for w in benchmark_bootstrap([[30.0, 32.0, 31.0, 35.0, 33.0], [50.0] * 5])]
    [2.6, 0.0]
    """
    rng = random.Random(seed)
    low_q, high_q = BENCHMARK_BOOTSTRAP_PERCENTILES
    widths = []
    for values in series:
        data = list(values)
        if not data:
            widths.append(math.nan)
            continue
        means = [float(np.mean([rng.choice(data) for _ in range(len(data))])) for _ in range(resamples)]
        widths.append(float(np.percentile(means, high_q) - np.percentile(means, low_q)))
    return widths


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided p-value of McNemar's exact test: of the ``b + c`` discordant units (``b``: A right
    and B wrong, ``c``: the other way), how unlikely a split at least this uneven is when each
    is equally likely to fall either way: ``min(1, 2 · P(X ≤ min(b, c)))``, ``X ~ Binomial(b + c,
    1/2)``; 1 with no discordant unit. Up to :data:`EXACT_BINOMIAL` discordant units the tail is
    summed in whole numbers (exact, then rounded once); above, in log space (relative error about
    1e-12), so a hundred thousand discordant episodes cost milliseconds and never overflow.

    >>> mcnemar_exact(0, 0), mcnemar_exact(3, 3), mcnemar_exact(0, 10)   # 2 / 2^10
    (1.0, 1.0, 0.001953125)
    """
    for name, v in (("b", b), ("c", c)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
            raise KeppError(f"McNemar's test counts discordant units: {name} must be a whole number >= 0 (got {v!r})")
    n, k = int(b) + int(c), min(int(b), int(c))
    if 2 * k == n:  # no discordant unit, or an even split: nothing is less likely than what was seen
        return 1.0
    if n <= EXACT_BINOMIAL:
        term, tail = 1, 1
        for j in range(k):  # C(n, j + 1) from C(n, j)
            term = term * (n - j) // (j + 1)
            tail += term
        return float(min(Fraction(1), Fraction(2 * tail, 2 ** n)))
    j = np.arange(k, dtype=np.float64)
    log_pmf = np.concatenate([[0.0], np.cumsum(np.log(n - j) - np.log(j + 1))]) - n * math.log(2.0)
    top = log_pmf.max()
    return float(min(1.0, 2.0 * math.exp(top + math.log(np.exp(log_pmf - top).sum()))))


def cmh_test(tables, correction: bool = True, shared_row: bool = False) -> tuple[float, float]:
    """The Cochran–Mantel–Haenszel test of ``K`` strata's 2×2 tables (``tables``: ``[K, 2, 2]`` counts; here
    one stratum per seed, rows the two methods, columns right and wrong): is the odds ratio of the rows 1 in
    every stratum? Returns ``(statistic, p)``: ``X = (|Σ (n11 − E n11)| − ½)² / Σ Var n11`` with ``E n11 =
    r1 c1 / N`` and ``Var n11 = r1 r2 c1 c2 / (N² (N − 1))`` per stratum (``correction``: the ½ of
    continuity; without it the bars alone), two-sided ``p = P(χ²₁ ≥ X) = erfc(√(X / 2))``. A stratum with a
    margin of 0 (or ``N < 2``) adds nothing; with no stratum left the test is ``(0.0, 1.0)``.

    ``shared_row``: one row (either: the statistic is the same) is one and the same run in every stratum (a one-run method tested against
    each seed of another). The strata are then not independent: ``Σ (n11 − E n11)`` is about ``(Σ x_s − K y) / 2``
    (``x_s`` the seeds' right counts, ``y`` the one run's), whose variance under the null is ``K (K + 1) n p q / 4``,
    not the ``K · 2 n p q / 4`` the strata add up to; so the summed variance is taken ``(K + 1) / 2`` times
    (``K``: the strata that count), and one stratum is the plain test. Without it, K seeds against one run
    read as K independent experiments and p is as small as one McNemar over the pooled units.

    Cochran's penicillin and rabbits (5 strata; R's ``mantelhaen.test`` gives X = 3.9286, p = 0.04747):

    >>> rabbits = [[[0, 6], [0, 5]], [[3, 3], [0, 6]], [[6, 0], [2, 4]], [[5, 1], [6, 0]], [[2, 0], [5, 0]]]
    >>> x, p = cmh_test(rabbits)
    >>> round(x, 4), round(p, 5)
    (3.9286, 0.04747)
    >>> round(cmh_test(rabbits, shared_row=True)[0], 4)   # 3 strata count: the variance twice
    1.9643
    """
    t = np.asarray(tables)
    if t.ndim != 3 or t.shape[1:] != (2, 2) or not np.issubdtype(t.dtype, np.number):
        raise KeppError(f"the CMH test takes [K, 2, 2] tables of counts (got shape {t.shape}, {t.dtype})")
    t = t.astype(np.float64)
    if not np.isfinite(t).all() or (t < 0).any() or (t != np.round(t)).any():
        raise KeppError("the CMH test takes whole counts >= 0")
    r1, r2 = t[:, 0].sum(axis=1), t[:, 1].sum(axis=1)
    c1, c2 = t[:, :, 0].sum(axis=1), t[:, :, 1].sum(axis=1)
    n = r1 + r2
    var = np.divide(r1 * r2 * c1 * c2, n * n * (n - 1), out=np.zeros_like(n), where=n > 1)
    if not var.sum() > 0:
        return 0.0, 1.0
    used = var > 0
    diff = abs(float((t[used, 0, 0] - r1[used] * c1[used] / n[used]).sum()))
    total = float(var.sum()) * ((int(used.sum()) + 1) / 2 if shared_row else 1.0)
    x = max(diff - (0.5 if correction else 0.0), 0.0) ** 2 / total
    return x, math.erfc(math.sqrt(x / 2.0))


def _multinomial(rng: np.random.Generator, n: int, probs: np.ndarray, size: int) -> np.ndarray:
    """``size`` multinomial draws of ``n`` over ``probs`` (a ``(size, kinds)`` count matrix), kind by
    kind: each kind's count is binomial in what the kinds before it left (the textbook construction,
    equal in distribution to ``rng.multinomial``), drawn for all ``size`` draws at once, which is
    5-10x faster than numpy's draw-by-draw loop."""
    out = np.empty((size, len(probs)), dtype=np.int64)
    left, rest = np.full(size, n, dtype=np.int64), 1.0
    for k, p in enumerate(probs[:-1]):
        out[:, k] = rng.binomial(left, min(1.0, max(0.0, p / rest))) if rest > 0 else 0
        left -= out[:, k]
        rest -= p
    out[:, -1] = left
    return out


def bootstrap_interval(values: Sequence[float], groups: Sequence | None = None, resamples: int = BOOTSTRAP_RESAMPLES,
                       confidence: float = CONFIDENCE, seed: int = 0) -> tuple[float, float]:
    """The percentile bootstrap interval (two-sided, ``confidence``) of the mean of ``values``.

    ``values``: one number per unit (a test episode's success 0/1; for the paired bootstrap of two
    methods, each unit's difference A − B). Each of ``resamples`` draws takes as many units as
    there are, with replacement; with ``groups`` (one label per unit, e.g. the episode of each
    (seed, episode) unit) whole groups are drawn instead, each with all its units, and a draw's
    mean is its units' total over their count. Seeded: the same inputs and ``seed`` give the same
    interval. A draw only needs how many units of each distinct (total, size) it took, so it is
    drawn as one multinomial over those kinds where there are few (success, or a difference of
    two successes: 10,000 draws over 75,000 units in about 0.1 s): equal in distribution to
    drawing the units one by one, which is what happens where most units are a kind of their own.
    """
    x = np.asarray(values, dtype=np.float64).ravel()
    if x.size == 0:
        raise KeppError("no units to resample")
    _check_draws(resamples, confidence)
    if groups is None:
        totals, sizes = x, np.ones_like(x)
    else:
        labels = np.asarray(groups)
        if labels.shape[0] != x.size:
            raise KeppError(f"{labels.shape[0]} group labels for {x.size} values")
        codes = np.unique(labels, return_inverse=True)[1].ravel()
        totals, sizes = np.bincount(codes, weights=x), np.bincount(codes).astype(np.float64)
    pairs, counts = np.unique(totals + 1j * sizes, return_counts=True)  # the distinct (total, size): 30x faster
    kinds = np.stack([pairs.real, pairs.imag], axis=1)                  # than np.unique over rows
    n = int(counts.sum())
    rng = np.random.default_rng(seed)
    means = []
    if 8 * len(kinds) <= n:  # few kinds (success, differences of successes): one multinomial per draw
        chunk = max(1, 4_000_000 // len(kinds))  # draws per batch: a bounded (draws x kinds) count matrix
        for start in range(0, int(resamples), chunk):
            drawn = _multinomial(rng, n, counts / n, min(chunk, int(resamples) - start))
            means.append((drawn @ kinds[:, 0]) / (drawn @ kinds[:, 1]))
    else:  # about one kind per unit (e.g. step accuracies): draw the units themselves
        chunk = max(1, 4_000_000 // n)
        for start in range(0, int(resamples), chunk):
            drawn = rng.integers(0, n, size=(min(chunk, int(resamples) - start), n))
            means.append(totals[drawn].sum(axis=1) / sizes[drawn].sum(axis=1))
    lo, hi = np.quantile(np.concatenate(means), [(1 - confidence) / 2, (1 + confidence) / 2])
    return float(lo), float(hi)


KIND_LIMIT = 64  # a group with more distinct values than this (and than an eighth of its units) draws its units


def _check_draws(resamples, confidence) -> None:
    """KeppError for a confidence outside (0, 1) or a number of draws that is not a whole number >= 1."""
    if not 0 < confidence < 1:
        raise KeppError(f"confidence must lie in (0, 1) (got {confidence})")
    if isinstance(resamples, bool) or int(resamples) != resamples or resamples < 1:
        raise KeppError(f"resamples must be a whole number >= 1 (got {resamples!r})")


def _kinds_by_group(x: np.ndarray, codes: np.ndarray, groups: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct values of each group and how many units hold each: ``(values, counts)`` as ``[groups, kinds]``
    matrices (a group's kinds first, from its rarest to its most common; zero counts after them) and each group's
    number of kinds."""
    distinct = np.unique(x)
    key = codes * len(distinct) + np.searchsorted(distinct, x)  # (a sort of the values, not of their positions)
    if groups * len(distinct) <= 1 << 24:  # few kinds: each (group, kind) counted in one pass, no sort
        counts = np.bincount(key, minlength=groups * len(distinct))
        pair = np.flatnonzero(counts)
        counts = counts[pair]
    else:
        pair, counts = np.unique(key, return_counts=True)
    group = pair // len(distinct)
    by_count = np.lexsort((counts, group))  # a group's kinds from the rarest: small binomials first, the most common
    pair, counts, group = pair[by_count], counts[by_count], group[by_count]  # last (it takes what is left)
    kinds = np.bincount(group, minlength=groups)
    rank = np.arange(len(pair)) - np.r_[0, np.cumsum(kinds)][group]
    width = int(kinds.max()) if groups else 0
    vals, cnts = np.zeros((groups, width)), np.zeros((groups, width), dtype=np.int64)
    vals[group, rank], cnts[group, rank] = distinct[pair % len(distinct)], counts
    return vals, cnts, kinds


def _multinomial_means(rng: np.random.Generator, vals: np.ndarray, cnts: np.ndarray, kinds: np.ndarray,
                       size: int) -> np.ndarray:
    """``size`` bootstrap means per row of the ``[rows, kinds]`` matrices (rows in decreasing number of kinds): per
    draw how many units of each kind it took, one multinomial over the row's counts, drawn kind by kind as
    :func:`_multinomial` does (each kind binomial in what the kinds before it left; a row's last kind takes the
    rest), for every row and draw at once: a ``[rows, size]`` matrix."""
    n = cnts.sum(axis=1)
    left = np.repeat(n[:, None], size, axis=1)
    total = np.zeros((len(n), size))
    unplaced = n.copy()  # the row's units not in the kinds before this one
    for k in range(int(kinds[0]) if len(kinds) else 0):
        rows = int(np.count_nonzero(kinds > k))  # rows still with a kind k: a prefix, as rows are sorted
        last = int(np.count_nonzero(kinds > k + 1))  # rows [last, rows): k is their last kind
        drawn = rng.binomial(left[:last], (cnts[:last, k] / unplaced[:last])[:, None]) if last else left[:0]
        total[:last] += drawn * vals[:last, k, None]
        left[:last] -= drawn
        total[last:rows] += left[last:rows] * vals[last:rows, k, None]
        unplaced[:rows] -= cnts[:rows, k]
    return total / n[:, None]


def group_bootstrap_intervals(values: Sequence[float], codes: Sequence[int], resamples: int = BOOTSTRAP_RESAMPLES,
                              confidence: float = CONFIDENCE, seed: int = 0) -> np.ndarray:
    """The percentile bootstrap interval (two-sided, ``confidence``) of the mean of ``values`` within each group,
    every group at once: ``codes`` gives each value's group (``0 .. G-1``); a ``[G, 2]`` array of (low, high), NaN
    for a group with no values. Per group it is :func:`bootstrap_interval` of the group's values, drawn on counts:
    a draw of a group's mean (as many of its values as it has, taken with replacement) only needs how many of each
    distinct value it took, one multinomial over the group's value counts (for 0/1 values one binomial,
    Binomial(n, p) / n), so the draws are those counts, for all groups and draws at once; equal in distribution
    to resampling the values one by one, which is what a group with more than :data:`KIND_LIMIT` distinct values
    (and more than an eighth of its units) does. Seeded: one generator of ``seed`` draws the groups in blocks
    of 2 million draws, groups in decreasing number of distinct values; the same inputs give the same
    intervals (not the same draws as :func:`bootstrap_interval`, whose intervals they agree with in distribution).

    >>> group_bootstrap_intervals([1, 1, 0, 0, 5], [0, 0, 1, 1, 2], resamples=100).tolist()   # no spread in a group
    [[1.0, 1.0], [0.0, 0.0], [5.0, 5.0]]
    """
    x, g = np.asarray(values, dtype=np.float64).ravel(), np.asarray(codes).ravel()
    _check_draws(resamples, confidence)
    if g.shape != x.shape or (g.size and (g.dtype.kind not in "iu" or g.min() < 0)):
        raise KeppError(f"expected one group number >= 0 per value ({x.size} values, {g.size} group numbers)")
    groups = int(g.max()) + 1 if g.size else 0
    out = np.full((groups, 2), np.nan)
    if not groups:
        return out
    vals, cnts, kinds = _kinds_by_group(x, g.astype(np.int64), groups)
    n = cnts.sum(axis=1)
    q = [(1 - confidence) / 2, (1 + confidence) / 2]
    rng = np.random.default_rng(seed)
    few = np.flatnonzero((kinds > 0) & ((kinds <= KIND_LIMIT) | (8 * kinds <= n)))
    few = few[np.argsort(-kinds[few], kind="stable")]
    block = max(1, 2_000_000 // int(resamples))  # groups per block: bounded [groups, draws] matrices
    for start in range(0, len(few), block):
        rows = few[start:start + block]
        means = _multinomial_means(rng, vals[rows], cnts[rows], kinds[rows], int(resamples))
        out[rows] = np.quantile(means, q, axis=1).T
    for r in np.setdiff1d(np.flatnonzero(kinds > 0), few):  # about one distinct value per unit: draw the units
        unit = np.repeat(vals[r, :kinds[r]], cnts[r, :kinds[r]])
        chunk, means = max(1, 4_000_000 // len(unit)), []
        for s in range(0, int(resamples), chunk):
            means.append(unit[rng.integers(0, len(unit), size=(min(chunk, int(resamples) - s), len(unit)))].mean(axis=1))
        out[r] = np.quantile(np.concatenate(means), q)
    return out


__all__ = ["SPREADS", "benchmark_bootstrap", "betainc", "bootstrap_interval", "cmh_test", "group_bootstrap_intervals", "mcnemar_exact", "mean_ci", "paired_permutation_test",
           "summarise", "t_cdf", "t_quantile"]
