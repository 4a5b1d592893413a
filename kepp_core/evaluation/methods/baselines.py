"""The baselines: random plans, the nearest training episode's plan, zero-shot P²KG planning
(between the step model's, the ground-truth, the endpoint model's or the S3D text tower's endpoints) and PDPP (a planning model conditioned on the task a classifier predicts)."""

from __future__ import annotations

import numpy as np
import torch
from torch.nn import functional as F

from kepp_core.catalog import TASK_CLASSIFIER
from kepp_core.evaluation.methods.base import EvalContext, Method, MethodOutput
from kepp_core.graph.retrieval import top_paths
from kepp_core.training.data import EpisodeTensors

__all__ = ["PDPP", "GraphZeroShot", "NearestEpisode", "RandomPlans", "nearest_episode_plans"]


class RandomPlans(Method):
    """Uniformly random actions."""

    impl, sampled = "random", True

    def plan(self, ctx: EvalContext) -> MethodOutput:
        k = ctx.options.samples
        rng = np.random.default_rng(ctx.options.seed)
        plans = rng.integers(0, ctx.ds.num_actions, size=ctx.gt.shape)
        drawn = rng.integers(0, ctx.ds.num_actions, size=(len(plans), k, ctx.horizon)) if k else None
        return MethodOutput(plans, samples=drawn)


def nearest_episode_plans(train: EpisodeTensors, test: EpisodeTensors) -> np.ndarray:
    """Plan of the nearest training episode (Euclidean, standardised ``[v_s, v_g]``) for each test episode."""
    a = torch.cat([train.obs_start, train.obs_goal], 1)
    b = torch.cat([test.obs_start, test.obs_goal], 1)
    mean, std = a.mean(0), a.std(0).clamp_min(1e-3)
    a, b = (a - mean) / std, (b - mean) / std
    nearest = torch.cat([torch.cdist(b[i:i + 1024], a).argmin(1) for i in range(0, len(b), 1024)])
    return train.actions[nearest].numpy()


class NearestEpisode(Method):
    """The plan of the nearest training episode in feature space (method name ``retrieval``)."""

    impl = "retrieval"

    def plan(self, ctx: EvalContext) -> MethodOutput:
        return MethodOutput(nearest_episode_plans(ctx.train_tensors(), ctx.test))


class GraphZeroShot(Method):
    """Zero-shot planning: the top P²KG path between the endpoints of the entry's source
    (:meth:`~kepp_core.catalog.sources.EndpointSource.endpoints`): the step model's
    predicted ones, the ground truth, the endpoint model's most probable first and last step, or
    those the S3D text tower scores highest for the start and goal clips (``graph-text``)."""

    impl = "zero-shot"

    def plan(self, ctx: EvalContext) -> MethodOutput:
        return MethodOutput(top_paths(ctx.graph, self.entry.ends.endpoints(ctx), ctx.horizon, self.entry.R))


class PDPP(Method):
    """PDPP: a planning model with a task-class row, the task predicted by the classifier."""

    impl, sampled = "pdpp", True

    def plan(self, ctx: EvalContext) -> MethodOutput:
        classifier, _ = ctx.load(TASK_CLASSIFIER)
        model, spec = ctx.load(self.entry.plan_model)
        with torch.no_grad():
            task = classifier(ctx.test.obs_start, ctx.test.obs_goal).argmax(-1)
        cond = {"task": F.one_hot(task, model.layout.rows[0].width).float()}
        return ctx.draw(model, spec, cond)

