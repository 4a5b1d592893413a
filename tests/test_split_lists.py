"""The literature's split lists as a dataset (``--dataset split-lists``): ViterbiPlanNet's and PDPP's
shapes, both feature conventions, and broken lists refused in one line."""

from __future__ import annotations

import json
import os
import pickle

import numpy as np
import pytest

from kepp_core.data import load_dataset, make_episodes, observations
from kepp_core.data.split_lists import SplitFiles, listed_episode_ids, read_split_list, split_list_entries
from kepp_core.errors import KeppError
from tests.helpers.cli import assert_one_line_error, run_kepp
from tests.helpers.split_lists import DIM, VIDEOS, entries, write_lists


def _episodes_of_list(path):
    return [(i, ep.plan) for i, ep in zip(listed_episode_ids(read_split_list(path)), read_split_list(path))]


@pytest.mark.parametrize("horizon", [3, 4])
def test_vpn_lists_become_videos_whose_episodes_are_the_lists_entries_in_order(tmp_path, horizon):
    p = write_lists(tmp_path, horizon=horizon)
    ds = load_dataset("split-lists", p["root"])
    for split in ("train", "test"):
        got = [(e.id, e.actions) for e in make_episodes(ds, horizon, split)]
        assert got == _episodes_of_list(p[split])
        assert len(got) == len(json.loads(p[split].read_text()))
    # the whole plans, the list's times kept (overlapping ones too), the features' seconds as durations
    v = ds.video("plant_0003")
    assert [(s.start, s.end, s.action) for s in v.steps] == [tuple(map(float, s[:2])) + (s[2],) for s in VIDEOS[5][2]]
    assert v.split == "test" and v.duration == 18 and v.feature_file.name == "plant_0003.npy"


def test_the_taxonomy_names_the_ids_and_tasks_and_shared_names_get_their_task(tmp_path):
    ds = load_dataset("split-lists", write_lists(tmp_path)["root"])
    assert ds.actions == ["boil water", "add tea", "stir (Make Tea)", "pour cup", "dig hole", "place seedling",
                          "stir (Plant Seedling)", "water plant"]
    assert {t: task.name for t, task in ds.tasks.items()} == {"0": "Make Tea", "1": "Plant Seedling"}
    assert ds.video("tea_0001").plan == (0, 1, 2, 3)  # the ids of the files, unchanged


def test_without_a_taxonomy_the_lists_actions_name_the_ids_and_without_them_their_numbers(tmp_path):
    named = load_dataset("split-lists", write_lists(tmp_path / "a", taxonomy=False)["root"])
    assert named.actions[:2] == ["boil water", "add tea"] and named.actions[2] == "stir (Make Tea)"
    bare = load_dataset("split-lists", write_lists(tmp_path / "b", taxonomy=False, with_actions=False)["root"])
    assert bare.actions == [str(i) for i in range(8)]
    assert [v.plan for v in bare.videos] == [v.plan for v in named.videos]


@pytest.mark.parametrize("convention", ["plain", "dict", "pickle"])
def test_pdpp_shaped_lists_read_features_of_either_convention(tmp_path, convention):
    p = write_lists(tmp_path, shape="pdpp", taxonomy=False, features=convention)
    ds = load_dataset("split-lists", p["root"])
    eps = make_episodes(ds, 3, "test", m=3)
    start, goal = observations(eps)
    assert start.shape == (len(eps), 3 * DIM)
    plain = write_lists(tmp_path / "plain", shape="pdpp", taxonomy=False, features="plain")
    ref = observations(make_episodes(load_dataset("split-lists", plain["root"]), 3, "test", m=3))
    np.testing.assert_array_equal(start, ref[0])
    np.testing.assert_array_equal(goal, ref[1])


def test_the_command_line_lists_and_the_split_file_give_the_same_dataset(tmp_path):
    p = write_lists(tmp_path)
    a = load_dataset("split-lists", p["root"])
    b = load_dataset("split-lists", None, features=p["features"],
                     lists=SplitFiles(train=p["train"], test=p["test"], taxonomy=p["taxonomy"]))
    assert (a.actions, [(v.id, v.plan, v.split, v.duration) for v in a.videos]) == \
        (b.actions, [(v.id, v.plan, v.split, v.duration) for v in b.videos])
    r = run_kepp("data", "stats", "--dataset", "split-lists", "--train-list", p["train"], "--test-list", p["test"],
                 "--taxonomy", p["taxonomy"], "--features", p["features"], "--json")
    assert r.returncode == 0, r.stderr
    stats = json.loads(r.stdout)
    assert stats["videos_per_split"] == {"train": 3, "test": 3} and stats["actions"] == 8
    assert stats["episodes"]["3"]["test"] == len(entries(3, "test"))


def test_a_list_written_from_a_dataset_reads_back_as_the_same_episodes(tmp_path):
    ds = load_dataset("split-lists", write_lists(tmp_path)["root"])
    out = tmp_path / "out"
    out.mkdir()
    for split in ("train", "test"):
        (out / f"{split}.json").write_text(json.dumps(split_list_entries(ds, 3, split)))
    back = load_dataset("split-lists", None, features=tmp_path / "feats",
                        lists=SplitFiles(train=out / "train.json", test=out / "test.json"))
    assert [e.actions for e in make_episodes(back, 3, "test")] == [e.actions for e in make_episodes(ds, 3, "test")]


# --- broken lists: one line naming the file, the entry and what was expected ----------------------------------
def _broken(tmp_path, edit, *words, features="plain"):
    p = write_lists(tmp_path, features=features)
    data = json.loads(p["test"].read_text())
    edit(data, p)
    p["test"].write_text(json.dumps(data))
    with pytest.raises(KeppError) as e:
        load_dataset("split-lists", p["root"])
    message = str(e.value)
    assert "\n" not in message
    for w in (*words,):
        assert w in message, message
    r = run_kepp("data", "stats", "--dataset", "split-lists", "--root", p["root"])
    assert_one_line_error(r, *words)
    return message


@pytest.mark.parametrize("step, words", [
    ([9, 4, 1], ["entry 1", "legal_range[0]", "ends before it starts"]),
    ([4, 9], ["entry 1", "legal_range"]),
    ([-1, 4, 1], ["entry 1", "legal_range"]),
    ([1, 4, "add tea"], ["entry 1", "legal_range"]),
])
def test_a_bad_legal_range_is_refused_naming_the_entry(tmp_path, step, words):
    def edit(data, _p):
        data[1]["id"]["legal_range"][0] = step
    _broken(tmp_path, edit, "test_3.json", *words)


def test_a_missing_feature_file_is_refused_naming_the_entry_and_the_folder(tmp_path):
    def edit(_data, p):
        os.remove(p["features"] / "plant_0002.npy")
    _broken(tmp_path, edit, "test_3.json: entry 3", "plant_0002.npy not found in", "feats")


class _Evil:
    def __reduce__(self):
        return (os.system, ("touch pwned",))


@pytest.mark.parametrize("wrapped", [True, False])
def test_a_dict_feature_file_whose_pickle_names_a_global_is_refused_before_anything_runs(tmp_path, wrapped):
    def edit(_data, p):
        path = p["features"] / "tea_0003.npy"
        if wrapped:
            np.save(path, np.array({"frames_features": _Evil()}, dtype=object), allow_pickle=True)
        else:
            path.write_bytes(pickle.dumps({"frames_features": _Evil()}, protocol=4))
    message = _broken(tmp_path, edit, "tea_0003.npy", "refused to load", "system")
    assert "only numpy arrays" in message
    assert not (tmp_path / "pwned").exists()


@pytest.mark.parametrize("edit, words", [
    (lambda d, p: d[1]["id"]["legal_range"].pop(), ["entry 1", "2 steps", "one horizon"]),
    (lambda d, p: d[1]["id"]["legal_range"][0].__setitem__(2, 5), ["entry 1", "do not continue"]),
    (lambda d, p: d.insert(1, d.pop(3)), ["entry 2", "comes back after other videos"]),
    (lambda d, p: d[-1]["id"]["legal_range"][-1].__setitem__(2, 42), ["entry 5", "action id 42 is not in the taxonomy"]),
    (lambda d, p: d[0]["id"]["actions"].__setitem__(0, "boil milk"), ["boil milk", "the taxonomy names 'boil water'"]),
    (lambda d, p: d[0]["id"].pop("task_id"), ["entry 0", "missing key 'task_id'"]),
    (lambda d, p: d.append(json.loads(p["train"].read_text())[0]), ["tea_0001.npy is also in the train list"]),
    (lambda d, p: d[0]["id"].__setitem__("actions", ["a"]), ["entry 0", "'actions' names 1 steps for 3"]),
])
@pytest.mark.slow
def test_lists_that_are_not_windows_of_one_horizon_are_refused_in_one_line(tmp_path, edit, words):
    _broken(tmp_path, edit, "test_3.json", *words)


def test_a_train_list_without_its_test_list_is_refused(tmp_path):
    p = write_lists(tmp_path)
    assert_one_line_error(run_kepp("data", "stats", "--dataset", "split-lists", "--train-list", p["train"]),
                          "--test-list is missing")
    assert_one_line_error(run_kepp("data", "stats", "--dataset", "plans", "--root", p["train"], "--train-list",
                                   p["train"], "--test-list", p["test"]), "--dataset split-lists")


def test_the_app_opens_split_lists_through_a_split_file_and_only_under_its_allowed_folders(tmp_path):
    from kepp_core.api import AppConfig, open_dataset

    p = write_lists(tmp_path / "data")
    cfg = AppConfig(dataset="split-lists", root=str(p["root"]))
    ds = open_dataset(cfg, roots=(tmp_path.resolve(),))
    assert len(make_episodes(ds, 3, "test")) == len(entries(3, "test"))
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (tmp_path / "data" / "split.toml").write_text(f'train = "{p["train"]}"\ntest = "{outside}/x.json"\n')
    with pytest.raises(KeppError, match="not under a folder this app server allows"):
        open_dataset(cfg, roots=((tmp_path / "data").resolve(),))


def _taxonomy_with(p, key: str | None = None, action: str | None = None) -> None:
    tax = json.loads(p["taxonomy"].read_text())
    if key is not None:
        tax[key] = {"9": "sweep floor"}
    if action is not None:
        tax["0_11_Make Tea"][action] = "sweep floor"
    p["taxonomy"].write_text(json.dumps(tax))


@pytest.mark.parametrize("key, action, words", [
    ("²_33_Sweep", None, ["task key '²_33_Sweep'", "ASCII digits"]),
    ("9" * 900 + "_33_Sweep", None, ["task key '999", "ASCII digits"]),
    (None, "²", ["'0_11_Make Tea': action id '²'", "0..1,000,000 in ASCII digits"]),
    (None, "9" * 5000, ["'0_11_Make Tea': action id '99999999999999999999'...", "0..1,000,000"]),
], ids=["task-superscript-two", "task-of-900-digits", "action-superscript-two", "action-of-5000-digits"])
@pytest.mark.slow
def test_a_taxonomy_id_that_is_no_ascii_number_is_refused_in_one_line(tmp_path, key, action, words):
    _broken(tmp_path, lambda _data, p: _taxonomy_with(p, key, action), "toy_taxonomy.json", *words)


@pytest.mark.slow
def test_a_list_entry_with_a_byte_that_is_not_utf8_is_refused_naming_the_entry(tmp_path):
    p = write_lists(tmp_path)
    data = p["test"].read_bytes()
    at = data.index(b'"Make Tea"', data.index(b'"feature"', 1))
    p["test"].write_bytes(data[:at + 1] + b"\xff" + data[at + 1:])
    r = run_kepp("data", "stats", "--dataset", "split-lists", "--root", p["root"])
    assert_one_line_error(r, "test_3.json: entry 0: not valid UTF-8 text (byte 0xff")
