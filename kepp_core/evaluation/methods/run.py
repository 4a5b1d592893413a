"""Running registered methods on the test episodes of one horizon: :func:`evaluate_horizon`."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING
from pathlib import Path

import numpy as np

from kepp_core.catalog.benchmark import DEFAULT_FAMILY, family
from kepp_core.catalog import CONFIG_FILE, models_dir
from kepp_core.data.records import Dataset
from kepp_core.errors import KeppError
from kepp_core.evaluation.methods.base import NO_TEXT, REGISTRY, EvalContext, Method, MethodOutput, get_method
from kepp_core.evaluation.options import EvalOptions
from kepp_core.evaluation.uncertainty import episode_uncertainty
from kepp_core.graph.build import build_graph
from kepp_core.metrics import success_rate
from kepp_core.training.data import EpisodeTensors, episode_tensors

__all__ = ["HorizonEvaluation", "default_methods", "evaluate_horizon", "run_method", "skip_reason"]

if TYPE_CHECKING:  # the type of the LLM methods' recommender, for readers and type checkers
    from kepp_core.llm.recommend import LLMRecommender

NO_LLM = "no LLM endpoint configured (the LLM url and model options, or KEPP_LLM_URL and KEPP_LLM_MODEL)"


@dataclass
class HorizonEvaluation:
    """Results of every method on the test episodes of one horizon and setting, and the step
    model's endpoints ``[N, 2]`` and their scores when a method used them."""

    horizon: int
    setting: str
    data: EpisodeTensors
    outputs: dict[str, MethodOutput]
    step_accuracy: dict[str, float] | None
    skipped: dict[str, str]
    step_endpoints: np.ndarray | None = None
    step_scores: np.ndarray | None = None

    def rows(self, families: Sequence[str] = ()) -> list[dict]:
        """One table row per method: this package's columns (SR, mAcc, mIoU, ...; + LLM and uncertainty
        columns when present), and the columns of every other evaluation code in ``families`` (``pdpp_sr``, ...),
        each computed by its code (:mod:`kepp_core.catalog.benchmark`)."""
        gt = self.data.actions.numpy()
        out = []
        for name, o in self.outputs.items():
            out.append({"method": name, "T": self.horizon, "setting": self.setting,
                        **family(DEFAULT_FAMILY).columns_of(o.plans, gt),
                        "episodes": len(gt), "episodes_per_s": len(gt) / max(o.seconds, 1e-9)})
            for fam in families:
                if fam != DEFAULT_FAMILY:
                    out[-1].update(family(fam).columns_of(o.plans, gt))
            if o.llm_summary is not None:
                u = o.llm_summary
                out[-1].update({"llm_plans": u["llm"], "llm_fallbacks": u["fallback"], "fallback": u["fallback_name"],
                                "fallback_reasons": u["fallback_reasons"]})
            if o.uncertainty is not None:
                u = o.uncertainty
                out[-1].update({"K": u.samples, "NLL": u.nll, "KL": u.kl, "ModePrec": u.mode_precision,
                                "ModeRec": u.mode_recall, "pred_modes": u.predicted_modes,
                                "gt_modes": u.truth_modes})
        return out


def default_methods() -> tuple[str, ...]:
    """The registered methods that need no LLM (nor the S3D text tower) and run by default, in registration order
    (``kepp eval``'s default; the ``+dec`` and ``-struct`` rows run when named)."""
    return tuple(name for name, m in REGISTRY.items() if not m.needs_llm and m.default)


def evaluate_horizon(ds: Dataset, models: str | Path | None, horizon: int, methods: Sequence[str] | None = None,
                     options: EvalOptions = EvalOptions(), llm: LLMRecommender | None = None,
                     log: Callable[[str], None] = lambda s: None) -> HorizonEvaluation:
    """Run ``methods`` (names in the registry; default: every method that needs no LLM) on the
    test episodes of ``horizon`` with ``options``.

    Methods whose models are missing are skipped (listed in ``skipped``) unless
    ``options.strict``. ``options.samples=K`` (K ≥ 2) also draws K plans per episode from the
    sampled methods and scores them with
    :func:`~kepp_core.evaluation.uncertainty.episode_uncertainty`. ``llm``: the
    :class:`~kepp_core.llm.LLMRecommender` the LLM methods need (skipped without it, unless strict).
    """
    chosen = [get_method(name) for name in (default_methods() if methods is None else methods)]
    test = episode_tensors(ds, horizon, "test", options.setting, options.m)
    hdir = models_dir(models, horizon) if models is not None else None
    ctx = EvalContext(ds, horizon, test, build_graph(ds, "train"), hdir, options, llm)
    outputs: dict[str, MethodOutput] = {}
    skipped: dict[str, str] = {}
    for method in chosen:
        why = skip_reason(method, ctx)
        if why and options.strict:
            raise KeppError(f"method {method.name!r} needs trained models: {why}")
        if why:
            skipped[method.name] = why
            continue
        outputs[method.name] = ctx.cache.outputs[method.name] = run_method(method, ctx, log)
    c = ctx.cache
    return HorizonEvaluation(horizon, options.setting, test, outputs, ctx.step_accuracy(), skipped,
                             c.step_endpoints, c.step_scores)


def skip_reason(method: Method, ctx: EvalContext) -> str | None:
    """Why ``method`` cannot run here (a model it requires is missing, no LLM), or None."""
    if ctx.hdir is None:
        return "no models folder given"
    for role in method.requires:
        if not (ctx.folder(role) / CONFIG_FILE).is_file():
            return f"{ctx.folder(role)} not found"
    if method.needs_llm and ctx.llm is None:
        return NO_LLM
    if method.entry.text and ctx.options.encoder is None:
        return NO_TEXT
    return None


def run_method(method: Method, ctx: EvalContext, log: Callable[[str], None] = lambda s: None) -> MethodOutput:
    """Run one method, time it, score its sampled plans (``ctx.options.samples``) and log its SR."""
    t0 = time.perf_counter()
    out = method.plan(ctx)
    out.plans = np.asarray(out.plans)
    out.seconds = time.perf_counter() - t0
    if ctx.options.samples and method.sampled:
        out.samples = np.asarray(out.samples)
        out.uncertainty = episode_uncertainty(out.samples, ctx.test.episodes, ctx.ds.num_actions)
        out.seconds = time.perf_counter() - t0
    else:
        out.samples = None
    note = ""
    if out.llm_summary is not None:
        u = out.llm_summary
        note = f", LLM plans {u['llm']}/{u['episodes']} (fallback {u['fallback_name']!r}: {u['fallback']})"
    log(f"T={ctx.horizon} {ctx.options.setting} {method.name}: SR {success_rate(out.plans, ctx.gt):.2f} "
        f"({time.perf_counter() - t0:.1f}s{note})")
    return out
