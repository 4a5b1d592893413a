"""The options of one evaluation run, typed and frozen: what ``kepp eval``, ``kepp protocol``
and the demo table choose (the observation setting, sampler, seed, sampled plans per episode,
the graph-decoded rows' decoding). The per-run caches live beside them in
:class:`~kepp_core.evaluation.methods.base.EvalCache`; errors name the option and its value
(the commands layer adds the flag)."""

from __future__ import annotations

from dataclasses import dataclass, field

from kepp_core.catalog import DEFAULT_M, DEFAULT_SETTING, GRAPH_DECODING, MAX_SEED, TOPK, parse_override
from kepp_core.errors import KeppError
from kepp_core.graph.decoding import check_weight
from kepp_core.video.s3d_spec import is_s3d

__all__ = ["DecodeOverride", "EvalOptions"]

MAX_SAMPLES = 1000  # sampled plans per episode (each is a full sampling run)

@dataclass(frozen=True)
class DecodeOverride:
    """How the graph-decoded rows decode, where it is not chosen on validation: endpoint ``mode``
    (for the rows that allow it: the ``+dec`` rows; a ``+jdec`` row keeps its joint mode) and
    transition weight ``lam`` (every graph-decoded row; None: chosen on validation), ``k`` of the
    ``topk`` mode, and ``samples`` (K: emissions from the mean of K sampled action blocks);
    ``save``: store a choice made on validation in the models folder (default: in KEPP's cache
    home). :func:`kepp_core.evaluation.methods.choice.choose` applies it."""

    mode: str | None = None
    lam: float | None = None
    k: int = TOPK
    samples: int = 1
    save: bool = False

    def __post_init__(self) -> None:
        modes = GRAPH_DECODING.modes  # the modes --decode names: the +dec rows' (choice.row_modes)
        if self.mode is not None and self.mode not in modes:
            raise KeppError(f"decode mode {self.mode!r}: expected one of {', '.join(modes)}")
        if self.lam is not None:
            check_weight(self.lam, "decode weight")
        if self.samples < 1 or self.k < 1:
            raise KeppError(f"decode samples {self.samples!r} and top-k {self.k!r}: expected whole numbers >= 1")


@dataclass(frozen=True)
class EvalOptions:
    """One evaluation run's choices: the observation ``setting`` and ``m``, a ``sampler`` and
    ``sampler_steps`` overriding the models' own (None: their own), the ``seed``, ``samples``
    (K >= 2 plans per episode from the sampled methods; 0: none), ``strict`` (fail instead of
    skipping a method without models), the graph-decoded rows' ``decode`` and ``encoder``: the
    ``s3d:PATH`` spec whose text tower the text-grounded rows (``graph-text``) score step names with
    (None: those rows are skipped)."""

    setting: str = DEFAULT_SETTING
    m: int = DEFAULT_M
    sampler: str | None = None
    sampler_steps: int | None = None
    seed: int = 0
    samples: int = 0
    strict: bool = False
    decode: DecodeOverride = field(default_factory=DecodeOverride)
    encoder: str | None = None

    def __post_init__(self) -> None:
        if self.samples and not 2 <= self.samples <= MAX_SAMPLES:
            raise KeppError(f"samples={self.samples}: sampled plans need K from 2 to {MAX_SAMPLES} per episode")
        if not 0 <= self.seed <= MAX_SEED:
            raise KeppError(f"seed={self.seed}: expected a whole number from 0 to {MAX_SEED}")
        if self.encoder is not None and not is_s3d(self.encoder):
            raise KeppError(f"encoder {self.encoder!r}: the text-grounded rows need the S3D text tower, "
                            "an s3d:PATH spec")


def parse_decode_mode(text: str) -> tuple[str, int]:
    """A decode mode option, ``free``, ``pinned``, ``topk`` or ``topk:K`` → ``(mode, k)`` (KeppError naming
    the value otherwise): the graph decoder's (:func:`kepp_core.catalog.parse_override`).

    >>> parse_decode_mode("topk:5"), parse_decode_mode("pinned")
    (('topk', 5), ('pinned', 3))
    """
    return parse_override(text)
