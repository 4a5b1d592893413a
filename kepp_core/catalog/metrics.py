"""The names of what is measured: the evaluation tables' metrics, the paired test and the paper's
failure patterns (their rules: :mod:`kepp_core.metrics`, :mod:`kepp_core.evaluation.failures`)."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = [
    "AB_CELLS", "AB_STRATIFIED_TEST", "AB_TEST", "BOOTSTRAP_RESAMPLES", "GROUP_BY", "METRIC_KEYS", "METRIC_NAMES",
    "METRICS", "PAIR_METRICS",
    "PAIRED_TEST", "PATTERN_LABELS", "P_FLOOR", "PATTERNS", "SIGNIFICANCE", "Metric", "p_text", "pattern_label",
    "verdict_words",
]

@dataclass(frozen=True)
class Metric:
    """A metric of the evaluation tables: its key in rows and records, its name in a table's
    header and what it measures."""

    key: str
    name: str
    description: str = field(default="", compare=False)


METRICS = (
    Metric("SR", "SR", "success rate: the whole plan right (%)"),
    Metric("mAcc", "mAcc", "mean accuracy: steps right (%)"),
    Metric("mIoU", "mIoU", "IoU of the predicted and true action sets, per episode (%)"),
    Metric("mIoU_b256", "mIoU (batch 256)", "IoU of the predicted and true action sets per batch of 256 "
                                           "episodes, the batches' plain mean (PDPP's code weights each batch by "
                                           "its episodes: the pdpp metric family, kepp_core.catalog.benchmark) (%)"),
    Metric("ends", "ends right", "both the first and the last step right (%)"),
    Metric("SR_ends", "SR if ends right", "plans right among the episodes whose first and last steps are right (%)"),
)
METRIC_KEYS = tuple(m.key for m in METRICS)
METRIC_NAMES = {m.key: m.name for m in METRICS}


# The paired test of two methods (kepp protocol, the Results page) and the per-episode record field
# it compares for each metric that has one.
PAIRED_TEST = "two-sided paired sign-flip permutation test on per-episode success over (seed, test episode) units"
PAIR_METRICS = {"SR": "success", "mAcc": "acc"}
SIGNIFICANCE = 0.05  # the level a paired difference is called significant at

# Two methods episode by episode (kepp_core.evaluation.compare): the four cells of the 2x2 table
# (their names in URLs and the API, their readable labels), the test of the discordant cells, and
# the paired bootstrap of the SR difference (resamples drawn unless told otherwise).
AB_CELLS = {"both": "both right", "a-only": "A right, B wrong", "b-only": "B right, A wrong",
            "neither": "both wrong"}
AB_TEST = "McNemar's exact test (two-sided, binomial on the discordant episodes)"
# A one-run method (imported predictions) against a several-seed one: one 2x2 per seed, combined by strata
AB_STRATIFIED_TEST = ("Cochran–Mantel–Haenszel test over the seeds (one stratum per seed of the several-seed "
                      "method against the one run: methods × right/wrong, continuity-corrected, χ² with 1 df; "
                      "the one run counted once: the same run in every stratum)")
BOOTSTRAP_RESAMPLES = 10_000

# The columns a predictions table groups by (kepp_core.evaluation.groups, the app's Groups page), each with what
# it holds: the records' own and two judged on the plans. Their names are the URL's and the table's headers.
GROUP_BY = {
    "method": "the method (its catalogue name)",
    "T": "the horizon",
    "seed": "the training seed (empty for imported predictions, which name none)",
    "task": "the task",
    "setting": "the observation setting",
    "pattern": "the failure pattern the episode is filed under (`right` for a right plan)",
    "first_right": "the plan's first step right",
    "last_right": "the plan's last step right",
    "source": "the records file the row was read from",
    "imported": "the predictions file an imported method's plans came from",
}
P_FLOOR = 1e-300  # below it a p-value is written "< 1e-300": McNemar's exact tail underflows to 0.0 near 5e-324


def p_text(p: float) -> str:
    """A p-value as every tile, table and verdict writes it: four significant digits, two in scientific
    notation below 1e-4, and ``< 1e-300`` below :data:`P_FLOOR` (a tail that underflows a double reads
    0.0, which no test's p is); ``—`` for none (NaN).

    >>> [p_text(x) for x in (1.0, 0.25, 0.005412, 3.24e-12, 4e-320, 0.0, float("nan"))]
    ['1', '0.25', '0.005412', '3.2e-12', '< 1e-300', '< 1e-300', '—']
    """
    p = float(p)
    if p != p:
        return "—"
    if p < P_FLOOR:
        return f"< {P_FLOOR:g}"
    return f"{p:.1e}" if p < 1e-4 else f"{p:.4g}"


# --- failure patterns (the paper's failure analysis) ---------------------------------------------------------
PATTERNS = ("wrong_endpoint", "same_start_end", "repeated_subsequence", "other")
# "wrong_endpoint" is judged on the predicted endpoints â₁, â_T (the step model's; a method without one:
# its plan's own ends), so its label names them; the ends slice below is judged on the plan's own ends.
PATTERN_LABELS = {
    "wrong_endpoint": "wrong predicted endpoint",
    "same_start_end": "same start and end step",
    "repeated_subsequence": "repeated sub-sequence",
    "other": "other",
}


def pattern_label(pattern: str | None) -> str:
    """A failure pattern's readable name; a comma-separated list of patterns is named one by one.

    >>> pattern_label("wrong_endpoint, repeated_subsequence")
    'wrong predicted endpoint, repeated sub-sequence'
    >>> pattern_label("")
    '—'
    """
    names = [p.strip() for p in str(pattern or "").split(",") if p.strip()]
    return ", ".join(PATTERN_LABELS.get(p, p.replace("_", " ")) for p in names) or "—"


def verdict_words(success: bool, pattern: str | None) -> str:
    """A judged record's verdict in words: ``success``, or ``failure:`` and the pattern it is filed under (the
    store's judging decides the pattern, once, for lists, counts, cards, slides and decks alike; nothing judges
    it again).

    >>> verdict_words(False, "wrong_endpoint"), verdict_words(True, "")
    ('failure: wrong predicted endpoint', 'success')
    """
    return "success" if success else f"failure: {pattern_label(pattern)}"

