"""The named cuts of a method's evaluated episodes (metrics by slice: each cut's rule is in
:mod:`kepp_core.evaluation.slices`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from kepp_core.catalog.metrics import PATTERN_LABELS

__all__ = ["SLICE_BY", "SLICE_CUTS", "SLICE_ENDS_RIGHT", "SLICE_ENDS_WRONG", "SLICE_SUCCESS", "SliceCut"]

SLICE_SUCCESS = "success"  # the pattern slice of the episodes planned right
SLICE_ENDS_RIGHT, SLICE_ENDS_WRONG = "right", "wrong"  # the ends slice's values


@dataclass(frozen=True)
class SliceCut:
    """One way to cut a method's evaluated episodes: its ``name`` (a URL's ``by=``, the API's ``by``),
    its readable ``label``, the readable names of the values that are not data (``value_labels``, in
    reading order), how a value reads otherwise (``value_format``) and whether the cut spans every
    horizon (the horizon cut: its table counts every T and its values are horizons, ``int``)."""

    name: str
    label: str
    value_labels: dict[str, str] = field(default_factory=dict)
    value_format: str = "{}"
    every_horizon: bool = False

    def value_label(self, value: str, names: dict[str, str] | None = None) -> str:
        """A value's readable name (``names``: readable names of data values, e.g. the task names).

        >>> SLICE_CUTS["horizon"].value_label("4"), SLICE_CUTS["ends"].value_label("wrong")
        ('T=4', "the plan's first or last step wrong")
        """
        if value in self.value_labels:
            return self.value_labels[value]
        return self.value_format.format((names or {}).get(value, value))


# Every cut, in the order a page offers them.
SLICE_CUTS = {c.name: c for c in (
    SliceCut("task", "task"),
    SliceCut("pattern", "failure pattern", {SLICE_SUCCESS: "success (no failure)", **PATTERN_LABELS}),
    SliceCut("horizon", "horizon (T)", value_format="T={}", every_horizon=True),
    SliceCut("ends", "the plan's ends", {SLICE_ENDS_RIGHT: "the plan's first and last step right",
                                         SLICE_ENDS_WRONG: "the plan's first or last step wrong"}),
)}
SLICE_BY = {name: cut.label for name, cut in SLICE_CUTS.items()}  # each cut's readable name
