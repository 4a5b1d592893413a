"""Playlists on a lab's shared server (docs/reliability.md, "A lab's shared server"): every browser
session of one ``kepp app`` is a thread of one process, and a playlist is one file in the server's
folder; edits by several sessions at once (adds, removes, moves, renames) all land, none overwrites
another's."""

from __future__ import annotations

import threading

import pytest

from kepp_core.errors import KeppError
from kepp_core.evaluation.playlists import PlaylistStore

ITEM = {"episode": "tea/0287/7:3", "method": "kepp-R2", "T": 3,
        "query": {"video": "0287", "ep": "7", "T": "3", "plan": "1", "model": "graph-R2", "R": "2"}}


def item(session: int, k: int) -> dict:
    return {**ITEM, "episode": f"tea/{session:04d}/{k}:3", "query": {**ITEM["query"], "video": f"{session:04d}"}}


def at_once(work, sessions: int = 8) -> None:
    """``work(session)`` in ``sessions`` threads started together; re-raises the first error."""
    errors, gate = [], threading.Barrier(sessions)

    def run(s: int) -> None:
        gate.wait()
        try:
            work(s)
        except BaseException as e:  # noqa: BLE001 - handed to the test below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(s,)) for s in range(sessions)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "an edit never finished (a lock never released)"
    if errors:
        raise errors[0]


def test_sessions_adding_to_one_playlist_at_once_all_land(tmp_path):
    store = PlaylistStore(tmp_path / "playlists")
    at_once(lambda s: [store.add("lab talk", [item(s, k)]) for k in range(10)])
    held = {i.episode for i in store.read("lab talk").items}
    assert held == {item(s, k)["episode"] for s in range(8) for k in range(10)}  # 80: none lost


def test_sessions_removing_and_moving_items_at_once_lose_no_edit(tmp_path):
    store = PlaylistStore(tmp_path / "playlists")
    store.add("lab talk", [item(s, k) for s in range(8) for k in range(3)])

    def edit(s: int) -> None:
        for k in range(3):  # each session removes its own items, one edit at a time, moving one first
            store.edit("lab talk", lambda p: p.moved(len(p.items) - 1, -1))
            store.edit("lab talk", lambda p: p.without([i.episode for i in p.items].index(item(s, k)["episode"])))

    at_once(edit)
    assert store.read("lab talk").items == ()


def test_renames_at_once_never_wait_on_each_other_and_never_overwrite(tmp_path):
    store = PlaylistStore(tmp_path / "playlists")
    store.add("a", [item(0, 0)])
    store.add("b", [item(1, 0)])

    def swap(s: int) -> None:  # a -> b and b -> a, over and over: both exist, both refused, no wait forever
        for _ in range(50):
            with pytest.raises(KeppError, match="exists already"):
                store.rename(*(("a", "b") if s % 2 == 0 else ("b", "a")))

    at_once(swap, sessions=2)
    outcomes = []

    def rename(s: int) -> None:  # a -> c and b -> c at once: one lands, the other is refused
        try:
            outcomes.append(store.rename("a" if s % 2 == 0 else "b", "c").items[0].episode)
        except KeppError as e:
            outcomes.append(str(e))

    at_once(rename, sessions=2)
    landed = [o for o in outcomes if "exists already" not in o]
    assert len(landed) == 1 and [i.episode for i in store.read("c").items] == landed
    assert sorted(store.names()) in (["a", "c"], ["b", "c"])
    with pytest.raises(KeppError, match="exists already"):
        store.rename("c", "c")  # itself: refused at once, not a wait on its own lock
