"""Loaders on the shared real annotation sets and on small hand-written CrossTask folders."""

from __future__ import annotations

import json

import numpy as np
import pytest

from kepp_core.data import load_crosstask, load_dataset, load_plans, make_episodes, observations
from kepp_core.data.episodes import observation_window
from kepp_core.data.records import seeded_split
from kepp_core.data.stats import dataset_stats
from kepp_core.errors import KeppError
from tests.helpers.data import write_crosstask


# --- COIN --------------------------------------------------------------------------------
def test_coin_split_has_7064_train_and_3006_test_videos(coin_dataset):
    assert len(coin_dataset.split("train")) == 7064
    assert len(coin_dataset.split("test")) == 3006


def test_coin_test_episode_counts_match_the_convention(coin_dataset):
    assert len(make_episodes(coin_dataset, 3, "test")) == 5571
    assert len(make_episodes(coin_dataset, 4, "test")) == 3391


def test_coin_steps_are_sorted_by_segment_start(coin_dataset):
    videos = coin_dataset.videos[:500]
    assert len(videos) == 500 and all(len(v.steps) >= 1 for v in videos)  # every video has steps to order
    for v in videos:
        starts = [s.start for s in v.steps]
        assert starts == sorted(starts)


def test_coin_actions_are_step_ids_with_unique_names(coin_dataset, coin_json):
    db = json.loads(coin_json.read_text())["database"]
    ids = {a["id"] for v in db.values() for a in v["annotation"]}
    assert coin_dataset.num_actions == len(ids) == 768
    assert len(set(coin_dataset.actions)) == 768
    # labels shared by steps of two tasks are told apart by the task
    assert "begin to run up (PractisePoleVault)" in coin_dataset.actions
    assert "begin to run up (PractiseTripleJump)" in coin_dataset.actions


def test_coin_label_mode_merges_equal_labels(coin_json):
    from kepp_core.data import load_coin

    ds = load_coin(coin_json, actions="labels")
    assert ds.num_actions == 739 and "begin to run up" in ds.actions
    assert len(make_episodes(ds, 3, "test")) == 5571


# --- NIV plans JSONL ------------------------------------------------------------------------
def test_niv_plans_have_100_train_and_42_test_videos(niv_dataset):
    assert len(niv_dataset.split("train")) == 100
    assert len(niv_dataset.split("test")) == 42
    assert len(niv_dataset.tasks) == 5


def test_niv_numeric_labels_are_ordered_numerically(niv_dataset):
    assert niv_dataset.actions[:3] == ["0", "1", "2"]
    assert niv_dataset.actions == sorted(niv_dataset.actions, key=int)


def test_plans_without_segments_give_episodes_without_observations(niv_dataset):
    eps = make_episodes(niv_dataset, 3, "test")
    assert eps and all(e.start_window is None for e in eps)
    with pytest.raises(KeppError, match="no step segments"):
        observations(eps[:1])


# --- CrossTask layout ---------------------------------------------------------------------


def test_crosstask_tasks_with_equal_step_names_share_actions(tmp_path):
    ds = load_crosstask(write_crosstask(tmp_path))
    assert ds.actions == ["boil water", "pour water", "add tea", "stir", "squeeze lemon"]
    assert len(ds.actions) == 5  # 7 task steps, 5 actions
    lemonade = next(v for v in ds.videos if v.id == "c")
    assert ds.labels(lemonade.plan) == ["squeeze lemon", "pour water", "stir"]


def facts(ds) -> list[tuple]:
    """What a loaded dataset says about each video (to compare two loads)."""
    return [(v.task, v.id, v.split, v.duration, v.feature_file, v.video_file, [(s.action, s.start, s.end) for s in v.steps])
            for v in ds.videos]


def test_crosstask_second_load_reads_its_indexes_not_the_files_and_agrees(tmp_path, monkeypatch):
    import kepp_core.data.crosstask as crosstask
    import kepp_core.data.feature_files as feature_files

    root = write_crosstask(tmp_path)
    first = load_crosstask(root)
    assert (root / "features" / feature_files.SHAPES_FILE).is_file()
    assert (root / "annotations" / crosstask.ANNOTATION_INDEX).is_file()

    def opened(path):
        raise AssertionError(f"{path} was opened")

    monkeypatch.setattr(feature_files, "read_feature_shape", opened)
    monkeypatch.setattr(crosstask, "_annotation_rows", opened)
    assert facts(load_crosstask(root)) == facts(first)
    monkeypatch.undo()
    for index in (root / "features" / feature_files.SHAPES_FILE, root / "annotations" / crosstask.ANNOTATION_INDEX):
        index.write_text("{not json")  # a broken index is rebuilt, never trusted
    assert facts(load_crosstask(root)) == facts(first)
    assert json.loads((root / "features" / feature_files.SHAPES_FILE).read_text())["files"]


def test_crosstask_files_changed_after_indexing_are_read_again(tmp_path):
    root = write_crosstask(tmp_path)
    load_crosstask(root)
    np.save(root / "features" / "101_a.npy", np.zeros((30, 8), np.float32))
    (root / "annotations" / "101_a.csv").write_text("1,0,2\n2,3,25\n")
    ds = load_crosstask(root)
    assert ds.video("a").duration == 30.0 and [(s.start, s.end) for s in ds.video("a").steps] == [(0, 2), (3, 25)]
    (root / "features" / "101_a.npy").unlink()  # a file gone: its video has no features, the index forgets it
    ds = load_crosstask(root)
    assert ds.video("a").feature_file is None and ds.video("a").duration is None
    shapes = json.loads((root / "features" / "feature-shapes.json").read_text())["files"]
    assert sorted(shapes) == ["101_b.npy", "102_c.npy", "102_d.npy"]


def test_crosstask_loads_where_its_indexes_cannot_be_written(tmp_path, monkeypatch):
    import kepp_core.data.file_index as file_index

    root = write_crosstask(tmp_path / "read-only")
    expected = facts(load_crosstask(write_crosstask(tmp_path / "writable")))
    assert len(expected) == 4  # the four annotated videos of write_crosstask

    def refuse(path, obj, indent=1):
        raise KeppError(f"{path}: cannot write (folder is read-only)")

    monkeypatch.setattr(file_index, "atomic_write_json", refuse)
    for _ in range(2):
        got = facts(load_crosstask(root))
        assert [f[:4] + f[6:] for f in got] == [f[:4] + f[6:] for f in expected]  # all but the paths
        assert not list(root.rglob("*.json"))


def test_crosstask_uses_videos_val_as_test_split(tmp_path):
    ds = load_crosstask(write_crosstask(tmp_path))
    assert [v.id for v in ds.split("test")] == ["d"]
    assert ds.video("d").plan == (4, 1, 3)  # sorted by segment start


def test_crosstask_features_give_observations_of_m_times_d(tmp_path):
    ds = load_crosstask(write_crosstask(tmp_path))
    eps = make_episodes(ds, 3, "train", setting="conventional", m=3)
    start, goal = observations(eps)
    assert start.shape == goal.shape == (len(eps), 3 * 8)
    feats = np.load(ds.video("a").feature_file)
    ep = next(e for e in eps if e.video.id == "a" and e.first == 1)
    # a_1 = 'pour water' starts at 3 s: conventional window centred there is seconds 2, 3, 4
    assert ep.start_window == (2, 3, 4)
    np.testing.assert_array_equal(start[eps.index(ep)], feats[[2, 3, 4]].reshape(-1))


def test_pdpp_setting_windows_follow_the_convention(tmp_path):
    ds = load_crosstask(write_crosstask(tmp_path))
    ep = next(e for e in make_episodes(ds, 3, "train", setting="pdpp") if e.video.id == "a" and e.first == 0)
    assert ep.start_window == (0, 1, 2)    # [start(a_1), start(a_1)+3)
    assert ep.goal_window == (5, 6, 7)     # [end(a_T)-2, end(a_T)+1) with end(a_T) = 7


def test_windows_are_clamped_to_the_video():
    assert observation_window(11.5, 12, 3, centred=True) == (9, 10, 11)
    assert observation_window(0.0, 12, 3, offset=-2) == (0, 1, 2)
    assert observation_window(3.0, 1, 3) == (0, 0, 0)


def test_episode_count_is_windows_of_T_consecutive_steps(tmp_path):
    ds = load_crosstask(write_crosstask(tmp_path))
    eps = make_episodes(ds, 3, None)
    assert len(eps) == sum(len(v.steps) - 2 for v in ds.videos)
    assert all(e.actions == e.video.plan[e.first:e.first + 3] for e in eps)


def test_seeded_split_is_about_70_30_and_stable():
    ids = [f"v{i}" for i in range(2000)]
    split = seeded_split(ids, seed=3)
    share = sum(s == "train" for s in split.values()) / len(ids)
    assert 0.67 < share < 0.73
    assert seeded_split(list(reversed(ids)), seed=3) == split
    assert seeded_split(ids, seed=4) != split


def test_split_without_val_file_is_seeded(tmp_path):
    root = write_crosstask(tmp_path)
    (root / "videos_val.csv").unlink()
    a = [v.split for v in load_crosstask(root, seed=1).videos]
    b = [v.split for v in load_crosstask(root, seed=1).videos]
    assert a == b


def test_stats_report_episodes_per_split(tmp_path):
    st = dataset_stats(load_crosstask(write_crosstask(tmp_path)))
    assert st["videos"] == 4 and st["tasks"] == 2 and st["actions"] == 5
    assert st["episodes"]["3"] == {"train": 2 + 3 + 1, "test": 1}


def test_plans_jsonl_round_trips_through_writer(tmp_path):
    from kepp_core.data import write_plans

    ds = load_crosstask(write_crosstask(tmp_path / "ct"))
    out = tmp_path / "plans.jsonl"
    write_plans(ds, out)
    back = load_plans(out)
    assert [back.labels(v.plan) for v in back.videos] == [ds.labels(v.plan) for v in ds.videos]
    assert [v.split for v in back.videos] == [v.split for v in ds.videos]


def test_load_dataset_by_name(niv_plans):
    assert load_dataset("plans", niv_plans).num_actions == 48
