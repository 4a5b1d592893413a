"""The KEPP rows: the planning model without a condition, the KEPP planner with ``R`` graph
paths (predicted or ground-truth endpoints), and the LLM-conditioned planning models."""

from __future__ import annotations

import torch

from kepp_core.diffusion.sampling import sample_plans
from kepp_core.evaluation.methods.base import STEP, EvalContext, Method, MethodOutput, register
from kepp_core.graph.retrieval import make_retriever
from kepp_core.models.spec import ModelRole, model_folder
from kepp_core.training.trainers import llm_condition_rows


class KeppNoGraph(Method):
    """KEPP's planning model without the graph condition."""

    name, sampled = "kepp-nograph", True
    requires = (ModelRole("plan", "none"),)

    def plan(self, ctx: EvalContext) -> MethodOutput:
        model, spec = ctx.load(ModelRole("plan", "none"))
        return ctx.draw(model, spec, None)


class KeppGraph(Method):
    """The KEPP planner with ``R`` graph paths; ``ground_truth``: ground-truth endpoints (a
    flawless step model) instead of the step model's; ``structured``: the planning model
    trained with the structured loss through the graph (``kepp train plan --structured-weight``)."""

    sampled = True

    def __init__(self, R: int = 1, ground_truth: bool = False, structured: bool = False) -> None:
        self.R, self.ground_truth = R, ground_truth
        self.role = ModelRole("plan", "graph", R, structured)
        self.name = ("kepp-gt" if ground_truth else f"kepp-R{R}") + ("-struct" if structured else "")
        self.requires = (STEP, self.role)
        self.default = not structured

    def plan(self, ctx: EvalContext) -> MethodOutput:
        p = ctx.planner(self.R, self.role)
        b = p.plan_batch(ctx.test.obs_start, ctx.test.obs_goal, self.R,
                         endpoints=ctx.gt[:, [0, -1]] if self.ground_truth else None)
        cond = {"graph": torch.from_numpy(b.conditions)} if p.uses_graph else None
        extra = {"endpoints": b.endpoints, "paths": [r.paths for r in b.recommendations],
                 "path_scores": [r.scores for r in b.recommendations], "action_block": b.action_block,
                 "more_blocks": ctx.block_source(p.plan_model, cond, (p.sampler, p.sampler_steps))}
        if not self.ground_truth:
            ctx.offer_endpoints(b.endpoints, b.endpoint_scores)
        drawn = None
        if ctx.samples:
            drawn = sample_plans(p.plan_model, ctx.test.obs_start, ctx.test.obs_goal, cond, ctx.samples, p.sampler,
                                 p.sampler_steps, seed=ctx.seed + 2)
        return MethodOutput(b.plans, extra=extra, samples=drawn)


class KeppLLM(Method):
    """A planning model conditioned on the LLM's plan for the step model's predicted endpoints,
    alone (``llm``) or after the P²KG row (``graph+llm``); paper Table 6."""

    sampled, needs_llm = True, True

    def __init__(self, condition: str) -> None:
        self.role = ModelRole("plan", condition)
        self.name = "kepp-" + model_folder(self.role)[len("plan-"):]
        self.requires = (STEP, self.role)

    def plan(self, ctx: EvalContext) -> MethodOutput:
        model, spec = ctx.load(self.role)
        ends = ctx.endpoints()
        rows = [r.name for r in model.layout.rows]
        cond = {}
        if "graph" in rows:
            retriever = make_retriever(ctx.graph, spec.recommend, spec.R)
            cond["graph"] = torch.from_numpy(retriever.conditions([tuple(e) for e in ends.tolist()], ctx.horizon))
        recs = []
        if "llm" in rows:
            cond["llm"], recs = llm_condition_rows(ctx.llm, torch.from_numpy(ends), ctx.horizon, ctx.ds.num_actions,
                                                   progress=False)
        out = ctx.draw(model, spec, cond)
        out.extra.update({"llm_summary": ctx.llm.summary(recs),
                          "llm": [{"actions": list(r.actions), "source": r.source} for r in recs]})
        return out


register(KeppNoGraph())
register(KeppGraph(R=1))
register(KeppGraph(R=2))
register(KeppGraph(R=1, ground_truth=True))
register(KeppGraph(R=1, structured=True))
register(KeppLLM("llm"))
register(KeppLLM("graph+llm"))
