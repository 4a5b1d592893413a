"""``kepp talk export`` and a playlist that is not what the records hold: an item naming an episode, a seed or a
method the records lack is refused, one ``kepp: error:`` line per item naming the playlist file and what is
missing, nothing written; ``--allow-missing`` writes the deck, warns once per item and marks those slides; records
that are gone are named as the file that is missing (not a playlist folder derived from them)."""

from __future__ import annotations

import dataclasses
import shutil

import pytest

from tests.helpers.deck import deck_slides, every_kind, export, records_of, write_playlist

pytestmark = pytest.mark.slow


@pytest.fixture
def lacking(demo_env, tmp_path):
    """A copy of the demo records and a playlist of two recorded items and three the records lack: a method,
    an episode and a seed."""
    env = dataclasses.replace(demo_env, records=tmp_path / "predictions.jsonl")
    shutil.copyfile(demo_env.records, env.records)
    good = every_kind(records_of(env))[:2]
    first = good[0]
    items = [*good, {**first, "method": "no-such-method", "note": ""},
             {**first, "episode": "tea/9999/0:3", "note": ""},
             {**first, "query": {**first["query"], "seed": "7"}, "note": ""}]
    return env, write_playlist(tmp_path / "playlists", "talk", items), items


def _kepp_lines(stderr: str, head: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith(head)]


def test_a_playlist_naming_what_the_records_lack_is_refused_one_line_per_item(lacking, tmp_path):
    env, playlist, items = lacking
    out = tmp_path / "talk.html"
    r = export("talk", out, env)
    errors = _kepp_lines(r.stderr, "kepp: error: ")
    assert r.returncode == 2 and "Traceback" not in r.stderr and not out.exists(), r.stderr[-2000:]
    assert len(errors) == 4 and all(str(playlist) in line for line in errors), errors
    assert "item 3" in errors[0] and "'no-such-method' has no record of episode" in errors[0]
    assert "item 4 (tea/9999/0:3)" in errors[1] and "episode 'tea/9999/0:3' is not in the prediction records" in errors[1]
    assert "item 5" in errors[2] and "with seed 7" in errors[2]
    assert "3 of 5 items" in errors[3] and "--allow-missing" in errors[3]


def test_allow_missing_writes_the_deck_warns_and_marks_those_slides(lacking, tmp_path):
    env, playlist, items = lacking
    out = tmp_path / "talk.html"
    r = export("talk", out, env, "--allow-missing")
    assert r.returncode == 0, r.stderr[-2000:]
    warned = _kepp_lines(r.stderr, "kepp: warning: ")
    assert len(warned) == 3 and [w.split(": item ")[1][:1] for w in warned] == ["3", "4", "5"], warned
    text = out.read_text(encoding="utf-8")
    assert len(deck_slides(text)) == 5 and text.count('data-part="missing"') == 3
    for k in (3, 4, 5):
        section = text.split(f'id="slide-{k}"', 1)[1].split("</section>", 1)[0]
        assert "missing from the records:" in section, k
    assert 'data-part="missing"' not in text.split('id="slide-3"', 1)[0]  # the recorded slides carry no mark


def test_records_that_are_gone_are_named_as_the_missing_file(lacking, tmp_path):
    env, playlist, items = lacking
    env.records.unlink()
    r = export("talk", tmp_path / "talk.html", env)
    errors = _kepp_lines(r.stderr, "kepp: error: ")
    assert r.returncode == 2 and len(errors) == 1 and str(env.records) in errors[0], r.stderr[-2000:]
    assert "playlists" not in errors[0] and "does not exist" in errors[0]
