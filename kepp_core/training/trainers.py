"""Training the step model, the planning models, the task classifier and the endpoint model of one horizon.

>>> from kepp_core.data import load_dataset                          # doctest: +SKIP
>>> ds = load_dataset("demo", None)                                  # doctest: +SKIP
>>> cfg = preset("demo", horizon=4)                                  # doctest: +SKIP
>>> train_step_model(ds, cfg, "models/T4/step")                      # doctest: +SKIP
>>> train_plan_model(ds, cfg, "models/T4/plan-graph-R1", step_dir="models/T4/step")  # doctest: +SKIP
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from kepp_core.catalog import CONFIG_FILE, ENDPOINT_HEADS, GRAPH_CONDITIONS, GRAPH_FILE, LLM_CONDITIONS
from kepp_core.data.records import Dataset, seeded_split
from kepp_core.diffusion import ProjectedDiffusion, plan_layout, step_layout
from kepp_core.errors import KeppError
from kepp_core.metrics import mean_accuracy, success_rate
from kepp_core.graph.build import build_graph
from kepp_core.calibration import fit_temperature
from kepp_core.models.endpoint_probs import task_actions_mask
from kepp_core.io import atomic_write_json, read_json
from kepp_core.llm import llm_conditions
from kepp_core.diffusion.sampling import predict_endpoints, sample_actions
from kepp_core.graph.retrieval import make_retriever
from kepp_core.models.checkpoint import check_compatible, dataset_fingerprint, load_checkpoint
from kepp_core.models.classifier import TaskClassifier
from kepp_core.models.endpoints import EndpointModel, endpoint_model_from_config
from kepp_core.models.folders import check_endpoint_folder
from kepp_core.models.spec import ModelSpec
from kepp_core.models.options import TrainConfig, diffusion_options
from kepp_core.training.data import EpisodeTensors, episode_tensors, part_indices, step_tensors, task_names
from kepp_core.training.loop import fit, holds_output_lock, runtime
from kepp_core.training.structured import StructuredLoss
from kepp_core.training.windows import ConditionRows, observation_stats

__all__ = ["train_endpoint_model", "train_plan_model", "train_step_model", "train_task_classifier"]

VAL_LIMIT = 1024  # validation episodes sampled per validation round
STRUCTURED_SCALE = 10.0  # x_0 action block -> emission logits (ProjectedDiffusion.action_scores' scaling)


def action_ce(pred: torch.Tensor, layout, actions: torch.Tensor, positions: list[int] | None = None) -> torch.Tensor:
    """Cross-entropy of the true ``actions`` ``[B, T]`` under ``softmax(10 · x_0)`` of the
    predicted clean action block (the planner's confidence scaling, ``action_scores``), averaged
    over the plan's positions (``positions``: only those, e.g. ``[0, -1]`` for the step model).

    >>> from kepp_core.diffusion import plan_layout
    >>> lay = plan_layout(2, 1, 3, "none")
    >>> pred = torch.zeros(1, 2, lay.action_start + 3); pred[0, :, lay.action_start] = 1.0
    >>> round(float(action_ce(pred, lay, torch.tensor([[0, 0]]))), 4)
    0.0001
    """
    logits = pred[:, :, layout.action_start:] * STRUCTURED_SCALE
    if positions is not None:
        logits, actions = logits[:, positions], actions[:, positions]
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), actions.reshape(-1))


def _parts(ds: Dataset, cfg: TrainConfig, out: str | Path | None = None,
           progress: bool = False) -> tuple[EpisodeTensors, EpisodeTensors | None]:
    """Fit and validation episodes (validation: held-out training videos, at most ``VAL_LIMIT``,
    in memory; None if too few). With ``cfg.windows == "mapped"`` the fit episodes' observations
    are memory-mapped from ``<out's parent>/windows/`` (written there once per horizon)."""
    store = window_store(cfg, out)
    full = episode_tensors(ds, cfg.horizon, "train", cfg.setting, cfg.m, store=store, progress=progress)
    if cfg.val_fraction <= 0:
        return full, None
    fit_idx = part_indices(full.episodes, "fit", cfg.val_fraction, cfg.seed)
    val_idx = part_indices(full.episodes, "val", cfg.val_fraction, cfg.seed)
    if not fit_idx or not val_idx:
        return full, None
    fit_part, val = full.subset(fit_idx), full.subset(val_idx)
    if len(val) > VAL_LIMIT:
        val = val.subset(torch.randperm(len(val), generator=torch.Generator().manual_seed(cfg.seed))[:VAL_LIMIT])
    return fit_part, val.in_memory()


def window_store(cfg: TrainConfig, out: str | Path | None) -> Path | None:
    """Where mapped observation windows live (``<models>/T<h>/windows``), or None (in memory)."""
    if cfg.windows != "mapped":
        return None
    if out is None:
        raise KeppError("memory-mapped training windows need an output folder")
    return Path(out).parent / "windows"


def _meta(kind: str, model, ds: Dataset, data: EpisodeTensors, cfg: TrainConfig, **extra) -> dict:
    return {"kind": kind, "model": model.config(),
            "dataset": dataset_fingerprint(ds, data.obs_dim, cfg.horizon, cfg.setting, cfg.m),
            "train": cfg.to_dict(), "sampler": {"name": cfg.sampler, "steps": cfg.sampler_steps}, **extra}


@holds_output_lock
def train_step_model(ds: Dataset, cfg: TrainConfig, out: str | Path | None, resume: bool = False,
                     progress: bool = True) -> dict:
    """Train the step model (observations → ``a_1``, ``a_T``) and save it to ``out``."""
    torch.manual_seed(cfg.seed)
    data, val = _parts(ds, cfg, out, progress)
    return _fit_step(ds, cfg, data, val, out, resume, progress)[1]


def _fit_step(ds: Dataset, cfg: TrainConfig, data: EpisodeTensors, val: EpisodeTensors | None,
              out: str | Path | None, resume: bool = False, progress: bool = True) -> tuple[ProjectedDiffusion, dict]:
    model = ProjectedDiffusion(step_layout(cfg.horizon, data.obs_dim, ds.num_actions), **diffusion_options(cfg))
    model.set_normalisation(*observation_stats(data.obs_start, data.obs_goal))

    def batch_loss(net, idx):
        dev = model.obs_mean.device
        tpl = model.template(data.obs_start[idx], data.obs_goal[idx])
        x0 = model.layout.with_actions(tpl, data.actions[idx].to(dev))
        if not cfg.aux_ce_weight:
            return net(x0, tpl)
        loss, pred = net(x0, tpl, return_prediction=True)
        return loss + cfg.aux_ce_weight * action_ce(pred, model.layout, data.actions[idx].to(dev), [0, -1])

    def validate(m: ProjectedDiffusion) -> dict:
        m.eval()
        ends, _ = predict_endpoints(m, val.obs_start, val.obs_goal, cfg.val_sampler, cfg.sampler_steps, seed=cfg.seed)
        first = float((ends[:, 0] == val.actions[:, 0]).float().mean() * 100)
        last = float((ends[:, 1] == val.actions[:, -1]).float().mean() * 100)
        return {"score": (first + last) / 2, "first_acc": first, "last_acc": last, "episodes": len(val)}

    meta = _meta("step", model, ds, data, cfg)
    summary = fit(model, len(data), batch_loss, cfg, out, meta, validate if val else None, resume, progress)
    return model, summary


def out_of_fold_endpoints(ds: Dataset, data: EpisodeTensors, cfg: TrainConfig, progress: bool = False) -> torch.Tensor:
    """Endpoints of every training episode predicted by a step model that never saw its video.

    The videos are split into ``cfg.endpoint_folds`` folds; for each fold a step model is
    trained on the others (same config) and predicts that fold. Predictions made on the step
    model's own training episodes are nearly always right (it memorises them), so a planning
    model trained on them learns to trust recommendations far more than test-time ones
    deserve; out-of-fold predictions are as wrong as test-time ones.
    """
    k = cfg.endpoint_folds
    vids = sorted({f"{e.video.task}_{e.video.id}" for e in data.episodes})
    fold_of = {}
    remaining = vids
    for f in range(k - 1):  # peel folds off with seeded splits of what is left
        part = seeded_split(remaining, seed=20_000 + cfg.seed + f, train_fraction=1 - 1 / (k - f))
        fold_of.update({v: f for v in remaining if part[v] == "test"})
        remaining = [v for v in remaining if part[v] == "train"]
    fold_of.update({v: k - 1 for v in remaining})
    folds = torch.tensor([fold_of[f"{e.video.task}_{e.video.id}"] for e in data.episodes])
    ends = torch.zeros(len(data), 2, dtype=torch.long)
    for f in range(k):
        held = torch.nonzero(folds == f).flatten()
        rest = torch.nonzero(folds != f).flatten()
        if len(held) == 0 or len(rest) == 0:
            continue
        model, _ = _fit_step(ds, cfg, data.subset(rest), None, None, progress=progress)
        model.eval()
        sub = data.subset(held)
        pred, _ = predict_endpoints(model, sub.obs_start, sub.obs_goal, cfg.sampler, cfg.sampler_steps, seed=cfg.seed)
        ends[held] = pred
    return ends


def graph_conditions(graph, endpoints: torch.Tensor, cfg: TrainConfig) -> ConditionRows:
    """Aggregated top-``R`` recommendations ``[N, T, A]`` for endpoint pairs ``[N, 2]``, made
    per batch when indexed (never the dense ``N × T × A`` array)."""
    return ConditionRows(make_retriever(graph, cfg.recommend, cfg.R), endpoints, cfg.horizon)


def _step_endpoints(step_dir: Path, ds: Dataset, data: EpisodeTensors, cfg: TrainConfig) -> torch.Tensor:
    """The step model's endpoints of ``data``, sampled as its checkpoint says."""
    step, scfg = load_checkpoint(step_dir, "step", runtime().device)
    check_compatible(scfg, ds, cfg.horizon, data.obs_dim, where=str(step_dir))
    spec = ModelSpec.from_config(scfg, step_dir)
    ends, _ = predict_endpoints(step, data.obs_start, data.obs_goal, spec.sampler, spec.sampler_steps, seed=cfg.seed)
    return ends


def llm_condition_rows(llm, endpoints: torch.Tensor, horizon: int, num_actions: int,
                       progress: bool = False) -> tuple[torch.Tensor, list]:
    """The LLM condition rows ``[N, T, A]`` for endpoint pairs ``[N, 2]`` and the
    :class:`~kepp_core.llm.LLMRecommendation` of each (distinct pairs are asked once)."""
    recs = llm.batch([tuple(e) for e in endpoints.tolist()], horizon, progress=progress)
    rows = llm_conditions(recs, num_actions) if recs else np.zeros((0, horizon, num_actions), np.float32)
    return torch.from_numpy(rows), recs


@dataclass
class _PlanData:
    """What a planning model trains on: fit and validation episodes and their condition rows."""

    data: EpisodeTensors
    val: EpisodeTensors | None
    conds: dict[str, torch.Tensor] = field(default_factory=dict)
    val_conds: dict[str, torch.Tensor] = field(default_factory=dict)
    meta: dict = field(default_factory=dict)  # recorded in the checkpoint's config.json
    graph: object = None  # the P²KG the recommendations came from


@holds_output_lock
def train_plan_model(ds: Dataset, cfg: TrainConfig, out: str | Path, step_dir: str | Path | None = None,
                     resume: bool = False, progress: bool = True, extra: torch.Tensor | None = None,
                     extra_val: torch.Tensor | None = None, llm=None) -> dict:
    """Train a planning model with condition ``cfg.condition`` and save it to ``out``.

    ``graph``: recommendations from the step model's *predicted* endpoints (``step_dir``),
    plus ground-truth-endpoint copies when ``cfg.gt_augment``; ``task``: the ground-truth
    task class (PDPP; a classifier predicts it at test time); ``none``: no condition;
    ``extra``: the given ``[N, T, K]`` arrays (one per fit episode); ``llm`` / ``graph+llm``:
    the LLM's plan for the step model's predicted endpoints (one-hot ``T × A``; ``llm`` is a
    :class:`kepp_core.llm.LLMRecommender`, replies cached on disk), alone or after the P²KG
    row. What the LLM answered (plans from the LLM, fallbacks and why) is saved in the
    checkpoint's ``config.json`` under ``llm``.
    """
    torch.manual_seed(cfg.seed)
    out = Path(out)
    data, val = _parts(ds, cfg, out, progress)
    tasks = task_names(ds)
    width = len(tasks) if cfg.condition == "task" else (extra.shape[-1] if extra is not None else None)
    layout = plan_layout(cfg.horizon, data.obs_dim, ds.num_actions, cfg.condition, width)
    model = ProjectedDiffusion(layout, **diffusion_options(cfg))
    model.set_normalisation(*observation_stats(data.obs_start, data.obs_goal))
    pdata = _PlanData(data, val, meta={"condition": cfg.condition, "R": cfg.R, "recommend": cfg.recommend})
    if cfg.condition in ("graph", *LLM_CONDITIONS):
        _recommendation_rows(pdata, ds, cfg, step_dir, llm, progress)
    elif cfg.condition == "task":
        _task_rows(pdata, tasks)
    elif cfg.condition == "extra":
        _extra_rows(pdata, extra, extra_val)
    summary = _fit_plan(model, pdata, ds, cfg, out, resume, progress)
    if runtime().main:  # the planner shows graph paths for every planning model
        (pdata.graph or build_graph(ds, "train")).save(out / GRAPH_FILE)
    if "llm" in pdata.meta:
        summary["llm"] = pdata.meta["llm"]
    return summary


def _fit_plan(model: ProjectedDiffusion, pdata: _PlanData, ds: Dataset, cfg: TrainConfig, out: Path, resume: bool,
              progress: bool) -> dict:
    """Fit a planning model on ``pdata`` (validation: SR + mAcc of sampled plans); with
    ``cfg.structured_weight`` > 0 the structured loss through the graph is added, with
    ``cfg.aux_ce_weight`` > 0 the cross-entropy of the ``x_0`` action block (:func:`action_ce`)."""
    data, val = pdata.data, pdata.val
    chain = None
    if cfg.structured_weight > 0:
        pdata.graph = pdata.graph or build_graph(ds, "train")
        chain = StructuredLoss(pdata.graph, learn_scale=cfg.structured_learn_scale)
        pdata.meta["structured"] = {"weight": cfg.structured_weight, "learn_scale": cfg.structured_learn_scale}

    def batch_loss(net, idx):
        dev = model.obs_mean.device
        tpl = model.template(data.obs_start[idx], data.obs_goal[idx], {k: v[idx] for k, v in pdata.conds.items()})
        x0 = model.layout.with_actions(tpl, data.actions[idx].to(dev))
        if chain is None and not cfg.aux_ce_weight:
            return net(x0, tpl)
        loss, pred = net(x0, tpl, return_prediction=True)
        if cfg.aux_ce_weight:
            loss = loss + cfg.aux_ce_weight * action_ce(pred, model.layout, data.actions[idx].to(dev))
        if chain is None:
            return loss
        # the x_0 estimate's action block, scaled as the planner's confidences (action_scores), as emissions
        emissions = pred[:, :, model.layout.action_start:] * STRUCTURED_SCALE
        return loss + cfg.structured_weight * chain(emissions, data.actions[idx])  # checked on the CPU, then moved

    def validate(m: ProjectedDiffusion) -> dict:
        m.eval()
        x0 = sample_actions(m, val.obs_start, val.obs_goal, pdata.val_conds, cfg.val_sampler, cfg.sampler_steps,
                            seed=cfg.seed)
        pred = m.decode(x0).numpy()
        gt = val.actions.numpy()
        sr, macc = success_rate(pred, gt), mean_accuracy(pred, gt)
        return {"score": sr + macc, "sr": sr, "macc": macc, "episodes": len(val)}

    meta = _meta("plan", model, ds, data, cfg, **pdata.meta)
    summary = fit(model, len(data), batch_loss, cfg, out, meta, validate if val else None, resume, progress,
                  extra=chain)
    if chain is not None:
        summary["structured_scale"] = float(chain.scale.detach())
    return summary


def _recommendation_rows(pdata: _PlanData, ds: Dataset, cfg: TrainConfig, step_dir: str | Path | None, llm,
                         progress: bool) -> None:
    """P²KG and/or LLM rows from predicted endpoints (the step model's, or out-of-fold ones)."""
    uses_graph, uses_llm = cfg.condition in GRAPH_CONDITIONS, cfg.condition in LLM_CONDITIONS
    if step_dir is None and cfg.endpoint_folds < 2:
        raise KeppError(f"a {cfg.condition}-conditioned planning model needs the step model (step_dir) "
                        "or out-of-fold endpoints (endpoint_folds >= 2)")
    if uses_llm and llm is None:
        raise KeppError(f"a {cfg.condition}-conditioned planning model needs an LLM endpoint "
                        "(an LLM recommender; its url and model, or KEPP_LLM_URL and KEPP_LLM_MODEL)")
    pdata.graph = graph = build_graph(ds, "train")
    data = pdata.data
    ends = (out_of_fold_endpoints(ds, data, cfg, progress) if cfg.endpoint_folds >= 2
            else _step_endpoints(Path(step_dir), ds, data, cfg))
    llm_recs: list = []

    def rows_for(endpoints: torch.Tensor) -> dict[str, torch.Tensor]:
        out: dict[str, torch.Tensor] = {}
        if uses_graph:
            out["graph"] = graph_conditions(graph, endpoints, cfg)
        if uses_llm:
            rows, recs = llm_condition_rows(llm, endpoints, cfg.horizon, ds.num_actions, progress)
            out["llm"] = rows
            llm_recs.extend(recs)
        return out

    pdata.conds.update(rows_for(ends))
    pdata.meta["endpoint_folds"] = cfg.endpoint_folds
    pdata.meta["train_endpoint_acc"] = {
        "first": float((ends[:, 0] == data.actions[:, 0]).float().mean() * 100),
        "last": float((ends[:, 1] == data.actions[:, -1]).float().mean() * 100)}
    if cfg.gt_augment:
        gt = rows_for(data.actions[:, [0, -1]])
        pdata.data = data.subset(torch.arange(len(data)).repeat(2))
        pdata.conds = {k: v.cat(gt[k]) if isinstance(v, ConditionRows) else torch.cat([v, gt[k]])
                       for k, v in pdata.conds.items()}
    if pdata.val is not None and step_dir is not None:
        pdata.val_conds.update(rows_for(_step_endpoints(Path(step_dir), ds, pdata.val, cfg)))
    elif pdata.val is not None:
        pdata.val = None  # no step model to predict validation endpoints with
    pdata.meta["step_model"] = Path(step_dir).name if step_dir is not None else None
    if uses_llm:
        pdata.meta["llm"] = {"model": llm.client.config.model, "mapper": llm.mapper.name, "queries": llm.queries,
                          "verify": llm.verify, "vote_on": llm.vote_on, **llm.summary(llm_recs)}


def _task_rows(pdata: _PlanData, tasks: list[str]) -> None:
    """PDPP's condition: the ground-truth task class, one-hot."""
    pdata.conds["task"] = F.one_hot(pdata.data.tasks, len(tasks)).float()
    if pdata.val is not None:
        pdata.val_conds["task"] = F.one_hot(pdata.val.tasks, len(tasks)).float()
    pdata.meta["tasks"] = tasks


def _extra_rows(pdata: _PlanData, extra: torch.Tensor | None, extra_val: torch.Tensor | None) -> None:
    """Given ``[N, T, K]`` condition arrays, one per fit episode (and optionally per validation episode)."""
    if extra is None or len(extra) != len(pdata.data):
        raise KeppError("an 'extra' condition needs one [T, K] array per training episode")
    pdata.conds["extra"] = extra.float()
    if pdata.val is not None and extra_val is not None:
        pdata.val_conds["extra"] = extra_val.float()
    elif pdata.val is not None:
        pdata.val = None


def classifier_config(cfg: TrainConfig, n_items: int, val_rounds: int = 5, epochs: int = 0) -> TrainConfig:
    """The schedule of the cross-entropy models (task classifier, endpoint model): ``epochs`` epochs
    (0: ``classifier_epochs``) at a constant learning rate 1e-3, validated ``val_rounds`` times."""
    bsz = min(cfg.batch_size, n_items)
    steps = max(1, (epochs or cfg.classifier_epochs) * max(1, n_items // bsz))
    every = max(1, steps // max(1, val_rounds))
    return TrainConfig.from_dict({**cfg.to_dict(), "train_steps": steps, "lr": 1e-3, "warmup": 1, "decay": [],
                                  "val_every": every, "log_every": max(1, min(cfg.log_every, every))})


@holds_output_lock
def train_task_classifier(ds: Dataset, cfg: TrainConfig, out: str | Path, resume: bool = False,
                          progress: bool = True) -> dict:
    """Train the PDPP baseline's task classifier (cross-entropy, ``classifier_epochs`` epochs)."""
    torch.manual_seed(cfg.seed)
    data, val = _parts(ds, cfg, out, progress)
    tasks = task_names(ds)
    model = TaskClassifier(obs_dim=data.obs_dim, n_tasks=len(tasks))
    model.set_normalisation(*observation_stats(data.obs_start, data.obs_goal))
    ccfg = classifier_config(cfg, len(data))

    def batch_loss(net, idx):
        dev = model.obs_mean.device
        return F.cross_entropy(net(data.obs_start[idx].to(dev), data.obs_goal[idx].to(dev)), data.tasks[idx].to(dev))

    @torch.no_grad()
    def validate(m: TaskClassifier) -> dict:
        m.eval()
        dev = m.obs_mean.device
        pred = m(val.obs_start.to(dev), val.obs_goal.to(dev)).argmax(-1).cpu()
        acc = float((pred == val.tasks).float().mean() * 100)
        return {"score": acc, "task_acc": acc, "episodes": len(val)}

    meta = {"kind": "task-classifier", "model": model.config(),
            "dataset": dataset_fingerprint(ds, data.obs_dim, cfg.horizon, cfg.setting, cfg.m),
            "train": ccfg.to_dict(), "tasks": tasks}
    return fit(model, len(data), batch_loss, ccfg, out, meta, validate if val else None, resume, progress)


def fit_task_actions(ds: Dataset, data: EpisodeTensors, tasks: list[str]) -> np.ndarray:
    """``[K, A]``: the actions the plans of ``data``'s training videos show for each task."""
    videos = list({(e.video.task, e.video.id): e.video for e in data.episodes}.values())
    index = {t: i for i, t in enumerate(tasks)}
    return task_actions_mask([v.plan for v in videos], [index[v.task] for v in videos], num_tasks=len(tasks),
                             num_actions=ds.num_actions)


@torch.no_grad()
def endpoint_accuracy(model: EndpointModel, part: EpisodeTensors) -> dict:
    """Accuracy (%) of the endpoint model on ``part``: task, flat and hierarchical first and last
    step; ``score``: the mean of the flat first and last step accuracies."""
    model.eval()
    dev = model.obs_mean.device
    s, g = part.obs_start.to(dev), part.obs_goal.to(dev)
    task, first, last = (x.argmax(-1).cpu() for x in model(s, g))
    hier = torch.from_numpy(model.endpoint_log_probs(s, g, hierarchical=True).argmax(-1))

    def pct(pred, truth) -> float:
        return float((pred == truth).float().mean() * 100)

    a1, at = part.actions[:, 0], part.actions[:, -1]
    out = {"task_acc": pct(task, part.tasks), "first_acc": pct(first, a1), "last_acc": pct(last, at),
           "hier_first_acc": pct(hier[:, 0], a1), "hier_last_acc": pct(hier[:, 1], at), "episodes": len(part)}
    return {"score": (out["first_acc"] + out["last_acc"]) / 2, **out}


class WindowBatches(nn.Module):
    """Batches of ``n`` labelled windows, one epoch's permutation after another (seeded), for the
    endpoint model's per-clip heads. How many it has drawn is a buffer, so a resumed run (the
    training loop keeps it in its saved state as an ``extra`` module) draws what an uninterrupted
    one would.

    >>> b = WindowBatches(5, 2, seed=0)
    >>> [len(b.draw()) for _ in range(4)], int(b.drawn)
    ([2, 2, 2, 2], 4)
    """

    def __init__(self, n: int, batch_size: int, seed: int) -> None:
        super().__init__()
        self.n, self.batch_size, self.seed = n, min(batch_size, n), seed
        self.register_buffer("drawn", torch.zeros((), dtype=torch.long))

    def draw(self) -> torch.Tensor:
        per_epoch = max(1, self.n // self.batch_size)
        epoch, i = divmod(int(self.drawn), per_epoch)
        perm = torch.randperm(self.n, generator=torch.Generator().manual_seed(self.seed * 1_000_003 + 500_009 + epoch))
        self.drawn += 1
        rt = runtime()
        return perm[i * self.batch_size:(i + 1) * self.batch_size][rt.rank::rt.world]


@holds_output_lock
def train_endpoint_model(ds: Dataset, cfg: TrainConfig, out: str | Path, resume: bool = False,
                         progress: bool = True, val_rounds: int = 5) -> dict:
    """Train the discriminative endpoint model of architecture ``cfg.endpoint_arch`` (task, ``a_1``,
    ``a_T``: the sum of three cross-entropies, label smoothing ``cfg.endpoint_smoothing``; the task
    classifier's schedule over ``cfg.endpoint_epochs`` epochs, :func:`classifier_config`); with
    ``cfg.endpoint_windows`` its per-clip heads also learn from every labelled window of the fit
    videos (:func:`~kepp_core.training.data.step_tensors`: the sum of four more cross-entropies per
    batch, the step from its start window and from its end window, the task from each). Then fit
    one temperature per head on the validation part and store them in the checkpoint's model config.
    A folder whose name says a variant (``ROOT/T<h>/endpoints-pair``) is trained only with that
    variant's architecture (refused before any work otherwise)."""
    out = Path(out)
    check_endpoint_folder(out, cfg.endpoint_arch)
    torch.manual_seed(cfg.seed)
    data, val = _parts(ds, cfg, out, progress)
    tasks = task_names(ds)
    model = endpoint_model_from_config({"arch": cfg.endpoint_arch, "obs_dim": data.obs_dim, "n_tasks": len(tasks),
                                        "num_actions": ds.num_actions})
    model.set_normalisation(*observation_stats(data.obs_start, data.obs_goal))
    model.set_task_actions(fit_task_actions(ds, data, tasks))
    ecfg = classifier_config(cfg, len(data), val_rounds, cfg.endpoint_epochs)
    windows = batches = None
    if cfg.endpoint_windows:
        part = "fit" if cfg.val_fraction > 0 and val is not None else None
        windows = step_tensors(ds, "train", cfg.setting, cfg.m, part, cfg.val_fraction, cfg.seed,
                               window_store(cfg, out), progress)
        batches = WindowBatches(len(windows), ecfg.batch_size, cfg.seed)
    smooth = cfg.endpoint_smoothing

    def ce(logits, labels):
        return F.cross_entropy(logits, labels, label_smoothing=smooth)

    def batch_loss(net, idx):
        dev = model.obs_mean.device
        acts, task_ids = data.actions[idx].to(dev), data.tasks[idx].to(dev)
        if batches is None:
            task, first, last = net(data.obs_start[idx].to(dev), data.obs_goal[idx].to(dev))
            return ce(task, task_ids) + ce(first, acts[:, 0]) + ce(last, acts[:, -1])
        w = batches.draw()
        task, first, last, w_first, w_last, w_task_s, w_task_g = net(
            data.obs_start[idx].to(dev), data.obs_goal[idx].to(dev),
            windows=(windows.obs_start[w].to(dev), windows.obs_goal[w].to(dev)))
        step, step_task = windows.actions[w, 0].to(dev), windows.tasks[w].to(dev)
        return (ce(task, task_ids) + ce(first, acts[:, 0]) + ce(last, acts[:, -1])
                + ce(w_first, step) + ce(w_last, step) + 0.5 * (ce(w_task_s, step_task) + ce(w_task_g, step_task)))

    meta = {"kind": "endpoints", "model": model.config(),
            "dataset": dataset_fingerprint(ds, data.obs_dim, cfg.horizon, cfg.setting, cfg.m),
            "train": ecfg.to_dict(), "tasks": tasks,
            **({"windows": len(windows)} if windows is not None else {})}
    summary = fit(model, len(data), batch_loss, ecfg, out, meta,
                  (lambda m: endpoint_accuracy(m, val)) if val else None, resume, progress, extra=batches)
    if val is not None and runtime().main:
        summary["temperature"] = calibrate_endpoint_model(out, val)
    return summary


def calibrate_endpoint_model(folder: Path, val: EpisodeTensors) -> dict[str, float]:
    """Fit each head's temperature on ``val`` (:func:`~kepp_core.calibration.fit_temperature`)
    with the saved (best) weights and store them in ``folder``'s config (``model.temperature``)."""
    model, _ = load_checkpoint(folder, "endpoints")
    with torch.no_grad():
        logits = model(val.obs_start, val.obs_goal)
    labels = (val.tasks, val.actions[:, 0], val.actions[:, -1])
    temperature = {h: fit_temperature(z.numpy(), y.numpy()) for h, z, y in zip(ENDPOINT_HEADS, logits, labels)}
    cfg = read_json(folder / CONFIG_FILE, dict)
    cfg["model"] = {**cfg["model"], "temperature": temperature}
    atomic_write_json(folder / CONFIG_FILE, cfg)
    return temperature
