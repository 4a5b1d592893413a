"""Training data that does not sit whole in memory (docs, At scale): observation windows written once
to a file and memory-mapped, P²KG condition rows made per batch. Mapped training must give the
same model as in-memory training, and the windows file must be reused, refreshed and never
left half-written."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from kepp_core.data import load_dataset
from kepp_core.errors import KeppError
from kepp_core.models.checkpoint import load_checkpoint
from kepp_core.training import episode_tensors, preset
from kepp_core.training.trainers import train_plan_model, train_step_model
from kepp_core.training.windows import MappedRows, observation_stats


@pytest.fixture(scope="module")
def world(synth_world):
    return load_dataset("demo", synth_world)


@pytest.mark.slow
def test_mapped_rows_read_what_memory_holds(world, tmp_path):
    mem = episode_tensors(world, 3, "train")
    mapped = episode_tensors(world, 3, "train", store=tmp_path)
    assert mapped.mapped and not mem.mapped
    assert isinstance(mapped.obs_start, MappedRows) and mapped.obs_start.shape == tuple(mem.obs_start.shape)
    idx = torch.randperm(len(mem), generator=torch.Generator().manual_seed(0))[:37]
    assert torch.equal(mapped.obs_start[idx], mem.obs_start[idx])
    assert torch.equal(mapped.obs_goal[5:19], mem.obs_goal[5:19])
    sub, sub_mem = mapped.subset(idx), mem.subset(idx)  # a subset of a subset, with repeats
    pick = torch.tensor([3, 3, 0, 36])
    assert torch.equal(sub.subset(pick).obs_goal[torch.arange(4)], sub_mem.obs_goal[pick])
    assert torch.equal(sub.in_memory().obs_start, sub_mem.obs_start)


def test_chunked_statistics_equal_the_in_memory_ones(world, tmp_path, monkeypatch):
    import kepp_core.training.windows as windows

    monkeypatch.setattr(windows, "CHUNK", 7)  # many chunks: the streaming sums must add up
    mem = episode_tensors(world, 3, "train")
    mapped = episode_tensors(world, 3, "train", store=tmp_path)
    m1, s1 = observation_stats(mem.obs_start, mem.obs_goal)
    m2, s2 = observation_stats(mapped.obs_start, mapped.obs_goal)
    assert torch.allclose(m1, m2, rtol=1e-5, atol=1e-6) and torch.allclose(s1, s2, rtol=1e-4, atol=1e-6)


def test_windows_file_is_reused_and_refreshed_when_features_change(world, synth_world, tmp_path):
    episode_tensors(world, 3, "train", store=tmp_path)
    files = sorted(tmp_path.glob("*.npy"))
    assert len(files) == 2
    stamps = [f.stat().st_mtime_ns for f in files]
    episode_tensors(world, 3, "train", store=tmp_path)
    assert [f.stat().st_mtime_ns for f in files] == stamps and sorted(tmp_path.glob("*.npy")) == files
    episode_tensors(world, 4, "train", store=tmp_path)  # other episodes: other files
    assert len(list(tmp_path.glob("*.npy"))) == 4


def test_a_bad_feature_file_leaves_no_half_written_windows(world, tmp_path, monkeypatch):
    import copy
    import shutil

    import kepp_core.training.windows as windows

    monkeypatch.setattr(windows, "CHUNK", 7)

    feats = tmp_path / "features"
    feats.mkdir()
    ds = copy.deepcopy(world)
    for v in ds.videos:
        if v.feature_file is not None:
            shutil.copy(v.feature_file, feats / v.feature_file.name)
            v.feature_file = feats / v.feature_file.name
    victim = ds.split("train")[-1]  # read in the last chunk, after the others were written
    np.save(victim.feature_file, np.full((4, 3), np.nan, np.float32))
    store = tmp_path / "windows"
    with pytest.raises(KeppError, match=victim.feature_file.name):
        episode_tensors(ds, 3, "train", store=store)
    assert not store.exists() or not any(store.iterdir()), list(store.iterdir())


@pytest.mark.slow
def test_mapped_training_gives_the_in_memory_model(world, tmp_path):
    """Step model and graph-conditioned planner (R=2, with ground-truth-endpoint copies) trained
    from memory-mapped windows equal the ones trained from tensors."""
    weights, scores = {}, {}
    for mode in ("memory", "mapped"):
        hdir = tmp_path / mode / "T3"
        cfg = preset("demo", horizon=3, train_steps=40, val_every=20, windows=mode, R=2, gt_augment=True)
        step = train_step_model(world, cfg, hdir / "step", progress=False)
        plan = train_plan_model(world, cfg, hdir / "plan-graph-R2", step_dir=hdir / "step", progress=False)
        scores[mode] = (step["best"], plan["best"])
        model, _ = load_checkpoint(hdir / "plan-graph-R2", "plan", "cpu")
        weights[mode] = model.state_dict()
    assert len(list((tmp_path / "mapped" / "T3" / "windows").glob("*.npy"))) == 2
    assert not (tmp_path / "memory" / "T3" / "windows").exists()
    assert scores["memory"] == scores["mapped"]
    for k, v in weights["memory"].items():
        assert torch.allclose(v.float(), weights["mapped"][k].float(), atol=1e-5), k


def test_windows_option_is_checked():
    with pytest.raises(KeppError, match="windows='disk'"):
        preset("demo", windows="disk")
    assert preset("coin-world").windows == "mapped"
