"""Playlists on disk (kepp_core.evaluation.playlists, Workspace.playlists): a round trip, the checks a hostile,
oversized or malformed file meets, atomic writes, names that are not file names, the folders a
playlist may live in (beside the records, the cache home for a read-only or shipped models folder)
and the folders a browser visitor may not reach."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kepp_core import api
from kepp_core.errors import KeppError
from kepp_core.io import TMP_MARK
from kepp_core.paths import DEMO_ASSETS, REPO_ROOT
from kepp_core.evaluation.playlists import MAX_BYTES, MAX_ITEMS, Playlist, PlaylistItem, PlaylistStore, check_name

ITEM = {"episode": "tea/0287/7:3", "method": "kepp-R2", "T": 3,
        "query": {"video": "0287", "ep": "7", "T": "3", "plan": "1", "model": "graph-R2", "R": "2"}}


def items(n: int) -> list[dict]:
    return [{**ITEM, "episode": f"tea/0287/{k}:3", "query": {**ITEM["query"], "ep": str(k)}} for k in range(n)]


def test_a_playlist_round_trips_through_its_file(tmp_path):
    store = PlaylistStore(tmp_path / "playlists")
    assert store.names() == []  # no folder yet: no playlists, nothing created
    assert not (tmp_path / "playlists").exists()
    p = store.add("my talk", items(3))
    assert [i.episode for i in p.items] == ["tea/0287/0:3", "tea/0287/1:3", "tea/0287/2:3"]
    assert store.read("my talk") == p and store.names() == ["my talk"]
    data = json.loads((tmp_path / "playlists" / "my talk.json").read_text())
    assert data["format"] == "kepp-playlist" and data["version"] == 1 and data["items"][1]["query"]["ep"] == "1"
    # the same episode with the same settings is not added twice; appended in order otherwise
    assert len(store.add("my talk", items(4)).items) == 4
    moved = store.write(store.read("my talk").moved(3, -2))
    assert [i.episode[-3] for i in store.read("my talk").items] == ["0", "3", "1", "2"] == \
        [i.episode[-3] for i in moved.items]
    store.write(store.read("my talk").without(0))
    assert [i.episode[-3] for i in store.read("my talk").items] == ["3", "1", "2"]
    store.rename("my talk", "keynote")
    assert store.names() == ["keynote"] and len(store.read("keynote").items) == 3
    with pytest.raises(KeppError, match="exists already"):
        store.add("other", items(1)) and store.rename("keynote", "other")
    store.delete("keynote")
    assert store.names() == ["other"]
    with pytest.raises(KeppError, match="no such playlist"):
        store.read("keynote")


def test_an_ab_pair_round_trips_and_a_plain_item_is_written_as_before(tmp_path):
    store = PlaylistStore(tmp_path / "playlists")
    pair = {**ITEM, "versus": "random"}
    p = store.add("ab", [ITEM, pair])  # the same episode alone and as a pair: two items
    assert [(i.kind, i.methods) for i in p.items] == [("episode", ("kepp-R2",)), ("ab", ("kepp-R2", "random"))]
    assert store.read("ab") == p
    data = json.loads((tmp_path / "playlists" / "ab.json").read_text())
    assert "versus" not in data["items"][0] and data["items"][1]["versus"] == "random"
    assert len(store.add("ab", [pair]).items) == 2  # a pair already there is not added twice


@pytest.mark.parametrize("name, why", [
    ("../outside", "path separator"), ("a/b", "path separator"), ("a\\b", "path separator"),
    ("", "needs a name"), ("   ", "needs a name"), (".hidden", "not allowed"), ("trailing.", "not allowed"),
    ("x" * 65, "not allowed"), ("<script>", "not allowed"), ("nul", "not allowed"), ("COM1.txt", "not allowed"),
    ("tab\there", "not allowed"), ("ünïcode", "not allowed"), (None, "needs a name"),
])
def test_names_that_are_not_safe_file_names_are_refused(tmp_path, name, why):
    with pytest.raises(KeppError, match=why):
        check_name(name)
    with pytest.raises(KeppError, match=why):
        PlaylistStore(tmp_path).add(name, items(1))
    assert list(tmp_path.iterdir()) == []


def write(folder: Path, name: str, data) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


GOOD = {"format": "kepp-playlist", "version": 1, "items": [ITEM]}


@pytest.mark.parametrize("data, message", [
    ("{not json", r"bad\.json:1: invalid JSON"),
    ([1, 2], r"bad\.json: expected a JSON object, got list"),
    ({**GOOD, "format": "other"}, r"bad\.json: 'format' is 'other', expected 'kepp-playlist'"),
    ({**GOOD, "version": 2}, r"bad\.json: 'version' is '2'; this KEPP reads version 1"),
    ({**GOOD, "extra": 1}, r"bad\.json: unknown key 'extra'"),
    ({**GOOD, "items": {"a": 1}}, r"bad\.json: 'items' must be a list, got dict"),
    ({**GOOD, "items": [ITEM] * (MAX_ITEMS + 1)}, rf"'items' holds {MAX_ITEMS + 1} items, more than a playlist may"),
    ({**GOOD, "items": [ITEM, "x"]}, r"bad\.json: items\[1\]: expected an object, got str"),
    ({**GOOD, "items": [{**ITEM, "T": "3"}]}, r"items\[0\]\.T: expected a whole number from 1 to 64, got '3'"),
    ({**GOOD, "items": [{**ITEM, "T": True}]}, r"items\[0\]\.T: expected a whole number"),
    ({**GOOD, "items": [{**ITEM, "T": 10 ** 50}]}, r"items\[0\]\.T: expected a whole number"),
    ({**GOOD, "items": [{k: v for k, v in ITEM.items() if k != "episode"}]}, r"items\[0\]: missing 'episode'"),
    ({**GOOD, "items": [{**ITEM, "episode": 7}]}, r"items\[0\]\.episode: expected a string, got int"),
    ({**GOOD, "items": [{**ITEM, "episode": "e" * 5000}]}, r"items\[0\]\.episode: longer than 300 characters"),
    ({**GOOD, "items": [{**ITEM, "query": {"video": 1}}]}, r"items\[0\]\.query\.video: expected a string, got int"),
    ({**GOOD, "items": [{**ITEM, "query": {"<img>": "x"}}]}, r"items\[0\]\.query: key '<img>' is not a query name"),
    ({**GOOD, "items": [{**ITEM, "query": {f"k{i}": "x" for i in range(30)}}]}, r"items\[0\]\.query: more than 24 keys"),
    ({**GOOD, "items": [{**ITEM, "query": []}]}, r"items\[0\]\.query: expected an object of strings, got list"),
    ({**GOOD, "items": [{**ITEM, "run": "rm -rf /"}]}, r"items\[0\]: unknown key 'run'"),
    ({**GOOD, "items": [{**ITEM, "versus": 7}]}, r"items\[0\]\.versus: expected a string, got int"),
    ({**GOOD, "items": [{**ITEM, "versus": "kepp-R2"}]}, r"items\[0\]\.versus: 'kepp-R2' is method A too"),
    ({**GOOD, "items": [{**ITEM, "method": "", "versus": "random"}]}, r"items\[0\]\.versus: an A/B pair needs method A"),
    ('{"format": "kepp-playlist", "version": 1, "items": [' * 1 + "[" * 100_000 + "]" * 100_000 + "]}",
     r"bad\.json"),
    ("NaN", r"bad\.json: NaN \(not a JSON number\) is not readable"),
])
def test_a_malformed_or_hostile_file_is_one_message_naming_the_file_and_key(tmp_path, data, message):
    write(tmp_path, "bad", data)
    with pytest.raises(KeppError, match=message):
        PlaylistStore(tmp_path).read("bad")


def test_an_oversized_file_is_not_read(tmp_path):
    path = write(tmp_path, "big", {**GOOD, "items": [{**ITEM, "note": "x" * 1000}] * 260})
    assert path.stat().st_size > MAX_BYTES
    with pytest.raises(KeppError, match=rf"big\.json: \d+ bytes, larger than a playlist file may be \({MAX_BYTES}\)"):
        PlaylistStore(tmp_path).read("big")
    with pytest.raises(KeppError, match=rf"is full: {MAX_ITEMS} items at most"):
        PlaylistStore(tmp_path).add("long", items(MAX_ITEMS + 1))
    assert not (tmp_path / "long.json").exists()


def test_files_whose_names_are_not_playlist_names_are_left_out_of_the_list(tmp_path):
    write(tmp_path, "good", GOOD)
    write(tmp_path, "<img src=x onerror=alert(1)>", GOOD)
    write(tmp_path, ".hidden", GOOD)
    (tmp_path / "notes.txt").write_text("x")
    assert PlaylistStore(tmp_path).listing() == (["good"], 2)


def test_a_write_is_atomic_a_killed_writer_leaves_the_old_file(tmp_path):
    store = PlaylistStore(tmp_path)
    store.add("talk", items(2))
    before = (tmp_path / "talk.json").read_bytes()
    code = ("import sys; from kepp_core.evaluation.playlists import PlaylistStore; "
            f"PlaylistStore(sys.argv[1]).add('talk', {items(5)!r})")
    env = {**os.environ, "KEPP_FAULT_AT": "before-rename:talk.json", "PYTHONPATH": str(REPO_ROOT)}
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path)], env=env, capture_output=True)
    assert proc.returncode == 137  # killed between writing the new file and renaming it over the old one
    assert (tmp_path / "talk.json").read_bytes() == before
    assert len(store.read("talk").items) == 2 and store.names() == ["talk"]
    assert any(TMP_MARK in p.name for p in tmp_path.iterdir())  # the torn temporary is not a playlist


def test_playlists_live_beside_the_records_or_in_the_cache_home(tmp_path, monkeypatch):
    monkeypatch.setenv("KEPP_HOME", str(tmp_path / "home"))
    records = tmp_path / "run" / "predictions.jsonl"
    records.parent.mkdir()
    records.write_text("")
    ws = api.Workspace(api.AppConfig(predictions=str(records)))
    assert ws.playlists_folder() == tmp_path / "run" / "playlists"
    ws.playlists().add("talk", items(1))
    assert (tmp_path / "run" / "playlists" / "talk.json").is_file()
    # the shipped demo models stay clean: their playlists go to the cache home
    shipped = api.Workspace(api.AppConfig(predictions=str(DEMO_ASSETS / "predictions.jsonl")))
    assert shipped.playlists_folder().parent == tmp_path / "home" / "playlists"
    # a folder that cannot hold a playlists folder (here a file has its name): the cache home too
    blocked = tmp_path / "blocked"
    blocked.mkdir()
    (blocked / "playlists").write_text("a file")
    folder = api.Workspace(api.AppConfig(predictions=str(blocked))).playlists_folder()
    assert folder.parent == tmp_path / "home" / "playlists" and folder != shipped.playlists_folder()


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes to read-only folders")
def test_a_read_only_records_folder_keeps_working(tmp_path, monkeypatch):
    monkeypatch.setenv("KEPP_HOME", str(tmp_path / "home"))
    ro = tmp_path / "ro"
    ro.mkdir()
    (ro / "predictions.jsonl").write_text("")
    ro.chmod(0o555)
    try:
        store = api.Workspace(api.AppConfig(predictions=str(ro))).playlists()
        store.add("talk", items(1))
        assert store.folder.parent == tmp_path / "home" / "playlists" and store.names() == ["talk"]
        assert sorted(p.name for p in ro.iterdir()) == ["predictions.jsonl"]
    finally:
        ro.chmod(0o755)


def test_a_visitor_reads_and_writes_playlists_only_where_the_server_allows(tmp_path, monkeypatch):
    monkeypatch.setenv("KEPP_HOME", str(tmp_path / "home"))
    allowed, outside = tmp_path / "allowed", tmp_path / "outside"
    write(outside, "secret", GOOD)
    start = api.AppConfig(allow_roots=(str(allowed),))
    # a session whose records folder lies outside the allowed folders
    store = api.Workspace(api.AppConfig(predictions=str(outside))).playlists(start)
    with pytest.raises(KeppError, match="is not under a folder this app server allows"):
        store.names()
    with pytest.raises(KeppError, match="is not under a folder this app server allows"):
        store.read("secret")
    with pytest.raises(KeppError, match="is not under a folder this app server allows"):
        store.add("new", items(1))
    assert sorted(p.name for p in outside.iterdir()) == ["secret.json"]
    # inside the allowed folder, a symlinked playlist that points outside is refused as well
    (allowed / "playlists").mkdir(parents=True)
    (allowed / "playlists" / "link.json").symlink_to(outside / "secret.json")
    inside = api.Workspace(api.AppConfig(predictions=str(allowed))).playlists(start)
    assert inside.names() == ["link"]
    with pytest.raises(KeppError, match="is not under a folder this app server allows"):
        inside.read("link")
    inside.add("talk", [ITEM])
    assert inside.read("talk").items[0] == PlaylistItem(**ITEM)
    assert Playlist("p").to_json()["items"] == []


def test_a_playlists_talk_length_round_trips_and_a_bad_one_is_refused_naming_file_and_key(tmp_path):
    store = PlaylistStore(tmp_path)
    store.add("talk", [PlaylistItem("tea/0287/7:3", "kepp-R2", 3).to_json()])
    path = store.path("talk")
    data = json.loads(path.read_text())
    assert "minutes" not in data and store.read("talk").minutes is None  # none set: the file is as before
    path.write_text(json.dumps({**data, "minutes": 20}))
    assert store.read("talk").minutes == 20 and store.read("talk").to_json()["minutes"] == 20
    for bad in (0, -5, 601, "20", True, None.__class__.__name__):
        path.write_text(json.dumps({**data, "minutes": bad}))
        with pytest.raises(KeppError, match=r"talk\.json: 'minutes' is .*expected the talk's length in minutes"):
            store.read("talk")
