"""Failure analysis of predicted plans: the paper's failure patterns and statistics.

KEPP (supplement B.5) names three failure patterns and reports how often errors come from
the step model's endpoints or from the graph. This module computes the same figures for
any run from per-episode outcomes (ground truth, the step model's endpoints, the top-1
graph path and the final plan). It only reads; nothing here trains or plans.

Patterns of a *failed* episode (a plan that is not exactly the ground truth), in the order
used to pick its primary pattern:

- ``wrong_endpoint``: the step model's ``â_1`` or ``â_T`` differs from the ground truth's
  first or last step (pattern b). When an outcome carries no step-model endpoints (a
  baseline without a step model) the plan's own first and last steps are used.
- ``same_start_end``: the ground truth starts and ends with the same action, so the graph
  proposes loops (pattern c).
- ``repeated_subsequence``: the ground-truth or the predicted plan contains a repeated
  short sub-sequence, i.e. some action or run of actions occurs twice without overlapping
  (``add, stir, add, stir``; pattern a).
- ``other``: none of the above.

Every failure keeps all the patterns that apply (``patterns``), and one ``primary``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from kepp_core.catalog import PATTERN_LABELS, PATTERNS, find_method
from kepp_core.errors import KeppError



@dataclass(frozen=True)
class EpisodeOutcome:
    """What a method did on one test episode (action indices of the dataset vocabulary)."""

    episode: str
    truth: tuple[int, ...]
    plan: tuple[int, ...]
    endpoints: tuple[int, int] | None = None  # step model's (â_1, â_T); None: no step model
    top_path: tuple[int, ...] | None = None  # top-1 graph path; None: method used no graph
    task: str | None = None
    method: str | None = None

    def __post_init__(self) -> None:
        if len(self.plan) != len(self.truth):
            raise KeppError(f"episode {self.episode!r}: plan has {len(self.plan)} steps, "
                            f"ground truth has {len(self.truth)}")
        if not self.truth:
            raise KeppError(f"episode {self.episode!r}: empty ground-truth plan")
        if self.top_path is not None and len(self.top_path) != len(self.truth):
            raise KeppError(f"episode {self.episode!r}: top graph path has {len(self.top_path)} steps, "
                            f"expected {len(self.truth)}")

    @property
    def success(self) -> bool:
        return tuple(self.plan) == tuple(self.truth)

    @property
    def predicted_endpoints(self) -> tuple[int, int]:
        return self.endpoints if self.endpoints is not None else (self.plan[0], self.plan[-1])

    @property
    def wrong_endpoint(self) -> bool:
        a1, at = self.predicted_endpoints
        return a1 != self.truth[0] or at != self.truth[-1]


@dataclass(frozen=True)
class Failure:
    """A failed episode with the patterns that apply and the one it is filed under."""

    outcome: EpisodeOutcome
    patterns: tuple[str, ...]
    primary: str


# The setting of the paper's failure statistics (supplement B.5): the dataset format and horizon its numbers
# are for (with R=2); a table shows them beside a run's only where the run's setting is the same.
PAPER_SETTING = ("crosstask", 4)
PAPER_COLUMN = "paper (CrossTask T=4, R=2)"


@dataclass
class FailureStats:
    """The paper's failure statistics for one run (percentages, ``None`` when undefined)."""

    episodes: int
    failures: int
    success_rate: float | None
    wrong_endpoint_of_all: float | None  # % of all plans with a wrong â_1 or â_T (paper: 49.94)
    wrong_endpoint_of_failures: float | None  # % of failures with one (paper: 63.23)
    top_path_differs_in_successes: float | None  # paper: 34
    top_path_differs_in_failures: float | None  # paper: 87
    pattern_counts: dict[str, int] = field(default_factory=dict)  # primary pattern -> failures
    pattern_any_counts: dict[str, int] = field(default_factory=dict)  # pattern -> failures it applies to

    def as_rows(self, setting: tuple[str, int] | None = None) -> list[dict]:
        """The statistics as (statistic, value) rows for a table, with the paper's figures beside them
        (:data:`PAPER_COLUMN`) where the run's ``setting`` (dataset format, T) is the paper's, or none is given.

        >>> s = FailureStats(10, 4, 60.0, 30.0, 50.0, 10.0, 80.0)
        >>> list(s.as_rows(("crosstask", 4))[3]), list(s.as_rows(("demo", 4))[3])
        (['statistic', 'value', 'paper (CrossTask T=4, R=2)'], ['statistic', 'value'])
        """
        paper = {"wrong endpoint, all plans (%)": 49.94, "wrong endpoint, failures (%)": 63.23,
                 "top-1 path ≠ truth, successes (%)": 34.0, "top-1 path ≠ truth, failures (%)": 87.0}
        values = {
            "episodes": self.episodes, "failures": self.failures, "SR (%)": self.success_rate,
            "wrong endpoint, all plans (%)": self.wrong_endpoint_of_all,
            "wrong endpoint, failures (%)": self.wrong_endpoint_of_failures,
            "top-1 path ≠ truth, successes (%)": self.top_path_differs_in_successes,
            "top-1 path ≠ truth, failures (%)": self.top_path_differs_in_failures,
        }
        if setting is not None and tuple(setting) != PAPER_SETTING:
            return [{"statistic": k, "value": v} for k, v in values.items()]
        return [{"statistic": k, "value": v, PAPER_COLUMN: paper.get(k)} for k, v in values.items()]


def has_repeated_subsequence(plan: Sequence[int], max_length: int | None = None) -> bool:
    """True if some run of 1..``max_length`` actions occurs twice in ``plan`` without overlap.

    >>> has_repeated_subsequence([3, 5, 3, 5])
    True
    >>> has_repeated_subsequence([1, 2, 1])
    True
    >>> has_repeated_subsequence([1, 2, 3, 4])
    False
    >>> has_repeated_subsequence([1, 2, 1], max_length=0)
    False
    """
    n = len(plan)
    longest = n // 2 if max_length is None else min(max_length, n // 2)
    seq = tuple(plan)
    for k in range(1, longest + 1):
        first_seen: dict[tuple[int, ...], int] = {}
        for i in range(n - k + 1):
            chunk = seq[i : i + k]
            j = first_seen.setdefault(chunk, i)
            if i - j >= k:
                return True
    return False


def failure_patterns(outcome: EpisodeOutcome) -> tuple[str, ...]:
    """All patterns that apply to a failed episode (``("other",)`` if none); ``()`` for a success.

    >>> failure_patterns(EpisodeOutcome("e", truth=(1, 2, 1), plan=(1, 3, 1), endpoints=(1, 1)))
    ('same_start_end', 'repeated_subsequence')
    >>> failure_patterns(EpisodeOutcome("e", truth=(1, 2, 3), plan=(4, 2, 3)))
    ('wrong_endpoint',)
    """
    if outcome.success:
        return ()
    found = []
    if outcome.wrong_endpoint:
        found.append("wrong_endpoint")
    if outcome.truth[0] == outcome.truth[-1]:
        found.append("same_start_end")
    if has_repeated_subsequence(outcome.truth) or has_repeated_subsequence(outcome.plan):
        found.append("repeated_subsequence")
    return tuple(found) or ("other",)


def repeats_batch(plans: np.ndarray) -> np.ndarray:
    """:func:`has_repeated_subsequence` of every row of an ``[n, T]`` array at once (vectorised
    over the rows: one comparison per pair of windows, ``O(T³)`` columns, never ``O(n)`` Python).

    >>> repeats_batch(np.array([[3, 5, 3, 5], [1, 2, 3, 4], [1, 2, 1, 4]])).tolist()
    [True, False, True]
    """
    plans = np.asarray(plans)
    n, length = plans.shape
    out = np.zeros(n, dtype=bool)
    for k in range(1, length // 2 + 1):
        for i in range(length - k + 1):
            for j in range(i + k, length - k + 1):  # a later, non-overlapping window
                out |= (plans[:, i:i + k] == plans[:, j:j + k]).all(axis=1)
    return out


def failure_patterns_batch(truths: np.ndarray, plans: np.ndarray, endpoints: np.ndarray) -> list[tuple[str, ...]]:
    """:func:`failure_patterns` of many episodes of one horizon at once: ``truths`` and ``plans``
    are ``[n, T]`` arrays, ``endpoints`` ``[n, 2]`` (the step model's, or the plan's own ends for a
    method without one, as :attr:`EpisodeOutcome.predicted_endpoints`).

    >>> failure_patterns_batch(np.array([[1, 2, 1], [1, 2, 3], [1, 2, 3]]), np.array([[1, 3, 1], [4, 2, 3], [1, 2, 3]]),
    ...                        np.array([[1, 1], [4, 3], [1, 3]]))
    [('same_start_end', 'repeated_subsequence'), ('wrong_endpoint',), ()]
    """
    truths, plans, endpoints = np.asarray(truths), np.asarray(plans), np.asarray(endpoints)
    failed = ~(truths == plans).all(axis=1)
    flags = {"wrong_endpoint": (endpoints[:, 0] != truths[:, 0]) | (endpoints[:, 1] != truths[:, -1]),
             "same_start_end": truths[:, 0] == truths[:, -1],
             "repeated_subsequence": repeats_batch(truths) | repeats_batch(plans)}
    code = sum(flags[p].astype(int) << b for b, p in enumerate(PATTERNS[:3]))  # one small int per episode
    names = {c: tuple(p for b, p in enumerate(PATTERNS[:3]) if c >> b & 1) or ("other",) for c in range(8)}
    return [names[int(c)] if f else () for c, f in zip(code, failed)]


def classify_failures(outcomes: Iterable[EpisodeOutcome]) -> list[Failure]:
    """The failed episodes with their patterns, in input order.

    >>> fs = classify_failures([EpisodeOutcome("a", (1, 2), (1, 2)), EpisodeOutcome("b", (1, 2), (1, 3))])
    >>> [(f.outcome.episode, f.primary) for f in fs]
    [('b', 'wrong_endpoint')]
    """
    out = []
    for o in outcomes:
        patterns = failure_patterns(o)
        if patterns:
            out.append(Failure(o, patterns, patterns[0]))
    return out


def _pct(num: int, den: int) -> float | None:
    return 100.0 * num / den if den else None


def failure_stats(outcomes: Iterable[EpisodeOutcome]) -> FailureStats:
    """The paper's statistics (B.5) for one run.

    The top-1 path shares count only episodes that carry a graph path.

    >>> s = failure_stats([EpisodeOutcome("a", (1, 2, 3), (1, 2, 3), (1, 3), (1, 2, 3)),
    ...                    EpisodeOutcome("b", (1, 2, 3), (1, 4, 3), (1, 3), (1, 4, 3)),
    ...                    EpisodeOutcome("c", (1, 2, 3), (5, 2, 3), (5, 3), (5, 2, 3))])
    >>> round(s.success_rate, 2), round(s.wrong_endpoint_of_all, 2), s.wrong_endpoint_of_failures
    (33.33, 33.33, 50.0)
    >>> s.top_path_differs_in_successes, s.top_path_differs_in_failures, s.pattern_counts["other"]
    (0.0, 100.0, 1)
    """
    outcomes = list(outcomes)
    failures = classify_failures(outcomes)
    successes = [o for o in outcomes if o.success]
    failed = [f.outcome for f in failures]
    with_path_s = [o for o in successes if o.top_path is not None]
    with_path_f = [o for o in failed if o.top_path is not None]
    primary = Counter(f.primary for f in failures)
    any_counts = Counter(p for f in failures for p in f.patterns)
    return FailureStats(
        episodes=len(outcomes),
        failures=len(failures),
        success_rate=_pct(len(successes), len(outcomes)),
        wrong_endpoint_of_all=_pct(sum(o.wrong_endpoint for o in outcomes), len(outcomes)),
        wrong_endpoint_of_failures=_pct(sum(o.wrong_endpoint for o in failed), len(failed)),
        top_path_differs_in_successes=_pct(sum(tuple(o.top_path) != o.truth for o in with_path_s), len(with_path_s)),
        top_path_differs_in_failures=_pct(sum(tuple(o.top_path) != o.truth for o in with_path_f), len(with_path_f)),
        pattern_counts={p: primary.get(p, 0) for p in PATTERNS},
        pattern_any_counts={p: any_counts.get(p, 0) for p in PATTERNS},
    )


def stored_paths(method: str) -> int:
    """How many of a record's graph paths ``method`` used (its ``R``), when its plan depends on
    the step model's endpoints and the graph paths stored in a record
    (:attr:`kepp_core.catalog.MethodEntry.judged_on_stored_paths`: the zero-shot and KEPP-R rows);
    0 for other methods, and names the catalogue does not know, judged by their own plan's ends.

    >>> stored_paths("kepp-R2"), stored_paths("graph-pred"), stored_paths("kepp-R2+dec")
    (2, 1, 0)
    """
    entry = find_method(method)
    return entry.R if entry is not None and entry.judged_on_stored_paths else 0


def outcome_from_record(record: Mapping, method: str) -> EpisodeOutcome:
    """The :class:`EpisodeOutcome` of ``method`` on one prediction record.

    The record's step-model endpoints and graph paths count only for the methods that use
    them (:func:`stored_paths`); the top path is the first stored one.

    >>> rec = {"episode": "x", "gt": [1, 2], "plans": {"kepp-R1": [1, 3], "random": [0, 2]},
    ...        "endpoints": [1, 3], "paths": [[1, 3], [1, 2]]}
    >>> o = outcome_from_record(rec, "kepp-R1"); o.plan, o.endpoints, o.top_path
    ((1, 3), (1, 3), (1, 3))
    >>> outcome_from_record(rec, "random").endpoints is None
    True
    """
    plans = record.get("plans") or {}
    if method not in plans:
        raise KeppError(f"episode {record.get('episode')!r}: no plan for method {method!r} "
                        f"(has {', '.join(sorted(plans)) or 'none'})")
    stored = stored_paths(method) > 0
    ends = record.get("endpoints") if stored else None
    paths = record.get("paths") if stored else None
    return EpisodeOutcome(
        episode=str(record["episode"]), truth=tuple(int(a) for a in record["gt"]),
        plan=tuple(int(a) for a in plans[method]),
        endpoints=tuple(int(a) for a in ends) if ends is not None else None,
        top_path=tuple(int(a) for a in paths[0]) if paths else None,
        task=record.get("task"), method=method)
