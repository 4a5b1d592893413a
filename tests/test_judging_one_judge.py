"""One judge: the failure pattern a record is filed under is decided once, by the store's judging, and the list
(Failure cases), the card beside it, the slide and the offline deck all say its words. Tried on imported methods
(which use no recorded endpoints) in records with and without endpoints: a plan whose own first step is wrong is
filed under "wrong predicted endpoint" and every view says so (the app's second judge said "failure: other")."""

from __future__ import annotations

import dataclasses
import json

import pytest

from components.records import slides
from components.records.recorded import find
from components.talk import playlists
from components.ui.text import md
from kepp_core import catalog
from tests.helpers.app_env import HORIZON, IMPORTED
from tests.helpers.app_session import no_problems, open_page, texts
from tests.helpers.deck import deck_slides, export, records_of, write_playlist


@pytest.fixture(params=["without endpoints", "with endpoints"])
def imported_env(request, lists_env, tmp_path):
    """``lists_env`` with its imported method's plans rewritten: every second one with its first step wrong (its own
    end judged wrong), every fourth with a middle step wrong; the records with or without the step model's
    endpoints (an imported method uses none of them either way)."""
    records = tmp_path / "records"
    records.mkdir()
    lines = (lists_env.records / "vpn-records.jsonl").read_text(encoding="utf-8").splitlines()
    top = 1 + max(a for line in lines for a in json.loads(line)["gt"])
    out = []
    for k, line in enumerate(lines):
        rec = json.loads(line)
        plan = list(rec["gt"])
        if k % 2 == 0:
            plan[0] = (plan[0] + 1) % top
        elif k % 4 == 1:
            plan[1] = (plan[1] + 1) % top
        rec["plans"] = {IMPORTED: plan}
        rec.pop("endpoints", None)
        if request.param == "with endpoints":
            rec["endpoints"] = [rec["gt"][0], rec["gt"][-1]]  # right ends recorded: not the imported method's
        out.append(json.dumps(rec))
    (records / "imported.jsonl").write_text("\n".join(out) + "\n", encoding="utf-8")
    return dataclasses.replace(lists_env, records=records)


def card_verdict(at, episode_title: str) -> str:
    """The verdict the episode's card says beside the method's title (``**TITLE** · VERDICT``)."""
    said = [m for m in texts(at.markdown) if m.startswith(f"**{episode_title}** · ")]
    assert len(said) == 1, said
    return said[0].split(" · ", 1)[1]


@pytest.mark.slow
def test_the_list_the_card_the_slide_and_the_deck_say_the_pattern_the_store_judged(monkeypatch, imported_env, tmp_path):
    preds = records_of(imported_env)
    mine = preds[preds["method"] == IMPORTED]
    failed = mine[~mine["success"]]
    assert (failed["pattern"] == "wrong_endpoint").any() and (failed["pattern"] != "wrong_endpoint").any()
    assert mine["endpoints"].isna().all()  # an imported method plans without the recorded endpoints
    from kepp_core.data import load_dataset
    ds = load_dataset(imported_env.dataset, imported_env.world)
    items = []
    for pattern in ("wrong_endpoint", "other"):
        row = failed[failed["pattern"] == pattern].iloc[0]
        words = catalog.verdict_words(False, pattern)
        # the list: Failure cases files the episode under the pattern; the card beside it says the same words
        at = no_problems(open_page(monkeypatch, imported_env, "views/4_Failure_cases.py",
                                   {"method": IMPORTED, "T": str(HORIZON), "pattern": pattern,
                                    "episode": row["episode"]}))
        assert at.radio(key="fail_pattern").value == pattern
        assert at.selectbox(key="fail_episode").value == row["episode"]
        title = next(m for m in texts(at.markdown) if m.startswith("**") and IMPORTED in m).split("** · ")[0][2:]
        assert card_verdict(at, title) == md(words)  # the card's Markdown, escaped
        # the slide and the record the deck draws
        item = {**playlists.item_of_row(row), "note": pattern}
        assert slides.slide(item, ds, preds).verdict == words
        assert find(preds, row["episode"], IMPORTED).verdict == words
        items.append((item, words))
    folder = imported_env.records / "playlists"
    write_playlist(folder, "judged", [i for i, _ in items])
    out = tmp_path / "talk.html"
    r = export("judged", out, imported_env)
    assert r.returncode == 0, r.stderr[-2000:]
    shown = deck_slides(out.read_text(encoding="utf-8"))
    assert [s["sides"][0]["verdict"] for s in shown] == [w for _, w in items]
