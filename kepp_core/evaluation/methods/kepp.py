"""The KEPP rows: the planning model without a condition, the KEPP planner with ``R`` graph
paths between its endpoint source's endpoints, and the LLM-conditioned planning models."""

from __future__ import annotations

import torch

from kepp_core.diffusion.sampling import sample_plans
from kepp_core.evaluation.methods.base import BlockSampler, EvalContext, Method, MethodOutput
from kepp_core.graph.retrieval import make_retriever
from kepp_core.training.trainers import llm_condition_rows

__all__ = ["KeppGraph", "KeppLLM", "KeppNoGraph"]


class KeppNoGraph(Method):
    """KEPP's planning model without the graph condition."""

    impl, sampled = "planning-model", True

    def plan(self, ctx: EvalContext) -> MethodOutput:
        model, spec = ctx.load(self.entry.plan_model)
        return ctx.draw(model, spec, None)


class KeppGraph(Method):
    """The KEPP planner with the entry's ``R`` graph paths between its endpoint source's endpoints: the
    planner's own step model's, or those the source gives it
    (:meth:`~kepp_core.catalog.sources.EndpointSource.given`: the ground truth, a flawless step model;
    the endpoint model's); with a ``structured`` entry, the planning model trained with the structured
    loss through the graph (``kepp train plan --structured-weight``)."""

    impl, sampled = "kepp", True

    def plan(self, ctx: EvalContext) -> MethodOutput:
        R, o = self.entry.R, ctx.options
        given = self.entry.ends.given(ctx)
        p = ctx.planner(self.entry.plan_model)
        b = p.plan_batch(ctx.test.obs_start, ctx.test.obs_goal, R, endpoints=given)
        cond = {"graph": torch.from_numpy(b.conditions)} if p.uses_graph else None
        if given is None:  # the step model's: kept for the rows (and the records) that read them
            ctx.offer_endpoints(b.endpoints, b.endpoint_scores)
        drawn = None
        if o.samples:
            drawn = sample_plans(p.plan_model, ctx.test.obs_start, ctx.test.obs_goal, cond, o.samples, p.sampler,
                                 p.sampler_steps, seed=o.seed + 2)
        return MethodOutput(b.plans, samples=drawn, endpoints=b.endpoints, paths=[r.paths for r in b.recommendations],
                            path_scores=[r.scores for r in b.recommendations], action_block=b.action_block,
                            more_blocks=BlockSampler(p.plan_model, cond, p.sampler, p.sampler_steps))


class KeppLLM(Method):
    """A planning model conditioned on the LLM's plan for its endpoint source's endpoints (the step
    model's predicted ones in the paper), alone (``llm``) or after the P²KG row (``graph+llm``); paper
    Table 6."""

    impl, sampled = "kepp-llm", True

    def plan(self, ctx: EvalContext) -> MethodOutput:
        model, spec = ctx.load(self.entry.plan_model)
        ends = self.entry.ends.endpoints(ctx)
        rows = [r.name for r in model.layout.rows]
        cond = {}
        if "graph" in rows:
            retriever = make_retriever(ctx.graph, spec.scorer, spec.R)
            cond["graph"] = torch.from_numpy(retriever.conditions([tuple(e) for e in ends.tolist()], ctx.horizon))
        recs = []
        if "llm" in rows:
            cond["llm"], recs = llm_condition_rows(ctx.llm, torch.from_numpy(ends), ctx.horizon, ctx.ds.num_actions,
                                                   progress=False)
        out = ctx.draw(model, spec, cond)
        out.llm_summary = ctx.llm.summary(recs)
        out.llm_plans = [{"actions": list(r.actions), "source": r.source} for r in recs]
        return out

