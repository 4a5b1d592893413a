"""The field's evaluation codes, each one object (:class:`MetricFamily`) that computes its metrics and heads
their columns, and the facts of the unified benchmark (stdlib only: the codes' math is
:mod:`kepp_core.metrics`'s, imported when a code first computes; every layer, the app included,
reads the codes here).

Three codes compute "SR, mAcc, mIoU" for procedure planning, and they do not agree (the numbers of
``../shared/data/protocol-metrics``: on the same T=3 plans PDPP's per-batch mIoU is 99.7, its
per-episode mIoU 65.5, ViterbiPlanNet's ``acc_iou`` 75.6 and its "classic" mIoU 96.9). A number is
comparable only with the code that made it named, so each code is one object of :data:`FAMILIES` (its
metrics are a *family*): its name (``--metrics NAME``), label and provenance, its function (what
:func:`protocol_metrics` returns), the metrics the method × T table shows and, where those are means over
episodes, its array path; each metric's key, the field it is stored under in rows and records, and a
header that names the code. Every command, protocol spec, published number and page asks this registry:
a code added to :data:`FAMILIES` is a ``--metrics`` choice, a table and a name in the app.

- ``kepp``: this package's own metrics (:mod:`kepp_core.metrics`), the default of every table;
- ``pdpp``: PDPP's ``utils/accuracy.py`` as its ``inference.py`` aggregates it (KEPP's and MTID's
  repositories evaluate with it); ``pdpp-printed``: the same numbers as that code prints them (float32);
- ``vpn``: ViterbiPlanNet's ``metrics.py`` as its ``main.py`` aggregates it (the unified benchmark).

>>> [m.column for m in family("vpn").metrics]
['vpn_sr', 'vpn_macc', 'vpn_miou', 'vpn_miou_classic']
>>> family("pdpp").header("miou_batch")
'mIoU (PDPP, per batch)'
>>> family("vpn").scores([(1, 2)], [(1, 3)])["sr"]
0.0
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from typing import TYPE_CHECKING

from kepp_core.errors import KeppError, unknown_name_error

if TYPE_CHECKING:
    import numpy as np

Plans = Sequence[Sequence[int]]


def _metrics_function(name: str) -> Callable:
    """The function ``name`` of :mod:`kepp_core.metrics` (the codes' math, numpy), imported when
    first called: the catalogue, which ``kepp --help`` and the app's first page read, stays free of numpy.
    The math imports nothing of the catalogue, so the two never import each other."""
    def call(*args, **kwargs):
        import kepp_core.metrics

        return getattr(kepp_core.metrics, name)(*args, **kwargs)

    call.__name__ = call.__qualname__ = name
    return call


_kepp, _kepp_episodes, _pdpp, _pdpp_printed, _vpn = map(
    _metrics_function, ("kepp_metrics", "kepp_episode_values", "pdpp_metrics", "pdpp_printed_metrics", "vpn_metrics"))
_kepp_runs, _pdpp_runs, _pdpp_printed_runs, _vpn_runs = map(
    _metrics_function, ("kepp_run_metrics", "pdpp_run_metrics", "pdpp_printed_run_metrics", "vpn_run_metrics"))


@dataclass(frozen=True, kw_only=True)
class FamilyMetric:
    """One metric of a code: ``key`` (as the code's function returns it), ``column`` (its field in table
    rows, protocol summaries and the API's tables), ``header`` (its name in a table: the code named) and
    what it measures."""

    key: str
    column: str
    header: str
    description: str


@dataclass(frozen=True, kw_only=True)
class MetricFamily:
    """One evaluation code: its ``name`` (``--metrics NAME``), readable ``label``, where the code lives
    (``source``), its metrics in table order and what computes them: ``compute(pred, gt, batch_size)``,
    a dict by metric key, episodes in the given order, record by record or on ``[N, T]`` arrays.

    ``table``: the keys of the metrics the method × T table shows (None: every one). ``per_episode``:
    where those are means over episodes, their array path on ``[N, T]`` arrays of one T, ``(values by key,
    each episode's value by key)``: a one-seed table resamples the episodes for its interval (a code
    without one, whose numbers are per batch, shows none). ``runs``: where the code counts every run of a table
    at once, ``runs(pred, gt, starts, batch_size, iou=None)`` on ``[N, T]`` arrays of one T whose runs' rows are
    consecutive from each of ``starts``: per metric key, one value per run, each what ``compute`` gives on that
    run's rows alone (``iou``: the rows' set IoUs where the caller has them); a code without one is computed run
    by run (:meth:`run_scores`)."""

    name: str
    label: str
    source: str
    metrics: tuple[FamilyMetric, ...]
    compute: Callable[[Plans, Plans, int], dict]
    table: tuple[str, ...] | None = None
    per_episode: Callable[[np.ndarray, np.ndarray], tuple[dict[str, float], dict[str, np.ndarray]]] | None = None
    runs: Callable[..., dict[str, np.ndarray]] | None = None

    def __post_init__(self) -> None:
        keys = [m.key for m in self.metrics]
        unknown = sorted(set(self.table or ()) - set(keys))
        if unknown or len(set(keys)) != len(keys):
            raise KeppError(f"metric code {self.name!r}: table {unknown or keys}: expected distinct metrics, the "
                            f"table's among {', '.join(keys)}")

    @property
    def columns(self) -> tuple[str, ...]:
        """The family's row fields, in table order."""
        return tuple(m.column for m in self.metrics)

    @property
    def table_metrics(self) -> tuple[FamilyMetric, ...]:
        """The metrics the method × T table shows, in table order."""
        return tuple(m for m in self.metrics if self.table is None or m.key in self.table)

    def header(self, key: str) -> str:
        """The table header of the metric ``key`` (or of its column)."""
        for m in self.metrics:
            if key in (m.key, m.column):
                return m.header
        raise unknown_name_error(f"{self.name} metric", key, [m.key for m in self.metrics])

    def scores(self, pred: Plans, gt: Plans, batch_size: int | None = None) -> dict:
        """What this code reports on these plans (episodes in the given order, batches of ``batch_size``; None:
        the field's codes' batch, :data:`kepp_core.metrics.BATCH`), by metric key in table order."""
        out = self.compute(pred, gt) if batch_size is None else self.compute(pred, gt, batch_size)
        return {m.key: out[m.key] for m in self.metrics}

    def run_scores(self, pred: np.ndarray, gt: np.ndarray, starts, batch_size: int | None = None,
                   iou: np.ndarray | None = None) -> dict[str, list[float]]:
        """What this code reports on each run of ``[N, T]`` arrays of one T (each run's rows consecutive, from each
        of ``starts``, ascending from 0, to the next): by metric key in table order, one number per run, each what
        :meth:`scores` gives on the run's rows alone; every run at once where the code counts them so (its ``runs``),
        else run by run. ``iou``: the rows' set IoUs where the caller has them.

        >>> import numpy as np
        >>> family("vpn").run_scores(np.array([[1, 2], [1, 3]]), np.array([[1, 3], [1, 3]]), [0, 1])["sr"]
        [0.0, 100.0]
        """
        if self.runs is not None:
            size = {} if batch_size is None else {"batch_size": batch_size}
            out = self.runs(pred, gt, starts, iou=iou, **size)
            return {m.key: out[m.key].tolist() for m in self.metrics}
        bounds = [*map(int, starts), len(gt)]
        alone = [self.scores(pred[a:b], gt[a:b], batch_size) for a, b in zip(bounds, bounds[1:])]
        return {m.key: [float(s[m.key]) for s in alone] for m in self.metrics}

    def columns_of(self, pred: Plans, gt: Plans, batch_size: int | None = None) -> dict:
        """:meth:`scores` under the code's row fields (``pdpp_sr``, ``vpn_miou``, ...)."""
        values = self.scores(pred, gt, batch_size)
        return {m.column: values[m.key] for m in self.metrics}

    def summary(self, values: dict) -> str:
        """One line of this code's ``values`` (by key) under its headers, two decimals.

        >>> family("vpn").summary({"sr": 50, "macc": 75, "miou": 60, "miou_classic": 70})
        'ViterbiPlanNet: SR (ViterbiPlanNet) 50.00, mAcc (ViterbiPlanNet) 75.00, mIoU (ViterbiPlanNet acc_iou) 60.00, mIoU (ViterbiPlanNet, classic) 70.00'
        """
        return f"{self.label}: " + ", ".join(f"{m.header} {values[m.key]:.2f}" for m in self.metrics)


def _metric(family_name: str, key: str, header: str, description: str, column: str | None = None) -> FamilyMetric:
    return FamilyMetric(key=key, column=column or f"{family_name}_{key}", header=header, description=description)


_PDPP_SOURCE = "PDPP's utils/accuracy.py with inference.py's aggregation (github.com/MCG-NJU/PDPP)"
_PDPP_METRICS = (
    _metric("pdpp", "sr", "SR (PDPP)", "trajectory_success_rate per batch, in float32, batches weighted "
                                       "by their episodes (%)"),
    _metric("pdpp", "macc", "mAcc (PDPP)", "acc1 per batch, in float32, batches weighted by their episodes (%)"),
    _metric("pdpp", "miou_batch", "mIoU (PDPP, per batch)", "MIoU1: IoU of the action sets of each whole batch, "
                                                           "batches weighted by their episodes (%)"),
    _metric("pdpp", "miou_episode", "mIoU (PDPP, per episode)", "MIoU2: each episode's set IoU, averaged (%)"),
    _metric("pdpp", "first_acc", "first step (PDPP)", "A0: the plan's first step right, in float32 per batch (%)"),
    _metric("pdpp", "last_acc", "last step (PDPP)", "AT: the plan's last step right, in float32 per batch (%)"),
)
_PDPP_TABLE = ("sr", "macc", "miou_batch", "miou_episode")


def _printed(pdpp: tuple[FamilyMetric, ...]) -> MetricFamily:
    """PDPP's metrics as its ``inference.py`` returns and prints them (each average through a float32
    tensor): the same keys, columns ``pdpp_printed_*``, each header saying so."""
    return MetricFamily(name="pdpp-printed", label="PDPP (as printed)", source=f"{_PDPP_SOURCE}, every average "
                        "through float32 as inference.py prints it", metrics=tuple(
                            _metric("pdpp_printed", m.key, f"{m.header[:-1]}, as printed)",
                                    f"{m.description}; through float32 as printed") for m in pdpp),
                        compute=_pdpp_printed, table=_PDPP_TABLE, runs=_pdpp_printed_runs)


FAMILIES: dict[str, MetricFamily] = {f.name: f for f in (
    # The kepp family's columns and headers are the tables' own since the first release (kept as they are).
    MetricFamily(name="kepp", label="KEPP (this package)", source="kepp_core/metrics.py", metrics=(
        _metric("kepp", "sr", "SR", "whole plan right (%)", "SR"),
        _metric("kepp", "macc", "mAcc", "steps right, over all episodes and positions (%)", "mAcc"),
        _metric("kepp", "miou_episode", "mIoU", "IoU of each episode's predicted and true action sets, averaged "
                                                 "over episodes (%)", "mIoU"),
        _metric("kepp", "miou_batch", "mIoU_b256", "IoU of the action sets of consecutive batches of 256 episodes, "
                                                  "the batches' plain mean (%)", "mIoU_b256"),
        _metric("kepp", "ends", "ends", "the plan's first and last step both right (%)", "ends"),
        _metric("kepp", "sr_ends", "SR_ends", "plans right among the episodes whose ends are right (%)", "SR_ends"),
    ), compute=_kepp, table=("sr", "macc", "miou_episode"), per_episode=_kepp_episodes, runs=_kepp_runs),
    MetricFamily(name="pdpp", label="PDPP", source=_PDPP_SOURCE, metrics=_PDPP_METRICS, compute=_pdpp,
                 table=_PDPP_TABLE, runs=_pdpp_runs),
    _printed(_PDPP_METRICS),
    MetricFamily(name="vpn", label="ViterbiPlanNet", source="ViterbiPlanNet's metrics.py with main.py's aggregation "
                                                            "(github.com/Gigi-G/ViterbiPlanNet)", metrics=(
        _metric("vpn", "sr", "SR (ViterbiPlanNet)", "success_rate per batch, batches weighted by their episodes (%)"),
        _metric("vpn", "macc", "mAcc (ViterbiPlanNet)", "mean_category_acc per batch, weighted (%)"),
        _metric("vpn", "miou", "mIoU (ViterbiPlanNet acc_iou)", "acc_iou per episode: & and | applied to the action "
                                                                "ids bit by bit, not a set IoU; batches weighted (%)"),
        _metric("vpn", "miou_classic", "mIoU (ViterbiPlanNet, classic)", "miou(): action sets growing from the "
                                                                         "first episode on, averaged over prefixes (%)"),
    ), compute=_vpn, runs=_vpn_runs),
)}
DEFAULT_FAMILY = "kepp"


def check_columns(codes) -> None:
    """Refuse two codes that store a metric under one column (a row holds every chosen code's columns).

    >>> check_columns([family("vpn"), family("vpn")])
    Traceback (most recent call last):
    kepp_core.errors.KeppError: metric code 'vpn': column 'vpn_sr' is already metric code 'vpn''s
    """
    owner: dict[str, str] = {}
    for code in codes:
        for column in code.columns:
            if column in owner:
                raise KeppError(f"metric code {code.name!r}: column {column!r} is already metric code {owner[column]!r}'s")
            owner[column] = code.name


check_columns(FAMILIES.values())


def codes_named(form: str = "{name}: {label}", *, skip: tuple[str, ...] = ()) -> str:
    """Every evaluation code of :data:`FAMILIES` (but ``skip``), each written as ``form`` (its fields:
    ``name``, ``label``, ``source``), joined by "; ": the one way help texts name the codes.

    >>> codes_named("`{name}`", skip=("kepp",))
    '`pdpp`; `pdpp-printed`; `vpn`'
    """
    return "; ".join(form.format(name=n, label=f.label, source=f.source) for n, f in FAMILIES.items() if n not in skip)


def family(name: str) -> MetricFamily:
    """The metric family ``name`` (KeppError listing the known ones otherwise)."""
    if name not in FAMILIES:
        raise unknown_name_error("metric family", name, FAMILIES)
    return FAMILIES[name]


def protocol_metrics(pred: Plans, gt: Plans, protocol: str, batch_size: int | None = None) -> dict:
    """The metrics the evaluation code ``protocol`` (a name of :data:`FAMILIES`: ``kepp``, ``pdpp``,
    ``pdpp-printed``, ``vpn``) reports on these plans, episodes in the given order, in batches of
    ``batch_size``: ``pdpp`` → ``sr, macc, miou_batch, miou_episode, first_acc, last_acc``
    (``pdpp-printed``: the same, each through float32 as PDPP prints it);
    ``vpn`` → ``sr, macc, miou, miou_classic``; ``kepp`` → ``sr, macc, miou_episode, miou_batch,
    ends, sr_ends`` (percent).

    >>> sorted(protocol_metrics([(1, 2)], [(1, 2)], "vpn"))
    ['macc', 'miou', 'miou_classic', 'sr']
    """
    return family(protocol).scores(pred, gt, batch_size)


@contextmanager
def extra_family(code: MetricFamily) -> Iterator[MetricFamily]:
    """Add the evaluation code ``code`` to :data:`FAMILIES` for the duration of a ``with`` block (tests
    register a throw-away code this way, as :func:`kepp_core.catalog.extra_method` a method)."""
    if code.name in FAMILIES:
        raise KeppError(f"metric code {code.name!r} is already registered")
    check_columns((*FAMILIES.values(), code))
    FAMILIES[code.name] = code
    try:
        yield code
    finally:
        del FAMILIES[code.name]


# --- the unified benchmark (ViterbiPlanNet's split lists) -------------------------------------------------------
# Its interval: a percentile bootstrap over the seeds' numbers (calculate_results.py): Python's `random` seeded
# with 42 once, then for SR, mAcc and mIoU in that order 1,000 resamples of n values with random.choice, the
# 5th and 95th percentiles of their means (numpy's linear interpolation); it reports "mean ± (95th − 5th)".
BENCHMARK_BOOTSTRAP_SEED = 42
BENCHMARK_BOOTSTRAP_RESAMPLES = 1000
BENCHMARK_BOOTSTRAP_PERCENTILES = (5.0, 95.0)
BENCHMARK_CODE = "vpn"  # the code whose numbers the benchmark reports and bootstraps (ViterbiPlanNet's)
BENCHMARK_BOOTSTRAP_METRICS = ("sr", "macc", "miou")  # the order its stream of draws serves them (each its code's key)
BENCHMARK_HORIZONS = (3, 4, 5, 6)
# The benchmark's datasets (their split lists, protocols/benchmark-<name>.toml, the literature's dataset names).
BENCHMARK_DATASETS = {
    "crosstask-105": "CrossTask, 105 actions (steps of one name are one action)",
    "crosstask-133": "CrossTask, 133 actions (each task's own steps)",
    "coin": "COIN, 778 step ids",
    "niv": "NIV, 48 actions",
}
LITERATURE_SPLITS = {"paper": "the paper's own split", "unified": "ViterbiPlanNet's unified split lists"}
# The line under a table of published numbers that holds a row marked "unconfirmed" (the CLI's, results.md's, the app's)
LITERATURE_UNCONFIRMED = ("unconfirmed: quoted second-hand (the source column says from where), not checked here "
                          "against a readable copy of its paper")
BENCHMARK_SEEDS = 5

LITERATURE_FILE = "literature.toml"  # kepp_core/evaluation/literature.toml: published numbers, each cited

__all__ = [
    "BENCHMARK_CODE", "BENCHMARK_DATASETS", "BENCHMARK_HORIZONS", "BENCHMARK_SEEDS", "BENCHMARK_BOOTSTRAP_METRICS",
    "BENCHMARK_BOOTSTRAP_PERCENTILES", "BENCHMARK_BOOTSTRAP_RESAMPLES", "BENCHMARK_BOOTSTRAP_SEED",
    "DEFAULT_FAMILY", "FAMILIES", "FamilyMetric", "LITERATURE_FILE", "LITERATURE_SPLITS", "LITERATURE_UNCONFIRMED",
    "MetricFamily", "check_columns", "codes_named", "extra_family", "family", "protocol_metrics", "Plans",
]
