"""One dataset per records file, and a file's kind read from its name whatever its case:
``kepp records import --append`` refuses records of another dataset, taxonomy or format in one line
and never replaces a symbolic link by a file; ``P.JSONL``, ``P.Parquet``, a folder's ``A.JSONL`` and a
graph's ``G.SAFETENSORS`` are what their lower-case names are."""

from __future__ import annotations

import hashlib
import os

import pytest

from kepp_core import api
from kepp_core.data.split_lists import listed_episode_ids, read_split_list
from kepp_core.evaluation.records import read_records, write_records
from tests.helpers.cli import in_process, one_error
from tests.helpers.split_lists import lists_with_predictions


@pytest.fixture()
def lists(tmp_path):
    return lists_with_predictions(tmp_path)


def _import(capsys, p, out, *extra, seed=7, method="vpn-run"):
    return in_process(capsys, "records", "import", "--format", "vpn", "--predictions", p["vpn"], "--split", p["test"],
                      "--method", method, "--seed", seed, "--out", out, *extra)


def _digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _imported(capsys, p, out):
    code, err = _import(capsys, p, out)
    assert code == 0, err
    return read_records(out)


def _rewritten(path, change) -> None:
    """``path``'s records, each passed through ``change``, written back."""
    write_records(path, [change(dict(r)) for r in read_records(path)])


def test_append_refuses_records_of_another_dataset_in_one_line_with_the_file_unchanged(lists, tmp_path, capsys):
    out = tmp_path / "other.jsonl"
    _imported(capsys, lists, out)
    _rewritten(out, lambda r: {**r, "video": "demo_" + r["video"], "episode": "demo/" + r["episode"]})
    before = _digest(out)
    code, err = _import(capsys, lists, out, "--append", seed=8)
    one_error(code, err, str(out), "another dataset", "none of this run's", "one records file holds one dataset")
    assert _digest(out) == before


def test_append_refuses_an_episode_with_another_ground_truth_or_a_video_of_another_task(lists, tmp_path, capsys):
    out = tmp_path / "other.jsonl"
    recs = _imported(capsys, lists, out)
    _rewritten(out, lambda r: {**r, "gt": list(reversed(r["gt"]))} if r["episode"] == recs[0]["episode"] else r)
    code, err = _import(capsys, lists, out, "--append", seed=8)
    one_error(code, err, str(out), "another dataset", f"episode {recs[0]['episode']} has gt")
    _rewritten(out, lambda r: {**r, "gt": recs[0]["gt"]} if r["episode"] == recs[0]["episode"] else r)
    _rewritten(out, lambda r: {**r, "task": "Bake Bread"} if r["video"] == recs[0]["video"] else r)
    code, err = _import(capsys, lists, out, "--append", seed=8)
    one_error(code, err, str(out), "another dataset", f"video {recs[0]['video']} has task Bake Bread there")


def test_append_refuses_records_of_another_taxonomy(lists, tmp_path, capsys):
    out = tmp_path / "other.jsonl"
    _imported(capsys, lists, out)
    # records of another run on the same lists, its steps named by another taxonomy
    _rewritten(out, lambda r: {**r, "gt_labels": [f"step {a}" for a in r["gt"]]})
    ids = listed_episode_ids(read_split_list(lists["test"]))
    mine = tmp_path / "mine.jsonl"
    _imported(capsys, lists, mine)
    _rewritten(mine, lambda r: {**r, "gt_labels": [f"action {a}" for a in r["gt"]]})
    from kepp_core.commands._outputs import check_one_dataset
    from kepp_core.errors import KeppError

    with pytest.raises(KeppError, match=r"another taxonomy \(action \d+ is 'step \d+' there, 'action \d+' in this run"):
        check_one_dataset(str(out), list(read_records(out)), list(read_records(mine)))
    check_one_dataset(str(out), list(read_records(out)), list(read_records(out)))  # the same names: no refusal
    assert len(ids) == len(read_records(out))


def test_append_refuses_one_runs_records_into_a_protocols_records(lists, tmp_path, capsys):
    out = tmp_path / "records.jsonl"
    _imported(capsys, lists, out)
    _rewritten(out, lambda r: {"fraction": 0.5, **r})
    before = _digest(out)
    code, err = _import(capsys, lists, out, "--append", seed=8)
    one_error(code, err, str(out), "a protocol's records (with a training fraction)", "one run's records",
              "one records file holds one format")
    assert _digest(out) == before


def test_append_of_the_same_lists_another_seed_still_keeps_both(lists, tmp_path, capsys):
    out = tmp_path / "vpn.jsonl"
    _imported(capsys, lists, out)
    code, err = _import(capsys, lists, out, "--append", seed=8)
    assert code == 0, err
    assert sorted({r["seed"] for r in read_records(out)}) == [7, 8]


def test_append_through_a_symlink_is_refused_naming_its_target_and_the_link_stays(lists, tmp_path, capsys):
    target = tmp_path / "runs" / "vpn.jsonl"
    target.parent.mkdir()
    _imported(capsys, lists, target)
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    before = _digest(target)
    code, err = _import(capsys, lists, link, "--append", seed=8)
    one_error(code, err, str(link), "is a symbolic link", str(target), "--out")
    assert link.is_symlink() and os.readlink(link) == str(target) and _digest(target) == before


@pytest.mark.parametrize("name", ["P.JSONL", "P.Parquet"])
def test_records_are_written_and_read_whatever_the_case_of_their_extension(lists, tmp_path, capsys, name):
    out = tmp_path / name
    code, err = _import(capsys, lists, out)
    assert code == 0, err
    head = out.read_bytes()[:4]
    assert (head == b"PAR1") == name.lower().endswith(".parquet")
    code, err = _import(capsys, lists, out, "--append", seed=8)  # the guard tells it is records by its content
    assert code == 0, err
    preds = api.read_predictions([out])
    assert sorted(set(preds["seed"])) == [7, 8]
    code, err = in_process(capsys, "eval", "--from-records", out, "--json")
    assert code == 0, err


def test_a_records_folder_reads_files_whose_extension_is_in_capitals(lists, tmp_path, capsys):
    from kepp_core.evaluation.store import folder_records

    folder = tmp_path / "recs"
    folder.mkdir()
    _imported(capsys, lists, folder / "A.JSONL")
    files, skipped = folder_records(folder)
    assert [f.name for f in files] == ["A.JSONL"] and not skipped


def test_a_graph_named_in_capitals_is_written_and_read_in_the_compact_form(lists, tmp_path, capsys):
    out = tmp_path / "G.SAFETENSORS"
    code, err = in_process(capsys, "graph", "build", "--dataset", "split-lists", "--root", lists["root"], "--out", out,
                           "--no-fit")
    assert code == 0, err
    assert not out.read_bytes().lstrip().startswith(b"{")  # the compact arrays, not the JSON form
    from kepp_core.graph.build import load_graph

    assert load_graph(out).num_actions > 0
