"""The KEPP planner: one query and batches through the same code, results, bad input."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.helpers.training import tiny_cfg, tiny_world

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    from kepp_core.data import load_dataset
    from kepp_core.training.suite import train_horizon

    root = tmp_path_factory.mktemp("planner")
    ds = load_dataset("demo", tiny_world(root / "world", seed=1))
    train_horizon(ds, tiny_cfg(horizon=3, train_steps=60), root / "models",
                  ("step", "plan-graph-R1", "plan-none"), progress=False, log=lambda s: None)
    return ds, root / "models"


@pytest.fixture(scope="module")
def test_eps(trained):
    from kepp_core.training import episode_tensors

    return episode_tensors(trained[0], 3, "test")


@pytest.mark.slow
def test_plan_returns_endpoints_paths_condition_plan_and_timings(trained, test_eps):
    from kepp_core.planner import KEPPPlanner

    ds, models = trained
    p = KEPPPlanner.from_models(models, horizon=3)
    r = p.plan(test_eps.obs_start[0].numpy(), test_eps.obs_goal[0].numpy())
    assert r.horizon == 3 and r.R == 1 and len(r.plan) == 3 and len(r.paths) == 1
    assert r.paths[0][0] == r.step_endpoints[0] and r.paths[0][-1] == r.step_endpoints[1]
    assert r.condition.shape == (3, ds.num_actions) and np.allclose(r.condition.sum(1), 1)
    assert all(0 < s <= 1 for s in r.step_scores)
    assert set(r.timings) == {"endpoints", "graph", "plan", "total"} and r.timings["total"] > 0
    assert r.plan_labels == [ds.actions[a] for a in r.plan]
    js = r.to_json()
    assert js["paths"][0]["labels"][0] == ds.actions[r.step_endpoints[0]]


@pytest.mark.slow
def test_plan_with_R2_aggregates_two_paths_with_weights_two_thirds_one_third(trained, test_eps):
    from kepp_core.planner import KEPPPlanner

    p = KEPPPlanner.from_models(trained[1], horizon=3)
    r = p.plan(test_eps.obs_start[1], test_eps.obs_goal[1], R=2)
    assert len(r.paths) == 2
    assert sorted(np.round(r.condition[1][r.condition[1] > 0], 3).tolist()) in ([1.0], [0.333, 0.667])


@pytest.mark.slow
def test_single_plan_equals_its_row_of_a_batch(trained, test_eps):
    from kepp_core.planner import KEPPPlanner

    p = KEPPPlanner.from_models(trained[1], horizon=3)
    b = p.plan_batch(test_eps.obs_start[:1], test_eps.obs_goal[:1])
    r = p.plan(test_eps.obs_start[0].reshape(3, -1), test_eps.obs_goal[0].reshape(3, -1))  # [M, D] works too
    assert tuple(b.plans[0]) == r.plan and tuple(b.endpoints[0]) == r.step_endpoints


def test_planner_learns_the_tiny_world(trained, test_eps):
    from kepp_core.planner import KEPPPlanner

    p = KEPPPlanner.from_models(trained[1], horizon=3)
    b = p.plan_batch(test_eps.obs_start, test_eps.obs_goal)
    gt = test_eps.actions.numpy()
    assert (b.endpoints[:, 0] == gt[:, 0]).mean() > 0.7
    assert (b.plans == gt).mean() > 0.6


def test_ground_truth_endpoints_replace_the_step_model(trained, test_eps):
    from kepp_core.planner import KEPPPlanner

    p = KEPPPlanner.from_models(trained[1], horizon=3)
    gt = test_eps.actions.numpy()[:5]
    b = p.plan_batch(test_eps.obs_start[:5], test_eps.obs_goal[:5], endpoints=gt[:, [0, -1]])
    assert (b.endpoints == gt[:, [0, -1]]).all()
    assert all(r.paths[0][0] == g[0] and r.paths[0][-1] == g[-1] for r, g in zip(b.recommendations, gt))


def test_untrained_horizon_and_wrong_feature_size_are_kepp_errors(trained, test_eps):
    from kepp_core.errors import KeppError
    from kepp_core.planner import KEPPPlanner

    with pytest.raises(KeppError, match=r"no models for horizon T=5 \(trained horizons: 3\)"):
        KEPPPlanner.from_models(trained[1], horizon=5)
    p = KEPPPlanner.from_models(trained[1], horizon=3)
    with pytest.raises(KeppError, match="not T=4"):
        p.plan(test_eps.obs_start[0], test_eps.obs_goal[0], horizon=4)
    with pytest.raises(KeppError, match="expected 24 values"):
        p.plan(np.zeros(10), np.zeros(10))


def test_planner_without_graph_condition_loads_plan_none(trained, test_eps):
    from kepp_core.planner import KEPPPlanner

    p = KEPPPlanner.from_models(trained[1], horizon=3, condition="none")
    assert not p.uses_graph
    assert len(p.plan(test_eps.obs_start[0], test_eps.obs_goal[0]).plan) == 3


@pytest.mark.slow
def test_plan_accepts_video_clips_encoded_like_the_world(synth_world):
    from kepp_core.data import load_dataset
    from kepp_core.diffusion import ProjectedDiffusion, plan_layout, step_layout
    from kepp_core.graph.build import build_graph
    from kepp_core.planner import KEPPPlanner
    from kepp_core.video.encode import encode_video

    ds = load_dataset("demo", synth_world)
    clip = next(v.video_file for v in ds.videos if v.video_file is not None)
    d = encode_video(clip).shape[1]
    step = ProjectedDiffusion(step_layout(3, 3 * d, ds.num_actions), n_steps=4, dim=8, mults=(1, 2)).eval()
    plan = ProjectedDiffusion(plan_layout(3, 3 * d, ds.num_actions), n_steps=4, dim=8, mults=(1, 2)).eval()
    p = KEPPPlanner(step, plan, build_graph(ds))
    obs = p.clips.clip(clip)
    assert obs.shape == (3 * d,)
    assert p.plan(clip, clip).plan == p.plan(obs, obs).plan
