"""Graph-aware decoding of the planning methods: the ``<method>+dec`` rows.

A planning model decodes its plan by an argmax per position. ``<method>+dec`` instead takes
the exact best plan (:func:`kepp_core.graph.decoding.decode`, batched Viterbi) under

    Σ_t log p_model(a_t | t) + λ · Σ_t log P(a_t+1 | a_t)   (+ the endpoint terms)

with ``p_model`` from the model's ``x_0`` action block (``softmax(x_0 / 0.1)``, the
planner's own confidence scaling), ``P`` the P²KG's transition probabilities and the
endpoints ``free``, ``pinned`` to the step model's ``â_1`` / ``â_T``, or ``topk`` (its ``k``
most confident first and last actions, scored by their log-confidences). Methods given
ground-truth endpoints (``kepp-gt``) pin to those.

**Choosing λ and the endpoint mode.** On a validation part cut from the *training* videos
(the planning model's own held-out ``val`` part: same ``val_fraction`` and seed as its
training, :func:`~kepp_core.training.data.episode_tensors`), never on the test split: the
base method runs on those episodes with a graph built from the remaining (``fit``) training
videos only, every mode × λ of :data:`LAMBDAS` decodes its plans, and the best validation SR
wins (then mAcc; ties keep the earlier, simpler choice: λ = 0 before larger, ``free`` before
``pinned`` before ``topk``). The choice is stored with the models, ``ROOT/T<h>/decoding.json``
(written atomically; one entry per method, remade when a model it depends on changed), and
``kepp eval --decode MODE --decode-weight LAMBDA`` overrides either part (the other is
still chosen on validation).

**Mean-of-K emissions** (``kepp eval --decode-samples K``, default 1): ``p_model`` comes from
the mean of ``K`` sampled ``x_0`` action blocks instead of one: the block the base method's
own plan came from plus ``K - 1`` more, sampled in one batch (:func:`emission_block`). The
choice of λ and mode is then made with the same mean-of-K emissions and stored under the key
``<base>@K<K>`` (``K = 1``: the base name, as before), so choices for different ``K`` coexist.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

import numpy as np

from kepp_core.catalog import DECODING_FILE, METHODS, TRUTH, MethodEntry
from kepp_core.data.records import Dataset, Video
from kepp_core.evaluation.methods import baselines, kepp  # noqa: F401  (the base methods register first)
from kepp_core.evaluation.methods.base import EvalContext, Method, MethodOutput, get_method, register
from kepp_core.evaluation.options import DECODE_MODES, TOPK
from kepp_core.graph.build import build_graph
from kepp_core.graph.decoding import decode, emission_log_probs, transition_log_probs
from kepp_core.errors import KeppError
from kepp_core.io import atomic_write_json, read_json
from kepp_core.metrics import mean_accuracy, success_rate
from kepp_core.models.checkpoint import read_config
from kepp_core.training.data import episode_tensors

LAMBDAS = (0.0, 0.1, 0.3, 1.0, 3.0, 10.0)


@dataclass(frozen=True)
class DecodeChoice:
    """How a method's plans are decoded: endpoint ``mode``, transition weight ``lam``, top-``k``."""

    mode: str
    lam: float
    k: int = TOPK


def decode_samples(ctx: EvalContext) -> int:
    """K of mean-of-K decoding in ``ctx`` (1: the one sampled block)."""
    return ctx.options.decode.samples


def emission_block(ctx: EvalContext, out: MethodOutput, k: int = 1) -> np.ndarray:
    """The action block ``[N, T, A]`` that ``+dec`` decodes: the base method's own sampled
    ``x_0`` block for ``k = 1``; for ``k > 1`` the mean of it and ``k - 1`` more samples
    (:meth:`EvalContext.more_blocks`, drawn in one batch)."""
    block = out.action_block
    if k == 1:
        return block
    extra = np.asarray(ctx.more_blocks(out, k - 1), dtype=np.float64)  # [N, k-1, T, A]
    return (block.astype(np.float64) + extra.sum(axis=1)) / k


def decode_block(block: np.ndarray, transitions: np.ndarray, choice: DecodeChoice,
                 probs: np.ndarray | None) -> np.ndarray:
    """Decode action blocks ``[N, T, A]`` under ``choice``; ``probs`` ``[N, 2, A]``: the step
    model's scores of the first and last action (unused with ``free``), or with ``dist`` the
    probabilities of every first and last action."""
    e = emission_log_probs(block)
    if choice.mode == "dist":  # the full endpoint distributions: joint decoding (the +jdec rows)
        with np.errstate(divide="ignore"):
            logp = np.log(probs)
        return decode(e, transitions, choice.lam, "dist", start_logp=logp[:, 0], goal_logp=logp[:, 1]).plans
    if choice.mode == "free":
        return decode(e, transitions, choice.lam).plans
    if choice.mode == "pinned":
        return decode(e, transitions, choice.lam, "pinned", probs[:, 0].argmax(-1), probs[:, 1].argmax(-1)).plans
    k = min(choice.k, probs.shape[-1])
    top = np.argsort(-probs, axis=-1, kind="stable")[:, :, :k]  # [N, 2, k]
    logp = np.log(np.maximum(np.take_along_axis(probs, top, -1), 1e-12))
    return decode(e, transitions, choice.lam, "topk", top[:, 0], top[:, 1], logp[:, 0], logp[:, 1]).plans


def restrict_train(ds: Dataset, keep: set[str]) -> Dataset:
    """``ds`` with only the training videos whose ``task_id`` key is in ``keep`` left in the
    training split (the others move to the split ``unused``; vocabulary and test split unchanged)."""
    videos = [v if v.split != "train" or f"{v.task}_{v.id}" in keep else
              Video(v.id, v.task, v.steps, "unused", v.duration, v.feature_file, v.video_file) for v in ds.videos]
    return Dataset(ds.name, ds.actions, ds.tasks, videos, ds.root, ds.meta)


class Decoded(Method):
    """``<base>+dec``: the base planning method's action block decoded with the graph (the
    entry's ``base``), the endpoint mode chosen among ``modes``."""

    modes = DECODE_MODES

    def __init__(self, entry: MethodEntry) -> None:
        super().__init__(entry)
        self.base = get_method(entry.base)

    def plan(self, ctx: EvalContext) -> MethodOutput:
        outputs = ctx.cache.outputs
        out = outputs.get(self.base.name) or self.base.plan(ctx)
        outputs[self.base.name] = out
        choice = choose(ctx, self)
        k = decode_samples(ctx)
        plans = decode_block(emission_block(ctx, out, k), transition_log_probs(ctx.graph), choice, self.probs(ctx))
        return MethodOutput(plans, decoding={**asdict(choice), "samples": k})

    def probs(self, ctx: EvalContext) -> np.ndarray:
        """Endpoint scores ``[N, 2, A]``: the step model's, or one-hot ground truth."""
        if self.entry.endpoints != TRUTH:
            return ctx.endpoint_probs()
        gt = ctx.gt[:, [0, -1]]
        return (np.arange(ctx.ds.num_actions)[None, None] == gt[:, :, None]).astype(np.float64)


def _model_stamps(ctx: EvalContext, method: Decoded) -> dict[str, object]:
    """What the choice depends on: each required model's last training step and weights digest."""
    out = {}
    for role in method.requires:
        cfg = read_config(ctx.folder(role))
        out[ctx.folder(role).name] = [cfg.get("train_step"), (cfg.get("training") or {}).get("rank_digests")]
    return out


def choose(ctx: EvalContext, method: Decoded) -> DecodeChoice:
    """The decoding of ``method`` for ``ctx``: the override where complete, else the stored
    choice (``ROOT/T<h>/decoding.json``) when its models are unchanged, else chosen on
    validation and stored."""
    o = ctx.options.decode
    if o.mode is not None and o.lam is not None:
        return DecodeChoice(o.mode, o.lam, o.k)
    path = ctx.hdir / DECODING_FILE
    stored = _read(path)
    stamps = _model_stamps(ctx, method)
    k = decode_samples(ctx)
    key = method.base.name if k == 1 else f"{method.base.name}@K{k}"
    entry = stored.get(key)
    if not (entry and entry.get("models") == stamps):
        entry = select_on_validation(ctx, method)
        entry["models"] = stamps
        stored = _read(path)  # another method of this run may have written its entry meanwhile
        stored[key] = entry
        atomic_write_json(path, stored)
    best = entry["choice"]
    if o.mode is None and o.lam is None:
        return DecodeChoice(best["mode"], best["lam"], best["k"])
    # one part given: the best validated choice with that part fixed
    grid = [g for g in entry["grid"] if (o.mode is None or (g["mode"], g["k"]) == (o.mode, o.k or TOPK))
            and (o.lam is None or g["lam"] == o.lam)]
    if not grid:
        fixed = DecodeChoice(o.mode or best["mode"], best["lam"] if o.lam is None else o.lam, o.k)
        return fixed
    top = max(grid, key=lambda g: (g["SR"], g["mAcc"]))
    return DecodeChoice(top["mode"], top["lam"], top["k"])


def _read(path) -> dict:
    """The stored choices (``{}`` when missing or unreadable)."""
    if not path.is_file():
        return {}
    try:
        data = read_json(path)
    except KeppError:
        return {}  # a corrupt file is remade
    return data if isinstance(data, dict) else {}


def validation_context(ctx: EvalContext, method: Decoded) -> EvalContext:
    """An evaluation context whose "test" episodes are the planning model's held-out
    validation part of the training videos, with a graph from the other training videos."""
    train = read_config(ctx.folder(method.base.entry.plan_model)).get("train", {})
    vf, seed = float(train.get("val_fraction", 0.1)) or 0.1, int(train.get("seed", 0))
    o = ctx.options
    val = episode_tensors(ctx.ds, ctx.horizon, "train", o.setting, o.m, "val", vf, seed)
    fit = episode_tensors(ctx.ds, ctx.horizon, "train", o.setting, o.m, "fit", vf, seed)
    fit_videos = {f"{e.video.task}_{e.video.id}" for e in fit.episodes}
    graph = build_graph(restrict_train(ctx.ds, fit_videos), "train")
    return EvalContext(ctx.ds, ctx.horizon, val, graph, ctx.hdir, replace(o, samples=0))


def select_on_validation(ctx: EvalContext, method: Decoded) -> dict:
    """Decode the base method's validation plans (mean-of-K emissions when ``ctx`` asks for
    them) under every mode × λ; the best by SR, then mAcc."""
    vctx = validation_context(ctx, method)
    out = method.base.plan(vctx)
    k = decode_samples(ctx)
    block = emission_block(vctx, out, k)
    probs = method.probs(vctx)
    trans = transition_log_probs(vctx.graph)
    gt = vctx.gt
    grid = []
    for mode in method.modes:
        for lam in LAMBDAS:
            c = DecodeChoice(mode, lam, TOPK)
            plans = decode_block(block, trans, c, probs)
            grid.append({**asdict(c), "SR": success_rate(plans, gt), "mAcc": mean_accuracy(plans, gt)})
    best = grid[0]
    for g in grid[1:]:  # strictly better only: ties keep the simpler, earlier choice
        if (g["SR"], g["mAcc"]) > (best["SR"], best["mAcc"]):
            best = g
    videos = sorted({f"{e.video.task}_{e.video.id}" for e in vctx.test.episodes})
    return {"choice": {k: best[k] for k in ("mode", "lam", "k")}, "val_SR": best["SR"], "val_mAcc": best["mAcc"],
            "base_val_SR": success_rate(out.plans, gt), "val_episodes": len(gt), "val_videos": videos,
            "grid": grid, **({"samples": k} if k > 1 else {})}


for _entry in METHODS:  # the catalogue's decoded rows (the joint ones: kepp_core.evaluation.methods.joint)
    if _entry.decoded and not _entry.joint:
        register(Decoded(_entry))
