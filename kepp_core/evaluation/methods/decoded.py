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
``pinned`` before ``topk``). The grid ends with λ = :data:`GRAPH_LAMBDA`, where the graph decides
and the model's emissions break its ties (and choose the steps where no walk connects the endpoints).

**The graph as a prior where the endpoints are given.** A row with ground-truth endpoints
(``kepp-gt+dec``) starts from the graph's own plan between them (mode ``graph``: the ``graph-gt``
plan exactly, its tie-break and its fallback where no walk connects the endpoints included) and
takes the validation's best choice only when its mean per-episode gain over that plan exceeds one
standard error of the gain (the one-standard-error rule, :func:`one_se_gain`; the paired test's p
is stored beside it). A handful of validation videos, where the best choice ties the graph or wins
by an episode, cannot then talk it into trusting a weak model's middle steps over the graph (on the
NIV world a small λ chosen on 6–13 videos cost 5.8 SR against ``graph-gt``), while a gain the
validation shows clearly is taken (a stricter p < 0.05 kept the graph on the demo world where the
model's choice was better, costing ``kepp-gt+dec`` up to 6 SR there). Where the graph is kept the
row plans as ``graph-gt`` in every episode, so it can fall below ``graph-gt`` only where validation
showed a clear gain (with λ = :data:`GRAPH_LAMBDA` instead, a model that learned nothing broke
the graph's ties among equally likely paths: 0.05 SR below ``graph-gt`` on the COIN world at T=4).

**Where the choice is kept.** It is read from the models folder's
``ROOT/T<h>/decoding.json`` when it holds one for unchanged models, else from KEPP's cache home
(``$KEPP_HOME/decoding/``, one file per models folder: :func:`cache_file`); a new choice is written
(atomically; one entry per method, remade when a model it depends on changed) to the cache home,
never into the models folder (which may be read-only, e.g. a shipped one) unless asked:
``kepp eval --save-decoding`` stores it in ``ROOT/T<h>/decoding.json``. The planner reads the same
choice (:func:`planner_choice`), and
``kepp eval --decode MODE --decode-weight LAMBDA`` overrides either part (the other is
still chosen on validation).

**Mean-of-K emissions** (``kepp eval --decode-samples K``, default 1): ``p_model`` comes from
the mean of ``K`` sampled ``x_0`` action blocks instead of one: the block the base method's
own plan came from plus ``K - 1`` more, sampled in one batch (:func:`emission_block`). The
choice of λ and mode is then made with the same mean-of-K emissions and stored under the key
``<base>@K<K>`` (``K = 1``: the base name, as before), so choices for different ``K`` coexist.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np

from kepp_core.catalog import (CONFIG_FILE, DECODED_SUFFIX, DECODING_FILE, METHODS, TRUTH, MethodEntry,
                               ModelRole, model_folder, plan_page_method)
from kepp_core.data.records import Dataset, Video
from kepp_core.evaluation.methods import baselines, kepp  # noqa: F401  (the base methods register first)
from kepp_core.evaluation.methods.base import EvalContext, Method, MethodOutput, get_method, register
from kepp_core.evaluation.options import DECODE_MODES, TOPK, DecodeOverride, EvalOptions
from kepp_core.graph.build import build_graph
from kepp_core.graph.decoding import GRAPH_LAMBDA, GRAPH_MODE, DecodeChoice, decode_block, transition_log_probs
from kepp_core.graph.retrieval import top_paths
from kepp_core.errors import KeppError
from kepp_core.evaluation.stats import paired_permutation_test
from kepp_core.io import atomic_write_json, read_json
from kepp_core.metrics import mean_accuracy, success_rate
from kepp_core.models.checkpoint import read_config
from kepp_core.paths import cache_folder
from kepp_core.training.data import episode_tensors

LAMBDAS = (0.0, 0.1, 0.3, 1.0, 3.0, 10.0, GRAPH_LAMBDA)
CHOICE_FORMAT = 2  # how a stored choice was made; an entry of another format is made again (2: the graph mode as prior)


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
        self.source = self.base  # the method whose plans are decoded (its outputs are shared with its own row)

    def plan(self, ctx: EvalContext) -> MethodOutput:
        choice = choose(ctx, self)
        k = decode_samples(ctx)
        if choice.mode == GRAPH_MODE:  # the graph's own plan between the endpoints: the model is not sampled
            return MethodOutput(top_paths(ctx.graph, self.probs(ctx).argmax(-1), ctx.horizon),
                                decoding={**asdict(choice), "samples": k})
        outputs = ctx.cache.outputs
        out = outputs.get(self.source.name) or self.source.plan(ctx)
        outputs[self.source.name] = out
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


def choice_key(base: str, samples: int = 1) -> str:
    """The key of a base method's choice in a choices file (``<base>@K<K>`` for mean-of-K)."""
    return base if samples == 1 else f"{base}@K{samples}"


def cache_file(hdir: Path) -> Path:
    """Where the choices of the models folder ``hdir`` (``ROOT/T<h>``) are kept outside it: a file
    in KEPP's cache home named by the folder's identity (its resolved path and every checkpoint's
    training step and weights digest), so a read-only models folder is never written to."""
    stamps = []
    for cfg_path in sorted(Path(hdir).glob(f"*/{CONFIG_FILE}")):
        try:
            cfg = read_json(cfg_path, dict)
        except KeppError:
            continue  # an unreadable config is reported when its model loads
        stamps.append([cfg_path.parent.name, cfg.get("train_step"), (cfg.get("training") or {}).get("rank_digests")])
    identity = json.dumps([str(Path(hdir).resolve()), stamps])
    return cache_folder("decoding") / f"{Path(hdir).name}-{hashlib.sha1(identity.encode()).hexdigest()[:16]}.json"


def stored_choice(ctx: EvalContext, method: Decoded) -> tuple[dict, Path]:
    """The validated choice of ``method`` and the file it is kept in: the models folder's
    ``ROOT/T<h>/decoding.json``, else the cache home's (:func:`cache_file`), when its models are
    unchanged; else chosen on validation now. A new choice is written to the cache home, or into
    the models folder when ``ctx.options.decode.save`` asks for it (``kepp eval --save-decoding``)."""
    save = ctx.options.decode.save
    stamps = _model_stamps(ctx, method)
    key = choice_key(method.base.name, decode_samples(ctx))
    own, cached = ctx.hdir / DECODING_FILE, cache_file(ctx.hdir)
    entry, found = None, None
    for path in (own, cached):
        e = _read(path).get(key)
        if _current(e, stamps):
            entry, found = e, path
            break
    if entry is None:
        entry = select_on_validation(ctx, method)
        entry.update(models=stamps, format=CHOICE_FORMAT)
    target = own if save else cached
    if found != target and (save or found is None):
        stored = _read(target)  # another method of this run may have written its entry meanwhile
        stored[key] = entry
        try:
            atomic_write_json(target, stored)
            found = target
        except OSError:
            if save:
                raise  # asked to store it with the models: say why it could not be
            found = found or target  # an unwritable cache home: the choice is made again next time
    return entry, found


def choose(ctx: EvalContext, method: Decoded) -> DecodeChoice:
    """The decoding of ``method`` for ``ctx``: the override where complete, else the stored
    choice (:func:`stored_choice`), with one part of the override fixed where one is given."""
    o = ctx.options.decode
    if o.mode is not None and o.lam is not None:
        return DecodeChoice(o.mode, o.lam, o.k)
    entry, _ = stored_choice(ctx, method)
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


def planner_choice(hdir: Path, role: ModelRole, dataset: Callable[[], Dataset], setting: str = "conventional",
                   m: int = 3, save: bool = False, suffix: str = DECODED_SUFFIX
                   ) -> tuple[DecodeChoice, Path, float | None]:
    """The decoding the planner uses with the planning model ``role`` of ``hdir`` (``ROOT/T<h>``):
    the choice evaluation's ``<base><suffix>`` row makes for it (the base: the catalogue's method
    the Plan page runs that model as, e.g. ``kepp-R1``; ``suffix``: ``+dec``, or ``+jdec`` for joint
    decoding with the endpoint model), read where :func:`stored_choice` keeps it and chosen on
    validation videos of ``dataset()`` (called only then) when there is none; with the file it is
    kept in and the choice's validation SR."""
    base = plan_page_method(role)
    if base is None:
        raise KeppError(f"no evaluation method plans with {model_folder(role)}: it has no graph decoding choice")
    method = get_method(base.name + suffix)
    options = EvalOptions(setting=setting, m=m, decode=DecodeOverride(save=save))
    horizon = int(Path(hdir).name[1:])
    # the choice needs neither test episodes nor a graph of the test split; the dataset only to choose anew
    ctx = EvalContext(None, horizon, None, None, Path(hdir), options)
    stamps, key = _model_stamps(ctx, method), choice_key(method.base.name)
    for path in (ctx.hdir / DECODING_FILE, cache_file(ctx.hdir)):
        entry = _read(path).get(key)
        if _current(entry, stamps) and not (save and path != ctx.hdir / DECODING_FILE):
            return DecodeChoice(**entry["choice"]), path, entry.get("val_SR")
    ctx.ds = dataset()
    entry, path = stored_choice(ctx, method)
    return DecodeChoice(**entry["choice"]), path, entry.get("val_SR")


def _current(entry: dict | None, stamps: dict) -> bool:
    """Whether a stored choice holds for these models (their ``stamps``) and this code's :data:`CHOICE_FORMAT`."""
    return bool(entry) and entry.get("models") == stamps and entry.get("format") == CHOICE_FORMAT


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


def one_se_gain(diff: np.ndarray) -> tuple[float, float]:
    """The mean per-episode gain of a choice over the graph's decoding (``diff``: its success minus the
    graph's, per validation episode) and the gain's standard error; the choice replaces the graph's
    decoding only when the gain exceeds one standard error (:func:`clear_gain`: the one-standard-error
    rule). A single won episode is never enough: its gain equals its standard error.

    >>> one_se_gain(np.array([1.0, 0.0, 0.0, 0.0]))      # one episode of four: gain 0.25, SE 0.25
    (0.25, 0.25)
    """
    n = len(diff)
    if n < 2:
        return float(diff.mean()) if n else 0.0, float("inf")
    return float(diff.mean()), float(diff.std(ddof=1) / np.sqrt(n))


def clear_gain(gain: float, se: float) -> bool:
    """Whether ``gain`` exceeds one standard error ``se`` (by more than round-off)."""
    return gain - se > 1e-9


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
    grid, hits = [], []

    def score(c: DecodeChoice) -> None:
        plans = decode_block(block, trans, c, probs, vctx.graph)
        grid.append({**asdict(c), "SR": success_rate(plans, gt), "mAcc": mean_accuracy(plans, gt)})
        hits.append((np.asarray(plans) == np.asarray(gt)).all(-1).astype(np.float64))

    for mode in method.modes:
        for lam in LAMBDAS:
            score(DecodeChoice(mode, lam, TOPK))
    best = 0
    for i in range(1, len(grid)):  # strictly better only: ties keep the simpler, earlier choice
        if (grid[i]["SR"], grid[i]["mAcc"]) > (grid[best]["SR"], grid[best]["mAcc"]):
            best = i
    prior = {}
    if method.entry.endpoints == TRUTH:  # the graph's own plan unless the best gains clearly over it
        score(DecodeChoice(GRAPH_MODE, GRAPH_LAMBDA, TOPK))
        graph = len(grid) - 1
        gain, se = one_se_gain(hits[best] - hits[graph])
        prior = {"graph_prior": {"gain": gain, "se": se, "p": paired_permutation_test(hits[best] - hits[graph]),
                                 "kept_graph": not clear_gain(gain, se)}}
        best = graph if prior["graph_prior"]["kept_graph"] else best
    b = grid[best]
    videos = sorted({f"{e.video.task}_{e.video.id}" for e in vctx.test.episodes})
    return {"choice": {k: b[k] for k in ("mode", "lam", "k")}, "val_SR": b["SR"], "val_mAcc": b["mAcc"],
            "base_val_SR": success_rate(out.plans, gt), "val_episodes": len(gt), "val_videos": videos,
            "grid": grid, **prior, **({"samples": k} if k > 1 else {})}


for _entry in METHODS:  # the catalogue's decoded rows (the joint ones: kepp_core.evaluation.methods.joint)
    if _entry.decoded and not _entry.joint:
        register(Decoded(_entry))
