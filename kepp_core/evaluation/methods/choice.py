"""The decoding choice of the graph-decoded rows (``<method>+dec``, ``<method>+jdec``; docs, How to use
the graph): which endpoint mode and transition weight λ a row decodes its base method's action block
with. This module makes a choice (on validation videos), stores it, finds it again and says which one
applies; the rows (:mod:`~kepp_core.evaluation.methods.decoded`), the planner
(:func:`planner_decoding`, read by :func:`kepp_core.api.load_planner`), ``kepp eval`` and ``kepp plan``
ask it. A choice is a :class:`~kepp_core.graph.decoding.DecodeChoice` (its words:
:meth:`~kepp_core.graph.decoding.DecodeChoice.describe`).

**The modes a row allows** (:func:`row_modes`: its decoder's, :mod:`kepp_core.catalog.decoders`): a
``+dec`` row commits to its endpoints first (``free``, ``pinned`` to the step model's ``â_1`` / ``â_T``
or the ground truth's, ``topk``: the ``k`` most confident); a ``+jdec`` row weighs the endpoint model's
full distributions of the first and last step with the plan (``dist``, joint decoding), a
``+jdec-text`` row the S3D text tower's. An
override (``kepp eval --decode MODE``) reaches only the rows that allow its mode; ``--decode-weight``
fixes λ of every graph-decoded row (:func:`choose`).

**Whose endpoint probabilities a row decodes with** (:func:`row_endpoint_probs`, asked by the rows and
by the choice made on validation videos): what the row's endpoint source gives
(:meth:`~kepp_core.catalog.sources.EndpointSource.probs`): the step model's scores of every first and
last step, one-hot ground truth for a row given the true endpoints, the endpoint model's calibrated
distributions for a ``+jdec`` row, the text tower's (temperature fitted on the training episodes) for a
``+jdec-text`` row.

**Making a choice** (:func:`select_on_validation`). On a validation part cut from the *training*
videos (the planning model's own held-out ``val`` part: same ``val_fraction`` and seed as its
training, :func:`~kepp_core.training.data.episode_tensors`), never on the test split: the base method
runs on those episodes with a graph built from the remaining (``fit``) training videos only, every
allowed mode × λ of :data:`LAMBDAS` decodes its plans, and the best validation SR wins (then mAcc;
ties keep the earlier, simpler choice: λ = 0 before larger, ``free`` before ``pinned`` before
``topk``). The grid ends with λ = :data:`~kepp_core.graph.decoding.GRAPH_LAMBDA`, where the graph
decides and the model's emissions break its ties (and choose the steps where no walk connects the
endpoints).

**The graph as a prior where the endpoints are given.** A row with ground-truth endpoints
(``kepp-gt+dec``) starts from the graph's own plan between them (mode ``graph``: the ``graph-gt`` plan
exactly, its tie-break and its fallback included) and takes the validation's best choice only when
its mean per-episode gain over that plan exceeds one standard error of the gain (the
one-standard-error rule, :func:`one_se_gain`; the paired test's p is stored beside it). A handful of
validation videos, where the best choice ties the graph or wins by an episode, cannot then talk it
into trusting a weak model's middle steps over the graph, while a gain the validation shows clearly is
taken; where the graph is kept the row plans as ``graph-gt`` in every episode (the measured effect of
both rules: docs, How to use the graph).

**Where a choice is kept** (:func:`stored_choice`, :func:`find_choice`). It is read from the models
folder's ``ROOT/T<h>/decoding.json`` when that holds one for unchanged models, else from KEPP's cache
home (``$KEPP_HOME/decoding/``, one file per models folder: :func:`cache_file`); a new choice is
written (atomically; one entry per row, remade when a model it depends on changed, for a
``+jdec-text`` row the text tower's weights or word list too, or when it was made by another
:data:`CHOICE_FORMAT`) to the cache home, never into the models folder (which may be
read-only, e.g. a shipped one) unless asked: ``kepp eval --save-decoding`` and ``kepp plan
--save-decoding`` store it in ``ROOT/T<h>/decoding.json``. The key of a row's entry is its decoder's
(:func:`choice_key`): a ``+dec`` row's is its base's name (the file's first layout), any other row's its
own; the catalogue refuses two rows with one key.

**Mean-of-K emissions** (``kepp eval --decode-samples K``, default 1): the choice is then made with
the same mean-of-K emissions and stored under ``<key>@K<K>``, so choices for different ``K`` coexist.

**The planner's decoding** (:func:`planner_decoding`): a planning model the KEPP planner runs as an
evaluation row (e.g. ``kepp-R1``) decodes as that row's ``+dec`` choice or, where its models folder
holds the endpoint model and the row has a ``+jdec`` variant, as the ``+jdec`` choice when that did
better on the validation videos.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import asdict, replace
from pathlib import Path
from typing import Annotated, Literal

import numpy as np

from kepp_core.catalog import (CONFIG_FILE, DECODING_FILE, DEFAULT_M, DEFAULT_SETTING, JOINT_MODE, MARGINAL_MODES,
                               MAX_TOP, TEXT, MethodEntry, ModelRole, methods, model_folder, models_horizon,
                               planner_method)
from kepp_core.data.records import Dataset, restrict_train
from kepp_core.errors import KeppError
from kepp_core.evaluation.methods.base import EvalCache, EvalContext, MethodOutput, get_method
from kepp_core.evaluation.options import DecodeOverride, EvalOptions
from kepp_core.evaluation.stats import paired_permutation_test
from kepp_core.graph.build import build_graph
from kepp_core.graph.decoding import GRAPH_LAMBDA, GRAPH_MODE, TOPK, DecodeChoice, decode_block, transition_log_probs
from kepp_core.schema import Meta, NonNegative, Struct, convert
from kepp_core.io import atomic_write_json, read_json
from kepp_core.metrics import mean_accuracy, success_rate
from kepp_core.models.folders import config_stamp, model_stamps, read_config
from kepp_core.paths import cache_folder
from kepp_core.planner import PlannerDecoding
from kepp_core.training.data import episode_tensors
from kepp_core.video.s3d_spec import S3DSpec

__all__ = ["CHOICE_FORMAT", "LAMBDAS", "cache_file", "choice_key", "choose", "clear_gain", "emission_block", "find_choice",
           "model_stamps", "one_se_gain", "planner_choice", "planner_decoding", "planner_rows", "row_endpoint_probs", "row_modes", "row_stamps",
           "valid_choice",
           "select_on_validation", "stored_choice", "validation_context"]

LAMBDAS = (0.0, 0.1, 0.3, 1.0, 3.0, 10.0, GRAPH_LAMBDA)
CHOICE_FORMAT = 2  # how a stored choice was made; an entry of another format is made again (2: the graph mode as prior)


# --- what a row allows, and under which key its choice is kept ------------------------------------------------
def row_modes(entry: MethodEntry) -> tuple[str, ...]:
    """The endpoint modes a graph-decoded row chooses among (and an override may fix): its decoder's
    (the joint mode for a ``+jdec`` row, the marginal ones for a ``+dec`` row).

    >>> from kepp_core.catalog import method
    >>> row_modes(method("kepp-R1+dec")), row_modes(method("kepp-R1+jdec"))
    (('free', 'pinned', 'topk'), ('dist',))
    """
    return entry.decoder.modes


def row_endpoint_probs(ctx: EvalContext, entry: MethodEntry) -> np.ndarray:
    """The probabilities of every first and last step ``[N, 2, A]`` the graph-decoded row ``entry``
    decodes ``ctx``'s episodes with: its endpoint source's (:attr:`kepp_core.catalog.MethodEntry.ends`,
    :meth:`~kepp_core.catalog.sources.EndpointSource.probs`): one-hot ground truth, the
    endpoint model's calibrated (hierarchical) distributions (``+jdec``; a variant's for ``+jdec-pair``),
    the S3D text tower's (``+jdec-text``), else the step model's action scores."""
    return entry.ends.probs(ctx)


def choice_key(entry: MethodEntry, samples: int = 1) -> str:
    """The key of a row's choice in a choices file, its decoder's
    (:meth:`~kepp_core.catalog.decoders.Decoder.choice_key`): a ``+dec`` row's base name (the file's
    first layout, kept so that stored files stay valid), any other row's own name; ``@K<K>`` appended
    for mean-of-K emissions.

    >>> from kepp_core.catalog import method
    >>> choice_key(method("kepp-R1+dec")), choice_key(method("kepp-R1+jdec"), 4)
    ('kepp-R1', 'kepp-R1+jdec@K4')
    """
    return entry.decoder.choice_key(entry.name, entry.base, samples)


# --- where choices are kept -------------------------------------------------------------------------------------
def row_stamps(ctx: EvalContext, method) -> dict[str, object]:
    """What the choice of the graph-decoded ``method`` depends on: its models (:func:`model_stamps`)
    and, for a row that decodes with the S3D text tower's distributions, the tower's weights and word
    list (:attr:`~kepp_core.video.s3d_spec.S3DSpec.text_tower`)."""
    stamps = model_stamps(ctx.hdir, method.requires)
    if method.entry.ends.text:
        stamps[TEXT] = S3DSpec.parse(ctx.options.encoder).text_tower if ctx.options.encoder else None
    return stamps


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
        stamps.append([cfg_path.parent.name, *config_stamp(cfg)])
    identity = json.dumps([str(Path(hdir).resolve()), stamps])
    return cache_folder("decoding") / f"{Path(hdir).name}-{hashlib.sha1(identity.encode()).hexdigest()[:16]}.json"


def _read(path: Path) -> dict:
    """The stored choices of a file (``{}`` when missing or unreadable)."""
    if not path.is_file():
        return {}
    try:
        data = read_json(path)
    except KeppError:
        return {}  # a corrupt file is remade
    return data if isinstance(data, dict) else {}


Mode = Literal[(*MARGINAL_MODES, JOINT_MODE, GRAPH_MODE)]
Percent = Annotated[float, Meta(ge=0, le=100)]


class _Choice(Struct):
    mode: Mode
    lam: NonNegative
    k: Annotated[int, Meta(ge=1, le=MAX_TOP)]


class _Scored(_Choice):
    SR: Percent
    mAcc: Percent


class StoredChoice(Struct):
    """What a stored choice holds that is used (the rest is for readers): the choice, its validation
    SR and the grid it was picked from (an override of one part picks from the grid)."""

    choice: _Choice
    val_SR: Percent
    grid: Annotated[list[_Scored], Meta(min_length=1, max_length=10_000)]


def valid_choice(entry) -> bool:
    """Whether a stored entry is a choice this code can use (:class:`StoredChoice`): a choices file is
    a cache, never trusted; an entry with a NaN, negative, text or out-of-range value is made again."""
    try:
        convert(entry, StoredChoice, "stored choice")
    except KeppError:
        return False
    return True


def find_choice(hdir: Path, key: str, stamps: dict) -> tuple[dict, Path] | None:
    """The stored choice ``key`` made for these models (``stamps``) by this code's
    :data:`CHOICE_FORMAT`, and its file: the models folder's ``decoding.json`` first, then the
    cache home's (:func:`cache_file`); None when neither holds a valid one (:func:`valid_choice`)."""
    for path in (Path(hdir) / DECODING_FILE, cache_file(hdir)):
        entry = _read(path).get(key)
        if isinstance(entry, dict) and entry.get("models") == stamps and entry.get("format") == CHOICE_FORMAT \
                and valid_choice(entry):
            return entry, path
    return None


def stored_choice(ctx: EvalContext, method, dataset: Callable[[], Dataset | None] | None = None
                  ) -> tuple[dict, Path] | None:
    """The choice of the graph-decoded ``method`` for the models of ``ctx.hdir`` and the file it is
    kept in: found where :func:`find_choice` looks, else made now on validation videos
    (:func:`select_on_validation`; of ``ctx.ds``, or where ``ctx`` has no dataset of ``dataset()``,
    called only then: None when it gives none). A choice made now is written to the cache home, or
    into the models folder (copied there when found elsewhere) when ``ctx.options.decode.save`` asks
    for it."""
    save = ctx.options.decode.save
    stamps = row_stamps(ctx, method)
    key = choice_key(method.entry, ctx.options.decode.samples)
    found = find_choice(ctx.hdir, key, stamps)
    if found is not None:
        entry, where = found
    else:
        ds = ctx.ds if ctx.ds is not None else dataset() if dataset is not None else None
        if ds is None:
            return None
        entry = {**select_on_validation(replace(ctx, ds=ds), method), "models": stamps, "format": CHOICE_FORMAT}
        where = None
    target = ctx.hdir / DECODING_FILE if save else cache_file(ctx.hdir)
    if where != target and (save or where is None):
        kept = _read(target)  # another row of this run may have written its entry meanwhile
        kept[key] = entry
        try:
            atomic_write_json(target, kept)
            where = target
        except OSError:
            if save:
                raise  # asked to store it with the models: say why it could not be
            where = where or target  # an unwritable cache home: the choice is made again next time
    return entry, where


# --- which choice applies ---------------------------------------------------------------------------------------
def choose(ctx: EvalContext, method) -> DecodeChoice:
    """The decoding of the graph-decoded ``method`` for ``ctx``: the override
    (``ctx.options.decode``) where it is complete for this row, else the stored choice
    (:func:`stored_choice`) with the part the override gives fixed. The override's mode counts only
    for a row that allows it (:func:`row_modes`: ``--decode pinned`` leaves a ``+jdec`` row joint);
    its λ counts for every graph-decoded row."""
    o: DecodeOverride = ctx.options.decode
    mode = o.mode if o.mode in row_modes(method.entry) else None
    if mode is not None and o.lam is not None:
        return DecodeChoice(mode, o.lam, o.k)
    entry, _ = stored_choice(ctx, method)
    best = entry["choice"]
    if mode is None and o.lam is None:
        return DecodeChoice(best["mode"], best["lam"], best["k"])
    # one part given: the best validated choice with that part fixed
    grid = [g for g in entry["grid"] if (mode is None or (g["mode"], g["k"]) == (mode, o.k or TOPK))
            and (o.lam is None or g["lam"] == o.lam)]
    if not grid:
        return DecodeChoice(mode or best["mode"], best["lam"] if o.lam is None else o.lam, o.k)
    top = max(grid, key=lambda g: (g["SR"], g["mAcc"]))
    return DecodeChoice(top["mode"], top["lam"], top["k"])


def planner_rows(base: MethodEntry) -> tuple[MethodEntry, ...]:
    """The graph-decoded rows of ``base`` whose choice the KEPP planner may take on two clips: those
    whose source the planner has by itself (:attr:`~kepp_core.catalog.sources.EndpointSource.live`: the
    step model's probabilities, ``+dec``, or the default endpoint model's distributions, ``+jdec``; a
    variant's and the text tower's rows are evaluation's comparisons).

    >>> from kepp_core.catalog import method
    >>> [e.name for e in planner_rows(method("kepp-R1"))], [e.name for e in planner_rows(method("kepp-R2"))]
    (['kepp-R1+dec', 'kepp-R1+jdec'], ['kepp-R2+dec'])
    """
    return tuple(e for e in methods() if e.base == base.name and e.ends.live)


def planner_decoding(hdir: Path, role: ModelRole, dataset: Callable[[], Dataset | None] | None = None,
                     setting: str = DEFAULT_SETTING, m: int = DEFAULT_M, save: bool = False) -> PlannerDecoding | None:
    """The decoding the KEPP planner uses with the planning model ``role`` of ``hdir`` (``ROOT/T<h>``):
    the choice of the evaluation row it runs that model as (:func:`kepp_core.catalog.planner_method`,
    e.g. ``kepp-R1``) with graph decoding, ``+dec``; or, where ``hdir`` holds the model a joint row's
    source reads (the endpoint model), that row's joint choice when its validation SR is higher
    (:func:`planner_rows`). Each is found or made as :func:`stored_choice` does (``dataset()`` read
    once, only when one must be made; ``save``: kept in the models folder); None when one cannot be
    made without a dataset, or the row has no graph-decoded variant (the planner then plans by the
    argmax)."""
    best = planner_choice(hdir, role, dataset, setting, m, save)
    if best is None:  # no choice without a dataset, or a row without graph-decoded variants
        return None
    hdir = Path(hdir)
    entry, stored, where = best
    model = entry.endpoint_role
    return PlannerDecoding(choice=DecodeChoice(**stored["choice"]), method=entry.name, kept_in=str(where),
                           endpoints_from=entry.endpoints_from,
                           endpoint_model=hdir / model_folder(model) if model is not None else None)


def planner_choice(hdir: Path, role: ModelRole, dataset: Callable[[], Dataset | None] | None = None,
                   setting: str = DEFAULT_SETTING, m: int = DEFAULT_M, save: bool = False
                   ) -> tuple[MethodEntry, dict, Path] | None:
    """The graph-decoded row the KEPP planner with the planning model ``role`` of ``hdir`` decodes as
    (:func:`planner_rows` of the row it runs that model as whose models ``hdir`` holds; the higher
    validation SR wins, ties keep the earlier), that row's stored choice and its file, each found or made
    as :func:`stored_choice` does (``dataset()`` read once, only when one must be made; ``save``: kept
    in the models folder); None when one cannot be made without a dataset, or the row has no
    graph-decoded variant. :func:`planner_decoding` and the planning model's choice
    (:mod:`kepp_core.evaluation.planning_model`) ask it."""
    hdir = Path(hdir)
    base = planner_method(role)
    if base is None:
        raise KeppError(f"no evaluation method plans with {model_folder(role)}: it has no graph decoding choice")
    ctx = EvalContext(None, models_horizon(hdir), None, None, hdir,
                      EvalOptions(setting=setting, m=m, decode=DecodeOverride(save=save)))
    read: list = []

    def once() -> Dataset | None:
        if not read:
            read.append(dataset() if dataset is not None else None)
        return read[0]

    best = None
    for entry in planner_rows(base):
        model = entry.endpoint_role
        if model is not None and not (hdir / model_folder(model)).is_dir():
            continue
        found = stored_choice(ctx, get_method(entry.name), once)
        if found is None:
            return None
        if best is None or (found[0].get("val_SR") or 0.0) > (best[1].get("val_SR") or 0.0):
            best = (entry, *found)
    return best


# --- making a choice on validation videos -----------------------------------------------------------------------
def emission_block(ctx: EvalContext, out: MethodOutput, k: int = 1) -> np.ndarray:
    """The action block ``[N, T, A]`` a graph-decoded row decodes (and its choice is made with): the
    source method's own sampled ``x_0`` block for ``k = 1``; for ``k > 1`` the mean of it and ``k - 1``
    more samples (:meth:`EvalContext.more_blocks`, drawn in one batch)."""
    block = out.action_block
    if k == 1:
        return block
    extra = np.asarray(ctx.more_blocks(out, k - 1), dtype=np.float64)  # [N, k-1, T, A]
    return (block.astype(np.float64) + extra.sum(axis=1)) / k


def validation_context(ctx: EvalContext, method) -> EvalContext:
    """An evaluation context whose "test" episodes are the planning model's held-out
    validation part of the training videos, with a graph from the other training videos, which are
    also its training episodes (a text tower's temperature is fitted on them; the step names'
    embeddings are shared with ``ctx``)."""
    train = read_config(ctx.folder(method.entry.plan_model)).get("train", {})
    vf, seed = float(train.get("val_fraction", 0.1)) or 0.1, int(train.get("seed", 0))
    o = ctx.options
    val = episode_tensors(ctx.ds, ctx.horizon, "train", o.setting, o.m, "val", vf, seed)
    fit = episode_tensors(ctx.ds, ctx.horizon, "train", o.setting, o.m, "fit", vf, seed)
    fit_videos = {f"{e.video.task}_{e.video.id}" for e in fit.episodes}
    graph = build_graph(restrict_train(ctx.ds, fit_videos), "train")
    return EvalContext(ctx.ds, ctx.horizon, val, graph, ctx.hdir, replace(o, samples=0),
                       cache=EvalCache(train=fit, texts=ctx.cache.texts))


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


def select_on_validation(ctx: EvalContext, method) -> dict:
    """Decode the source method's validation plans (mean-of-K emissions when ``ctx`` asks for
    them) under every allowed mode × λ; the best by SR, then mAcc (with the graph as a prior for a
    row with ground-truth endpoints). The entry a choices file keeps, without its model stamps."""
    vctx = validation_context(ctx, method)
    out = method.base_method.plan(vctx)
    k = ctx.options.decode.samples
    block = emission_block(vctx, out, k)
    probs = row_endpoint_probs(vctx, method.entry)
    trans = transition_log_probs(vctx.graph)
    gt = vctx.gt
    grid, hits = [], []

    def score(c: DecodeChoice) -> None:
        plans = decode_block(block, trans, c, probs, vctx.graph)
        grid.append({**asdict(c), "SR": success_rate(plans, gt), "mAcc": mean_accuracy(plans, gt)})
        hits.append((np.asarray(plans) == np.asarray(gt)).all(-1).astype(np.float64))

    for mode in row_modes(method.entry):
        for lam in LAMBDAS:
            score(DecodeChoice(mode, lam, TOPK))
    best = 0
    for i in range(1, len(grid)):  # strictly better only: ties keep the simpler, earlier choice
        if (grid[i]["SR"], grid[i]["mAcc"]) > (grid[best]["SR"], grid[best]["mAcc"]):
            best = i
    prior = {}
    if method.entry.ends.exact:  # the graph's own plan unless the best gains clearly over it
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
