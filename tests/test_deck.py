"""The deck that needs no server (``kepp talk export``, the Playlists page's **Export deck**): every slide says
what its live slide says (the presenter view's :func:`components.talk.presenter.slide_summary`, run as a page),
frames where the world has videos and a sentence where it has features alone, hostile labels as text, one
self-contained file written atomically, one-line errors. The deck in a browser: ``test_e2e_deck.py``."""

from __future__ import annotations

import dataclasses
import html
import json
import re
import shutil

import pytest

from components.records import slides
from components.talk import playlists
from kepp_core.evaluation.playlists import DECK_MARK, is_deck
from components.ui.text import md
from tests.helpers.app_env import IMPORTED
from tests.helpers.app_session import no_problems, open_page, texts
from tests.helpers.cli import assert_one_line_error
from tests.helpers.deck import deck_slides, every_kind, export, hostile_deck, records_of, write_playlist
from tests.helpers.markup import HOST, HOSTILE, URL_ATTRIBUTES, elements

NAME = "every kind"


def _words(text: str) -> str:
    return " ".join(str(text).split())


def _cards(markdown: str) -> tuple[list[str], list[bool]]:
    """The step names and ✓ marks of a step-cards block the live slide drew."""
    names = [_words(html.unescape(re.sub(r"<[^>]*>", "", n)))  # a name's words are spans of their own
             for n in re.findall(r'class="kepp-card-label"[^>]*>(.*?)</div>', markdown)]
    marks = ["✓" in m for m in re.findall(r'class="kepp-mark">(.)</span>', markdown)]
    return names, marks


def live_slide(monkeypatch, env, k: int, title: str) -> dict:
    """What the presenter view's current slide (item ``k``) says: its verdicts' Markdown, each plan's step names
    and marks (``plan``, ``plan A``, ``plan B``), the ground truth's step names."""
    at = no_problems(open_page(monkeypatch, env, "views/8_Presenter.py", {"playlist": NAME, "item": str(k)}))
    now = next(c for c in at.columns if any(str(h.value).startswith("Now:") for h in c.subheader))
    said = texts(now.markdown)  # the current slide's column (the next slide's is beside it)
    head = next(m for m in said if m.startswith(f"**{md(title)}**  \n"))
    cards = {}
    for m in said:
        heading = re.search(r'class="kepp-small"[^>]*>([^<]*)</div><div class="kepp-plan"', m) if 'class="kepp-plan"' in m else None
        if heading and heading.group(1) not in cards:
            cards[heading.group(1)] = _cards(m)
    return {"verdict": head.split("  \n", 1)[1], "cards": cards}


def said_like_the_live_slide(shown: dict) -> dict:
    """A deck slide's verdicts and cards as the live slide says them (:func:`live_slide`)."""
    verdict = " · ".join((f"{s['side']}: " if s["side"] else "")
                         + playlists.verdict_markdown(s["verdict"], {"ok": True, "bad": False, "none": None}[s["class"]])
                         for s in shown["sides"])
    cards = {(f"plan {s['side']}" if s["side"] else "plan"): ([_words(x) for x in s["plan"]], s["marks"])
             for s in shown["sides"] if s["plan"]}
    if shown["truth"]:
        cards["ground truth"] = ([_words(x) for x in shown["truth"]], [])
    return {"verdict": verdict, "cards": cards}


@pytest.fixture
def env_copy(request, tmp_path):
    """An environment (``demo_env``: a world with videos; ``lists_env``: features alone and an imported method)
    with its records copied into a scratch folder, the playlists beside them."""
    env = request.getfixturevalue(request.param)
    records = tmp_path / "records"
    if env.records.is_dir():
        shutil.copytree(env.records, records)
        return dataclasses.replace(env, records=records), records / "playlists"
    records.mkdir()
    shutil.copyfile(env.records, records / env.records.name)
    return dataclasses.replace(env, records=records / env.records.name), records / "playlists"


@pytest.mark.slow
@pytest.mark.parametrize("env_copy", ["demo_env", "lists_env"], indirect=True)
def test_every_deck_slide_shows_the_plan_truth_and_verdict_of_its_live_slide(monkeypatch, env_copy, tmp_path):
    env, folder = env_copy
    preds = records_of(env)
    features_only = IMPORTED in set(preds["method"])
    items = every_kind(preds, IMPORTED if features_only else None)
    write_playlist(folder, NAME, items)
    out = tmp_path / "talk.html"
    r = export(NAME, out, env, "--allow-missing")  # the last item's method is not in the records: its slide says so
    assert r.returncode == 0, r.stderr[-2000:]
    shown = deck_slides(out.read_text(encoding="utf-8"))
    assert [s["n"] for s in shown] == list(range(1, len(items) + 1))
    for k, (item, s) in enumerate(zip(items, shown), start=1):
        live = live_slide(monkeypatch, env, k, s["title"])
        live["cards"] = {h: c for h, c in live["cards"].items() if h == "ground truth" or h.startswith("plan")}
        assert said_like_the_live_slide(s) == live, (k, s, live)
        recorded = bool(item["method"]) and item["method"] != "no-such-method"
        assert len(s["sides"]) == (2 if item.get("versus") else 1) and bool(s["truth"]) == recorded, k
        assert s["graph"] == recorded, k
        if recorded:  # frames decoded from the world's videos; on features alone, a sentence saying there are none
            assert (s["frames"], s["no_frames"]) == ((0, slides.NO_FRAMES) if features_only else (2, "")), k
    pair = next(s for s, item in zip(shown, items) if item.get("versus"))
    assert [x["side"] for x in pair["sides"]] == ["A", "B"] and all(x["plan"] for x in pair["sides"])
    assert shown[-2]["sides"][0]["verdict"] == slides.LIVE and shown[-1]["sides"][0]["verdict"] == slides.NOT_RECORDED
    assert "http://" not in out.read_text(encoding="utf-8").replace("http://www.w3.org", "")  # nothing fetched


def test_hostile_labels_and_notes_stay_text_in_the_deck():
    text, steps, items = hostile_deck()
    assert text.count("<script") == 2 and text.count("</script>") == 2  # only the deck's own: slides' and speaker's keys
    found, visible = elements(text)
    assert not [t for t, _ in found if t in ("img", "a", "iframe", "object", "embed")]  # no frames in this world
    assert not [(t, n) for t, a in found for n, v in a.items()
                if n.startswith("on") or (n in URL_ATTRIBUTES and HOST in (v or ""))]  # a title holds it as text
    assert all(_words(label) in _words(visible) for label in steps[:2])  # shown as text
    shown = deck_slides(text)[0]
    assert shown["sides"][0]["plan"] == [steps[0], steps[2], steps[3]] and shown["truth"] == [steps[0], steps[1], steps[3]]
    assert _words(HOSTILE[1]) in _words(shown["title"])
    deck_script, speaker_script = (t.split("</script>", 1)[0] for t in text.split("<script>")[1:])
    data = deck_script.rsplit("})(", 1)[1].rsplit(");", 1)[0]
    assert "<" not in data and "\u2028" not in data and json.loads(data)["notes"] == [items[0]["note"]]
    titles = speaker_script.rsplit("})(", 1)[1].rsplit(");", 1)[0]  # the overview's titles: data too
    assert "<" not in titles and json.loads(titles)["titles"] == json.loads(data)["titles"]


def test_a_deck_is_one_file_that_fetches_nothing():
    text, _, _ = hostile_deck()
    assert not re.search(r"""(src|href)\s*=\s*["'](?!data:|#)""", text)  # no file, no address: all inline
    assert "@import" not in text and "url(http" not in text and DECK_MARK in text[:300]


@pytest.mark.slow
def test_kepp_talk_export_refuses_what_it_should_not_write_in_one_line(demo_env, tmp_path):
    env = dataclasses.replace(demo_env, records=tmp_path / "predictions.jsonl")
    shutil.copyfile(demo_env.records, env.records)
    preds = records_of(env)
    playlist = write_playlist(tmp_path / "lists", "talk", every_kind(preds)[:2])
    notes = tmp_path / "notes.html"
    notes.write_text("my own notes")
    assert_one_line_error(export(playlist, notes, env), str(notes), "not a KEPP deck", "--force")
    assert notes.read_text() == "my own notes"
    assert_one_line_error(export(playlist, tmp_path, env), str(tmp_path), "is a folder")
    bad = tmp_path / "lists" / "bad.json"
    bad.write_text(json.dumps({"format": "kepp-playlist", "version": 1,
                               "items": [{"episode": "e", "method": "m", "T": "3"}]}))
    assert_one_line_error(export(bad, tmp_path / "x.html", env), "bad.json", "items[0].T", "whole number")
    bad.write_text("{not json")
    assert_one_line_error(export(bad, tmp_path / "x.html", env), "bad.json")
    assert_one_line_error(export("no such talk", tmp_path / "x.html", env), "no such playlist")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lists", "notes.html", "predictions.jsonl"]  # nothing half-written
    r = export(playlist, notes, env, "--force")  # asked: replaced, atomically; a deck is then replaced without asking
    assert r.returncode == 0 and is_deck(notes), r.stderr[-2000:]
    assert export(playlist, notes, env).returncode == 0
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".") or p.name.endswith(".tmp")]


@pytest.mark.slow
def test_the_playlists_pages_export_deck_is_the_commands_deck(monkeypatch, demo_env, tmp_path):
    from components.records import recorded
    from components.talk import deck
    from kepp_core import api

    records = tmp_path / "predictions.jsonl"
    shutil.copyfile(demo_env.records, records)
    env = dataclasses.replace(demo_env, records=records)
    preds = records_of(env)
    items = every_kind(preds)
    store_file = write_playlist(tmp_path / "playlists", NAME, items)
    at = no_problems(open_page(monkeypatch, env, "views/7_Playlists.py", {"playlist": NAME}))
    assert [b.proto.label for b in at.get("download_button")].count("Export deck") == 1
    cfg = api.AppConfig(dataset=env.dataset, root=str(env.world), checkpoints=str(env.models), predictions=str(records))
    ds = api.open_dataset(cfg)
    page = deck.page_deck(cfg, NAME, items, ds, preds, recorded.display_names(preds), DECK_MARK).decode()
    out = tmp_path / "talk.html"
    assert export(store_file, out, env, "--allow-missing").returncode == 0
    assert deck_slides(page) == deck_slides(out.read_text(encoding="utf-8")) and len(deck_slides(page)) == len(items)


def played_slide(monkeypatch, env, k: int, item: dict) -> dict:
    """What the Plan page shows playing item ``k`` of the playlist (the slide the live talk projects): each
    recorded verdict (A first), each recorded plan's step names and the ground truth's."""
    query = {**item["query"], "playlist": NAME, "item": str(k), **({"vs": item["versus"]} if item.get("versus") else {})}
    said = texts(no_problems(open_page(monkeypatch, env, "views/1_Plan.py", query)).markdown)
    verdicts = [html.unescape(v) for m in said if 'class="kepp-verdict"' in m
                for v in re.findall(r'<b>(?:Recorded|A|B) · [^<]*</b> · <span[^>]*>([^<]*)</span>', m)]
    cards = {}
    for m in said:
        heading = re.search(r'class="kepp-small"[^>]*>([^<]*)</div><div class="kepp-plan"', m) if 'class="kepp-plan"' in m else None
        title = html.unescape(heading.group(1)).split(" · ")[0] if heading else ""
        if title in ("plan (recorded)", "plan A", "plan B", "ground truth"):
            cards.setdefault(title, _cards(m)[0])
    return {"verdicts": verdicts, "cards": cards}


@pytest.mark.slow
@pytest.mark.parametrize("env_copy", ["demo_env"], indirect=True)
def test_every_record_slide_of_the_deck_is_the_slide_the_plan_page_plays(monkeypatch, env_copy, tmp_path):
    env, folder = env_copy
    items = [i for i in every_kind(records_of(env)) if i["method"] and i["method"] != "no-such-method"]
    write_playlist(folder, NAME, items)
    out = tmp_path / "talk.html"
    assert export(NAME, out, env).returncode == 0
    shown = deck_slides(out.read_text(encoding="utf-8"))
    assert len(shown) == len(items) and any(i.get("versus") for i in items)
    for k, (item, s) in enumerate(zip(items, shown), start=1):
        played = played_slide(monkeypatch, env, k, item)
        sides = {x["side"]: [_words(n) for n in x["plan"]] for x in s["sides"]}
        plans = {("plan (recorded)" if side == "" else f"plan {side}"): names for side, names in sides.items()}
        assert played["verdicts"] == [x["verdict"] for x in s["sides"]], (k, played, s)
        assert played["cards"] == {**plans, "ground truth": [_words(n) for n in s["truth"]]}, (k, played, s)
