"""The cache keeps the tables of the records files' versions on disk only (kepp_core.evaluation.store.sources): an
older version's table goes when the file changes, a table two files share stays while one of them names it, a
file gone takes its table with it at the next change, and nothing the cache did not write is ever deleted."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from kepp_core import api
from kepp_core.evaluation.store import file_version, source_keys
from kepp_core.evaluation.records import write_records

RECORD = {"seed": 0, "T": 3, "episode": "t/v/0:3", "video": "v", "task": "t", "gt": [1, 2, 1],
          "plans": {"pdpp": [3, 2, 1]}, "success": {"pdpp": 0}, "acc": {"pdpp": 2 / 3}}


@pytest.fixture(autouse=True)
def cache_home(tmp_path, monkeypatch):
    monkeypatch.setenv("KEPP_HOME", str(tmp_path / "home"))
    return tmp_path / "home" / "records"


def tables(cache: Path) -> set[str]:
    return {p.name for p in cache.glob("*.arrow")}


def edit(path: Path, n: int) -> None:
    write_records(path, [{**RECORD, "episode": f"t/v/{k}:3"} for k in range(n)])


def test_a_files_older_versions_leave_the_cache_as_it_changes(tmp_path, cache_home):
    path = tmp_path / "r.jsonl"
    for n in range(1, 6):
        edit(path, n)
        assert len(api.read_predictions([path])) == n
    assert tables(cache_home) == {f"{file_version(path).key}.arrow"}
    assert source_keys() == {str(path): file_version(path).key}


def test_a_table_two_files_share_stays_while_one_of_them_still_has_those_bytes(tmp_path, cache_home):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    edit(a, 2)
    shutil.copyfile(a, b)
    api.read_predictions([a, b])
    shared = file_version(a).key
    edit(a, 3)  # a changes; b still has the bytes of the shared table
    api.read_predictions([a, b])
    assert tables(cache_home) == {f"{shared}.arrow", f"{file_version(a).key}.arrow"}
    edit(b, 4)
    api.read_predictions([b])
    assert tables(cache_home) == {f"{file_version(a).key}.arrow", f"{file_version(b).key}.arrow"}


def test_a_records_file_removed_takes_its_table_with_it_at_the_next_change(tmp_path, cache_home):
    gone, edited = tmp_path / "gone.jsonl", tmp_path / "edited.jsonl"
    edit(gone, 2)
    edit(edited, 3)
    api.read_predictions([gone, edited])
    old = file_version(gone).key
    gone.unlink()
    edit(edited, 4)
    api.read_predictions([edited])
    assert f"{old}.arrow" not in tables(cache_home) and str(gone) not in source_keys()


def test_only_files_the_cache_wrote_are_deleted_never_a_link_or_a_file_of_another_name(tmp_path, cache_home):
    path = tmp_path / "r.jsonl"
    edit(path, 1)
    api.read_predictions([path])
    first = file_version(path).key
    precious = tmp_path / "precious.arrow"
    precious.write_bytes(b"the user's own file")
    (cache_home / f"{first}.arrow").unlink()
    os.symlink(precious, cache_home / f"{first}.arrow")  # a link where the old table was: never followed, never deleted
    entry = next((cache_home / "sources").iterdir())
    (cache_home / "notes.arrow").write_bytes(b"not a table's name")
    # an entry naming a file outside the cache's form: not an entry, so nothing it names is touched
    (cache_home / "sources" / ("0" * 32)).write_text(json.dumps({"path": str(tmp_path / "nowhere"),
                                                                 "key": "../../precious", "hash": ""}))
    edit(path, 2)
    api.read_predictions([path])
    assert precious.read_bytes() == b"the user's own file"
    assert (cache_home / f"{first}.arrow").is_symlink() and (cache_home / "notes.arrow").is_file()
    assert entry.is_file() and json.loads(entry.read_text())["key"] == file_version(path).key
