"""The per-folder index caches of a dataset (annotation rows, feature shapes) are only caches: an
index edited by hand is read again, never believed or fatal, and a file rewritten with the same size
and modification time is noticed (its inode change time moved)."""

from __future__ import annotations

import json
import os

import pytest

from kepp_core.cli import main
from kepp_core.data import load_crosstask
from kepp_core.data.crosstask import ANNOTATION_INDEX
from tests.helpers.data import write_crosstask


def stats(capsys, root) -> dict:
    assert main(["data", "stats", "--dataset", "crosstask", "--root", str(root), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.fixture
def indexed(tmp_path):
    root = write_crosstask(tmp_path / "ct")
    load_crosstask(root)  # writes the index
    index = root / "annotations" / ANNOTATION_INDEX
    assert index.is_file()
    return root, index


@pytest.mark.parametrize("edit", [
    lambda d: d["files"].update({"101_a.csv": [*d["files"]["101_a.csv"][:4], "not rows"]}),
    lambda d: d["files"].update({"101_a.csv": [*d["files"]["101_a.csv"][:4], [["x", "y", "z", "w"]]]}),
    lambda d: d["files"].update({"101_a.csv": [*d["files"]["101_a.csv"][:4], [[1, -5.0, 1e308, 1]]]}),
    lambda d: d["files"].update({"101_a.csv": [*d["files"]["101_a.csv"][:4], [[True, 0, 1, 1]]]}),
    lambda d: d["files"].update({"101_a.csv": [*d["files"]["101_a.csv"][:4], [[99, 0.0, 1.0, 1]]]}),  # no step of the task
    lambda d: d["files"].update({"101_a.csv": [*d["files"]["101_a.csv"][:4], [[1, 0.0, 1.0, -3]]]}),  # no line of a file
    lambda d: d["files"].update({"101_a.csv": "not an entry"}),
    lambda d: d.update(files=[1, 2, 3]),
    lambda d: d.update(version=1),
])
def test_an_index_edited_by_hand_is_read_again_not_believed(capsys, indexed, edit):
    root, index = indexed
    before = stats(capsys, root)
    data = json.loads(index.read_text())
    edit(data)
    index.write_text(json.dumps(data))
    assert stats(capsys, root) == before


@pytest.mark.parametrize("text", ["[" * 100000 + "]" * 100000, '{"files": 1e999}', "\xff\xfe garbage", "", "null"])
def test_an_unreadable_index_is_rebuilt(capsys, indexed, text):
    root, index = indexed
    before = stats(capsys, root)
    index.write_text(text, encoding="latin-1")
    assert stats(capsys, root) == before


def test_a_file_rewritten_with_the_same_size_and_time_is_read_again(indexed):
    root, index = indexed
    csv = root / "annotations" / "101_a.csv"
    first = [s.action for s in next(v for v in load_crosstask(root).videos if v.id == "a").steps]
    st = os.stat(csv)
    text = csv.read_text()
    csv.write_text(text.replace("1,0,2\n", "4,0,2\n", 1))  # same size: one digit changed
    os.utime(csv, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert os.stat(csv).st_size == st.st_size and os.stat(csv).st_mtime_ns == st.st_mtime_ns
    second = [s.action for s in next(v for v in load_crosstask(root).videos if v.id == "a").steps]
    assert second != first and second[0] != first[0]
