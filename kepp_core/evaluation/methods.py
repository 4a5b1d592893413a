"""The methods of the evaluation table and the code that runs them on one horizon.

Methods (KEPP.md §6, issue 4):

- ``random``: uniformly random actions;
- ``retrieval``: the plan of the nearest training episode in (standardised) feature space;
- ``graph-pred`` / ``graph-gt``: zero-shot planning, the top P²KG path between the step
  model's predicted / the ground-truth endpoints;
- ``pdpp``: planning model with a task-class row, the task predicted by the classifier;
- ``kepp-nograph``: planning model without the graph condition;
- ``kepp-R1`` / ``kepp-R2``: the KEPP planner with R = 1 / 2 paths;
- ``kepp-gt``: the KEPP planner (R = 1) with ground-truth endpoints (a flawless step model);
- ``kepp-llm`` / ``kepp-graph-llm`` (``LLM_METHODS``, run only when asked for and given an
  :class:`~kepp_core.llm.LLMRecommender`): planning models conditioned on the LLM's plan for
  the step model's predicted endpoints, alone / after the P²KG row (paper Table 6). Their
  rows say how many plans came from the LLM and how many from the fallback (and which).

Every learned method reads ``ROOT/T<h>/<model>`` (see :mod:`kepp_core.training.suite`).

With ``samples=K`` every probabilistic method (``random`` and the planning models:
``pdpp``, ``kepp-*``) also draws ``K`` plans per test episode (one batched DDPM/DDIM pass
over the episodes repeated ``K`` times, different noise per copy; the step model's
endpoints and the graph condition stay the point prediction's) and
:func:`~kepp_core.evaluation.uncertainty.episode_uncertainty` scores them (NLL, KL, mode
precision and recall).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch.nn import functional as F

from kepp_core.data.records import Dataset
from kepp_core.errors import KeppError, unknown_name_error
from kepp_core.metrics import mean_accuracy, miou_per_batch, miou_per_episode, success_rate
from kepp_core.evaluation.uncertainty import UncertaintyResult, episode_uncertainty
from kepp_core.graph.build import build_graph
from kepp_core.diffusion.sampling import predict_endpoints, sample_actions, sample_plans
from kepp_core.graph.retrieval import make_retriever
from kepp_core.planner import KEPPPlanner
from kepp_core.models.checkpoint import check_compatible, load_checkpoint
from kepp_core.training.data import EpisodeTensors, episode_tensors
from kepp_core.training.trainers import llm_condition_rows

# Methods that can draw K plans per episode (``samples``); the others are deterministic.
SAMPLED = ("random", "pdpp", "kepp-nograph", "kepp-R1", "kepp-R2", "kepp-gt", "kepp-llm", "kepp-graph-llm")
UNCERTAINTY_COLUMNS = ("NLL", "KL", "ModePrec", "ModeRec")

METHODS = ("random", "retrieval", "graph-pred", "graph-gt", "pdpp", "kepp-nograph", "kepp-R1", "kepp-R2",
           "kepp-gt")
# Methods that need an LLM endpoint; not in the default list.
LLM_METHODS = ("kepp-llm", "kepp-graph-llm")
ALL_METHODS = METHODS + LLM_METHODS
LABELS = {
    "random": "Random", "retrieval": "Retrieval (nearest training episode)",
    "graph-pred": "P²KG zero-shot, predicted endpoints", "graph-gt": "P²KG zero-shot, ground-truth endpoints",
    "pdpp": "PDPP (task classifier)", "kepp-nograph": "KEPP without graph condition",
    "kepp-R1": "KEPP R=1", "kepp-R2": "KEPP R=2", "kepp-gt": "KEPP with ground-truth endpoints",
    "kepp-llm": "KEPP with the LLM plan instead of the graph", "kepp-graph-llm": "KEPP with the graph and the LLM plan",
}
# The model folders each learned method needs.
NEEDS = {"graph-pred": ["step"], "pdpp": ["plan-task", "task-classifier"], "kepp-nograph": ["plan-none"],
         "kepp-R1": ["step", "plan-graph-R1"], "kepp-R2": ["step", "plan-graph-R2"],
         "kepp-gt": ["step", "plan-graph-R1"], "kepp-llm": ["step", "plan-llm"],
         "kepp-graph-llm": ["step", "plan-graph-llm"]}
LLM_FOLDERS = {"kepp-llm": "plan-llm", "kepp-graph-llm": "plan-graph-llm"}


@dataclass
class MethodOutput:
    plans: np.ndarray  # [N, T]
    seconds: float
    extra: dict = field(default_factory=dict)  # per-episode extras (endpoints, paths) for the records
    samples: np.ndarray | None = None  # [N, K, T] sampled plans (``samples=K``)
    uncertainty: UncertaintyResult | None = None


@dataclass
class HorizonEvaluation:
    """Results of every method on the test episodes of one horizon and setting."""

    horizon: int
    setting: str
    data: EpisodeTensors
    outputs: dict[str, MethodOutput]
    step_accuracy: dict[str, float] | None
    skipped: dict[str, str]

    def rows(self) -> list[dict]:
        gt = self.data.actions.numpy()
        out = []
        for name, o in self.outputs.items():
            if name.startswith("_"):  # the step model's endpoints, not a method
                continue
            out.append({"method": name, "T": self.horizon, "setting": self.setting,
                        "SR": success_rate(o.plans, gt), "mAcc": mean_accuracy(o.plans, gt),
                        "mIoU": miou_per_episode(o.plans, gt), "mIoU_b256": miou_per_batch(o.plans, gt),
                        "episodes": len(gt), "episodes_per_s": len(gt) / max(o.seconds, 1e-9)})
            if "llm_summary" in o.extra:
                u = o.extra["llm_summary"]
                out[-1].update({"llm_plans": u["llm"], "llm_fallbacks": u["fallback"], "fallback": u["fallback_name"],
                                "fallback_reasons": u["fallback_reasons"]})
            if o.uncertainty is not None:
                u = o.uncertainty
                out[-1].update({"K": u.samples, "NLL": u.nll, "KL": u.kl, "ModePrec": u.mode_precision,
                                "ModeRec": u.mode_recall, "pred_modes": u.predicted_modes,
                                "gt_modes": u.truth_modes})
        return out


def _train_tensors(ds: Dataset, horizon: int, setting: str, m: int) -> EpisodeTensors:
    return episode_tensors(ds, horizon, "train", setting, m)


def evaluate_horizon(ds: Dataset, models: str | Path | None, horizon: int, setting: str = "conventional",
                     methods: Sequence[str] = METHODS, m: int = 3, sampler: str | None = None,
                     sampler_steps: int | None = None, seed: int = 0, strict: bool = False,
                     log: Callable[[str], None] = lambda s: None, samples: int = 0,
                     llm=None) -> HorizonEvaluation:
    """Run ``methods`` on the test episodes of ``horizon``.

    Methods whose models are missing are skipped (listed in ``skipped``) unless ``strict``.
    ``samples=K`` (K ≥ 2) also draws K plans per episode from the methods in ``SAMPLED`` and
    scores them with :func:`~kepp_core.evaluation.uncertainty.episode_uncertainty`.
    ``llm``: the :class:`~kepp_core.llm.LLMRecommender` the ``LLM_METHODS`` need (skipped
    without it, unless ``strict``).
    """
    if samples and samples < 2:
        raise KeppError(f"--samples needs K >= 2 plans per episode, got {samples}")
    for name in methods:
        if name not in ALL_METHODS:
            raise unknown_name_error("method", name, ALL_METHODS)
    test = episode_tensors(ds, horizon, "test", setting, m)
    gt = test.actions.numpy()
    hdir = Path(models) / f"T{horizon}" if models is not None else None
    outputs: dict[str, MethodOutput] = {}
    skipped: dict[str, str] = {}
    graph = build_graph(ds, "train")
    planners: dict[int, KEPPPlanner] = {}
    step_pred: np.ndarray | None = None
    step_scores: np.ndarray | None = None

    def missing(name: str) -> str | None:
        if hdir is None:
            return "no models folder given"
        for need in NEEDS.get(name, []):
            if not (hdir / need / "config.json").is_file():
                return f"{hdir / need} not found"
        if name in LLM_METHODS and llm is None:
            return "no LLM endpoint configured (--llm-url / KEPP_LLM_URL, --llm-model / KEPP_LLM_MODEL)"
        return None

    def planner(R: int) -> KEPPPlanner:
        if R not in planners:
            p = KEPPPlanner.from_checkpoints(hdir / "step", hdir / f"plan-graph-R{R}", graph,
                                             sampler=sampler, sampler_steps=sampler_steps, seed=seed)
            check_compatible(p.plan_config, ds, horizon, test.obs_dim, str(hdir / f"plan-graph-R{R}"), setting)
            check_compatible(p.step_config, ds, horizon, test.obs_dim, str(hdir / "step"), setting)
            planners[R] = p
        return planners[R]

    for name in methods:
        why = missing(name)
        if why:
            if strict:
                raise KeppError(f"method {name!r} needs trained models: {why}")
            skipped[name] = why
            continue
        t0 = time.perf_counter()
        extra: dict = {}
        drawn = None
        if name == "random":
            rng = np.random.default_rng(seed)
            plans = rng.integers(0, ds.num_actions, size=gt.shape)
            if samples:
                drawn = rng.integers(0, ds.num_actions, size=(len(gt), samples, horizon))
        elif name == "retrieval":
            plans = _retrieval(_train_tensors(ds, horizon, setting, m), test)
        elif name in ("graph-pred", "graph-gt"):
            if name == "graph-pred":
                if step_pred is None:
                    b = planner_for_endpoints(hdir, ds, horizon, test, sampler, sampler_steps, seed, setting)
                    step_pred, step_scores = b
                ends = step_pred
            else:
                ends = gt[:, [0, -1]]
            recs = make_retriever(graph, "p2kg", 1).batch([tuple(e) for e in ends.tolist()], horizon)
            plans = np.array([r.top for r in recs])
        elif name == "pdpp":
            plans, drawn = _pdpp(hdir, ds, horizon, test, sampler, sampler_steps, seed, setting, samples)
        elif name in LLM_METHODS:
            folder = hdir / LLM_FOLDERS[name]
            model, cfg = load_checkpoint(folder, "plan")
            check_compatible(cfg, ds, horizon, test.obs_dim, where=str(folder), setting=setting)
            if step_pred is None:
                step_pred, step_scores = planner_for_endpoints(hdir, ds, horizon, test, sampler, sampler_steps,
                                                               seed, setting)
            rows = [r.name for r in model.layout.rows]
            cond = {}
            if "graph" in rows:
                retriever = make_retriever(graph, cfg.get("recommend", "p2kg"), int(cfg.get("R", 1)))
                cond["graph"] = torch.from_numpy(retriever.conditions([tuple(e) for e in step_pred.tolist()],
                                                                      horizon))
            recs = []
            if "llm" in rows:
                cond["llm"], recs = llm_condition_rows(llm, torch.from_numpy(step_pred), horizon, ds.num_actions,
                                                       progress=False)
            s = cfg.get("sampler", {})
            how = (sampler or s.get("name", "ddpm"), sampler_steps or s.get("steps"))
            x0 = sample_actions(model, test.obs_start, test.obs_goal, cond, *how, seed=seed + 1)
            plans = model.decode(x0).numpy()
            extra = {"llm_summary": llm.summary(recs),
                     "llm": [{"actions": list(r.actions), "source": r.source} for r in recs]}
            if samples:
                drawn = sample_plans(model, test.obs_start, test.obs_goal, cond, samples, *how, seed=seed + 2)
        elif name == "kepp-nograph":
            model, cfg = load_checkpoint(hdir / "plan-none", "plan")
            check_compatible(cfg, ds, horizon, test.obs_dim, where=str(hdir / "plan-none"), setting=setting)
            s = cfg.get("sampler", {})
            how = (sampler or s.get("name", "ddpm"), sampler_steps or s.get("steps"))
            x0 = sample_actions(model, test.obs_start, test.obs_goal, None, *how, seed=seed + 1)
            plans = model.decode(x0).numpy()
            if samples:
                drawn = sample_plans(model, test.obs_start, test.obs_goal, None, samples, *how, seed=seed + 2)
        else:
            R = 2 if name == "kepp-R2" else 1
            p = planner(R)
            b = p.plan_batch(test.obs_start, test.obs_goal, R,
                             endpoints=gt[:, [0, -1]] if name == "kepp-gt" else None)
            plans = b.plans
            extra = {"endpoints": b.endpoints, "paths": [r.paths for r in b.recommendations],
                     "path_scores": [r.scores for r in b.recommendations]}
            if name != "kepp-gt" and step_pred is None:
                step_pred, step_scores = b.endpoints, b.endpoint_scores
            if samples:
                cond = {"graph": torch.from_numpy(b.conditions)} if p.uses_graph else None
                drawn = sample_plans(p.plan_model, test.obs_start, test.obs_goal, cond, samples, p.sampler,
                                     p.sampler_steps, seed=seed + 2)
        out = MethodOutput(np.asarray(plans), time.perf_counter() - t0, extra)
        if samples and name in SAMPLED:
            out.samples = np.asarray(drawn)
            out.uncertainty = episode_uncertainty(out.samples, test.episodes, ds.num_actions)
            out.seconds = time.perf_counter() - t0
        outputs[name] = out
        note = ""
        if "llm_summary" in extra:
            u = extra["llm_summary"]
            note = f", LLM plans {u['llm']}/{u['episodes']} (fallback {u['fallback_name']!r}: {u['fallback']})"
        log(f"T={horizon} {setting} {name}: SR {success_rate(plans, gt):.2f} ({time.perf_counter() - t0:.1f}s{note})")
    acc = None
    if step_pred is not None:
        acc = {"first_acc": float((step_pred[:, 0] == gt[:, 0]).mean() * 100),
               "last_acc": float((step_pred[:, 1] == gt[:, -1]).mean() * 100)}
        outputs.setdefault("_step", MethodOutput(np.zeros((0, horizon), int), 0.0,
                                                 {"endpoints": step_pred, "scores": step_scores}))
    return HorizonEvaluation(horizon, setting, test, outputs, acc, skipped)


def planner_for_endpoints(hdir: Path, ds: Dataset, horizon: int, test: EpisodeTensors, sampler, steps,
                          seed: int, setting: str) -> tuple[np.ndarray, np.ndarray]:
    """The step model's endpoints on the test episodes (same sampling as the planner's)."""
    model, cfg = load_checkpoint(hdir / "step", "step")
    check_compatible(cfg, ds, horizon, test.obs_dim, where=str(hdir / "step"), setting=setting)
    s = cfg.get("sampler", {})
    ends, scores = predict_endpoints(model, test.obs_start, test.obs_goal, sampler or s.get("name", "ddpm"),
                                     steps or s.get("steps"), seed=seed)
    return ends.numpy(), scores.numpy()


def _retrieval(train: EpisodeTensors, test: EpisodeTensors) -> np.ndarray:
    """Plan of the nearest training episode (Euclidean, standardised ``[v_s, v_g]``)."""
    a = torch.cat([train.obs_start, train.obs_goal], 1)
    b = torch.cat([test.obs_start, test.obs_goal], 1)
    mean, std = a.mean(0), a.std(0).clamp_min(1e-3)
    a, b = (a - mean) / std, (b - mean) / std
    nearest = torch.cat([torch.cdist(b[i:i + 1024], a).argmin(1) for i in range(0, len(b), 1024)])
    return train.actions[nearest].numpy()


def _pdpp(hdir: Path, ds: Dataset, horizon: int, test: EpisodeTensors, sampler, steps, seed: int,
          setting: str, samples: int = 0) -> tuple[np.ndarray, np.ndarray | None]:
    clf, ccfg = load_checkpoint(hdir / "task-classifier", "task-classifier")
    check_compatible(ccfg, ds, None, test.obs_dim, where=str(hdir / "task-classifier"), setting=setting)
    model, cfg = load_checkpoint(hdir / "plan-task", "plan")
    check_compatible(cfg, ds, horizon, test.obs_dim, where=str(hdir / "plan-task"), setting=setting)
    with torch.no_grad():
        task = clf(test.obs_start, test.obs_goal).argmax(-1)
    cond = {"task": F.one_hot(task, model.layout.rows[0].width).float()}
    s = cfg.get("sampler", {})
    how = (sampler or s.get("name", "ddpm"), steps or s.get("steps"))
    x0 = sample_actions(model, test.obs_start, test.obs_goal, cond, *how, seed=seed + 1)
    drawn = sample_plans(model, test.obs_start, test.obs_goal, cond, samples, *how, seed=seed + 2) \
        if samples else None
    return model.decode(x0).numpy(), drawn
