"""Offline decks for the tests: a playlist of every slide kind on an environment's records, the deck that
``kepp talk export`` writes of it, and what each of its slides says, read from the file's HTML (no browser)."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

from types import SimpleNamespace

import pandas as pd

from components.talk import deck, playlists  # items as the pages' "Add to playlist" writes them
from kepp_core import api
from kepp_core.graph import ProcedureGraph
from kepp_core.evaluation.playlists import DECK_MARK, PlaylistStore
from tests.helpers.cli import run_kepp
from tests.helpers.markup import HOSTILE


def every_kind(preds, imported: str | None = None) -> list[dict]:
    """Playlist items of every slide kind the records allow: KEPP's success and failure (T=3 and the longest
    horizon), an imported method's record (``imported``), an A/B pair (the success's method against Random or
    another method of its episode), an episode planned live (no method), a method the records do not hold."""
    kepp = preds[preds["method"] == "kepp-R2"]
    wins = kepp[kepp["success"]] if kepp["success"].any() else preds[preds["success"]]  # tiny models: another's
    rows = [wins.iloc[0], kepp[~kepp["success"]].iloc[0], kepp[kepp["horizon"] == kepp["horizon"].max()].iloc[-1]]
    if imported is not None:
        rows.append(preds[preds["method"] == imported].iloc[-1])
    items = [{**playlists.item_of_row(r), "note": f"note {k + 1}"} for k, r in enumerate(rows)]
    first = rows[0]
    others = preds[(preds["episode"] == first["episode"]) & (preds["method"] != first["method"])]["method"]
    pair = "random" if (others == "random").any() else str(others.iloc[0])
    items.append({**playlists.ab_item(first, pair), "note": "an A/B pair"})  # both methods' plans on one slide
    first = items[0]
    unnamed = {k: v for k, v in first["query"].items() if k not in ("rec", "seed")}  # the episode, no record named
    items.append({**playlists.plan_item(unnamed, first["episode"]), "note": "planned live"})
    items.append({**first, "method": "no-such-method", "query": unnamed, "note": ""})
    return items


def write_playlist(folder: Path, name: str, items: list[dict]) -> Path:
    """The playlist ``name`` of ``items`` in ``folder`` (as the Playlists page writes it); its file."""
    store = PlaylistStore(folder)
    store.add(name, items)
    return store.path(name)


def export(playlist: Path | str, out: Path, env, *more: str):
    """``kepp talk export PLAYLIST --out OUT`` on an environment's world, models and records."""
    records = env.records
    return run_kepp("talk", "export", playlist, "--out", out, "--dataset", env.dataset, "--root", env.world,
                    "--checkpoints", env.models, "--predictions", records, *more)


def records_of(env):
    files = sorted(Path(env.records).glob("*.jsonl")) if Path(env.records).is_dir() else [env.records]
    return api.read_predictions(files)


class _Slides(HTMLParser):
    """Each ``section.slide``'s title, its sides (one per method, an A/B pair's two: the side's name, its
    verdict's text and class, its plan's step names and ✓ marks), the truth's step names, its frames (images,
    or the sentence saying there are none) and whether it draws the graph."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.slides: list[dict] = []
        self._stack: list[tuple[str, str | None, str]] = []  # open elements: tag, data-part, class

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "section" and "slide" in (a.get("class") or "").split():
            self.slides.append({"n": int(a["data-n"]), "title": "", "sides": [], "truth": [], "frames": 0,
                                "no_frames": "", "graph": False})
        if not self.slides or tag in ("img", "br", "meta"):
            if tag == "img" and self.slides:
                self.slides[-1]["frames"] += 1
            return
        s, part, klass = self.slides[-1], a.get("data-part"), a.get("class") or ""
        self._stack.append((tag, part, klass))
        if "verdict" in klass.split():
            s["sides"].append({"side": a.get("data-side", ""), "verdict": "", "class": klass.replace("verdict", "").strip(),
                               "plan": [], "marks": []})
        if part == "plan":
            self._side = next(x for x in s["sides"] if x["side"] == a.get("data-side", ""))
        if part == "graph":
            s["graph"] = True
        if klass == "name" and self._inside() == "plan":
            self._side["plan"].append("")
        if klass == "name" and self._inside() == "truth":
            s["truth"].append("")

    def _inside(self) -> str | None:
        return next((p for _, p, _ in reversed(self._stack) if p), None)

    def handle_endtag(self, tag):
        if self._stack and tag not in ("img", "br", "meta"):
            self._stack.pop()

    def handle_data(self, data):
        if not self.slides or not self._stack:
            return
        part, klass, s = self._inside(), self._stack[-1][2], self.slides[-1]
        if part == "title":
            s["title"] += data
        elif part == "verdict" and klass == "says":
            s["sides"][-1]["verdict"] += data
        elif part == "plan" and klass == "name":
            self._side["plan"][-1] += data
        elif part == "plan" and klass == "num":
            self._side["marks"].append("✓" in data)
        elif part == "truth" and klass == "name":
            s["truth"][-1] += data
        elif part == "frames" and "no-frames" in klass:
            s["no_frames"] += data


def deck_slides(html: str) -> list[dict]:
    """What each slide of a deck's HTML says (see :class:`_Slides`)."""
    parser = _Slides()
    parser.feed(html)
    parser.close()
    return parser.slides


def _hostile_world():
    """A dataset, records and graph whose task and step names are hostile markup."""
    steps = ["boil water", HOSTILE[2], "</script><script>window.pwned=1</script>", "a\u2028b & <c>"]
    ds = SimpleNamespace(tasks={"tea": SimpleNamespace(name=HOSTILE[1])}, videos=[],
                         labels=lambda plan: [steps[a] for a in plan], task_actions=lambda task: [0, 1, 2, 3])
    preds = pd.DataFrame([{"episode": "tea/v1/0:3", "task": "tea", "video": "v1", "horizon": 3, "seed": 0,
                           "method": "kepp-R2", "truth": (0, 1, 3), "plan": (0, 2, 3), "endpoints": (0, 3),
                           "endpoint_scores": (0.9, 0.8), "paths": [(0, 1, 3)], "path_scores": [0.5], "success": False,
                           "pattern": "other", "start_time": 1.0, "goal_time": 4.0}])
    graph = ProcedureGraph.from_plans(steps, [(0, 1, 3), (0, 2, 3), (1, 2)])
    items = [{"episode": "tea/v1/0:3", "method": "kepp-R2", "T": 3, "query": {"seed": "0"},
              "note": f"</script><img src=x onerror=window.pwned=1> {HOSTILE[0]} \u2028 & end"}]
    return steps, ds, preds, graph, items


def hostile_deck() -> tuple[str, list[str], list[dict]]:
    """A deck of the hostile world (its HTML), its step names and its playlist's items."""
    steps, ds, preds, graph, items = _hostile_world()
    return deck.build_deck("hostile", items, ds, preds, graph, DECK_MARK), steps, items


AB_EPISODE = ("pancakes/0199/0:6", "kepp-R1+jdec", "kepp-nograph")  # an A/B slide whose truth edges once hid


def forty_slides(preds) -> list[dict]:
    """A speaker's long talk on the demo records: 40 items over every horizon (3 to 6) and several methods,
    successes and failures, with the A/B slide of :data:`AB_EPISODE` and two more A/B pairs."""
    episode, a, b = AB_EPISODE
    row = preds[(preds["episode"] == episode) & (preds["method"] == a)].iloc[0]
    items = [{**playlists.ab_item(row, b), "note": "the A/B slide"}]
    methods = ["kepp-R1+jdec", "kepp-R2", "kepp-nograph", "pdpp", "graph-pred"]
    for k in range(37):
        horizon, method = 3 + k % 4, methods[k % len(methods)]
        rows = preds[(preds["horizon"] == horizon) & (preds["method"] == method)]
        r = rows.iloc[(k * 37) % len(rows)]
        items.append({**playlists.item_of_row(r), "note": f"note {k + 2}"})
    for k, (method, versus) in enumerate([("kepp-R2", "random"), ("kepp-R1+jdec", "pdpp")]):
        r = preds[(preds["horizon"] == 5 + k) & (preds["method"] == method)].iloc[11 * k + 3]
        items.append({**playlists.ab_item(r, versus), "note": "another A/B pair"})
    return items
