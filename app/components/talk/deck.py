"""A deck that needs no server: a playlist's slides as one self-contained HTML file a speaker carries (no
Streamlit, no network: every frame, style and script is inside the file).

Each slide is the item's :class:`components.records.slides.Slide`, the same one the live slides draw: the episode,
the method and the verdict, the plan against the ground truth, the start and goal frames (decoded from the
video file by :func:`kepp_core.api.thumbnail_png`, embedded as JPEG; a world with features alone says it has
no frames) and the plan graph (:func:`components.graph.plangraph.plan_graph`, drawn as a static SVG by
:func:`components.talk.deck_graph.graph_svg`). The
file's script (``app/static/kepp-deck.js``) moves through the slides with a clicker's keys, keeps the slide's
number in the address's fragment (``talk.html#3``), and opens the presenter view (``#presenter-3``: the
slide, the next one, the speaker's note and a clock) in a second window that follows the first and moves it.

Every dataset string is escaped for where it goes (:func:`components.ui.text.page_text` for HTML and SVG,
:func:`components.ui.text.script_json` for the script's data). The playlists' store writes a deck
(:meth:`kepp_core.evaluation.playlists.PlaylistStore.write_deck`: atomically, never over a file that is not a deck unless
asked).

>>> live = slides.Side(name="", method="", record=None, verdict=slides.LIVE, success=None)
>>> html = deck_html("talk", [slides.Slide(title="<b>x</b>", note="", sides=(live,))])
>>> "&lt;b&gt;x&lt;/b&gt;" in html and "<b>x</b>" not in html
True
"""

from __future__ import annotations

import base64
import hashlib
import io
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from PIL import Image

from components.ui import scripts
from components.graph import plangraph
from components.records import recorded, slides
from components.talk.deck_graph import graph_svg
from components.ui.colours import EDGE, PLAN_TINT, RIGHT, TRUTH_TINT, WRONG, css_variables
from components.ui.text import page_text as esc
from kepp_core import api
from kepp_core.api.workspace import sealed_deck
from kepp_core.errors import KeppError

__all__ = ["MissingItems", "build_deck", "deck_html", "export", "missing_items", "page_deck", "playlist_items"]

FRAME_PX, JPEG_QUALITY = 480, 85  # a frame's longer side (sharp at 1920x1080) and its JPEG quality
GRAPH = {"depth": 1, "max_nodes": 14, "max_rows": 3}  # one screen's worth at a room's type size (deck_graph)


def _legend(pg: plangraph.PlanGraph) -> str:
    rows = []
    for entry in pg.legend:
        if entry.style == "node":
            swatch = f'<span class="swatch node" style="background:{esc(entry.colour)}"></span>'
        else:
            style = {"dashed": "dashed", "dotted": "dotted"}.get(entry.style, "solid")
            swatch = f'<span class="swatch line" style="border-top:0.2em {style} {esc(entry.colour)}"></span>'
        name, _, steps = entry.text.partition(": ")  # a path's steps are in the drawing (and the hover text)
        shown = name if entry.group is not None and steps else entry.text
        rows.append(f'<li title="{esc(entry.text)}">{swatch}{esc(shown)}</li>')
    return f'<ul class="legend" data-part="legend">{"".join(rows)}</ul>' if rows else ""


def _cards(labels: Sequence[str], right: Sequence[bool] | None, tint: str, part: str, heading: str,
           side: str = "") -> str:
    cards = []
    for t, label in enumerate(labels):
        mark = "" if right is None else (" ✓" if right[t] else " ✗")
        border = EDGE if right is None else (RIGHT if right[t] else WRONG)
        cards.append(f'<li class="card" style="background:{tint};border-color:{border}">'
                     f'<span class="num"><span class="w">step </span>{t + 1}{mark}</span><span class="name">{esc(label)}</span></li>')
    head = f"<h2>{esc(heading)}</h2>" if heading else ""
    return (f'<div class="steps" data-part="{part}" data-side="{esc(side)}">{head}'
            f'<ol class="cards">{"".join(cards)}</ol></div>')


def _verdicts(sides: Sequence[slides.Side]) -> str:
    """The verdicts of ``sides`` (an A/B pair's each named A or B with its method)."""
    rows = []
    for side in sides:
        klass = "none" if side.success is None else "ok" if side.success else "bad"
        who = (f'<span class="side">{esc(side.name)} · {esc(side.record.label if side.record else side.method)}:</span> '
               if side.name else "")
        rows.append(f'<p class="verdict {klass}" data-side="{esc(side.name)}">{who}<span class="says">{esc(side.verdict)}</span></p>')
    return f'<div class="verdicts" data-part="verdict">{"".join(rows)}</div>'


def _jpeg(png: bytes) -> bytes:
    """A decoded frame's PNG as JPEG: a video frame in a sixth of the bytes, so that the deck opens at once."""
    out = io.BytesIO()
    Image.open(io.BytesIO(png)).convert("RGB").save(out, format="JPEG", quality=JPEG_QUALITY)
    return out.getvalue()


def _frames(shown: slides.Slide, thumbnail: Callable[[str, float, int], bytes]) -> str:
    if not shown.frames:
        why = shown.frames_missing
        return f'<p class="no-frames" data-part="frames">{esc(why)}</p>' if why else ""
    figures = []
    for frame in shown.frames:
        try:
            jpeg = base64.b64encode(_jpeg(thumbnail(str(shown.video_file), frame.seconds, FRAME_PX))).decode("ascii")
            body = f'<img alt="{esc(frame.label)} frame" src="data:image/jpeg;base64,{jpeg}">'
        except KeppError as e:  # a file that does not decode there: the slide says so, the deck is still written
            body = f'<p class="no-frames">{esc(str(e))}</p>'
        figures.append(f'<figure>{body}<figcaption>{esc(frame.caption)}</figcaption></figure>')
    return f'<div class="frames" data-part="frames">{"".join(figures)}</div>'


def _slide_html(k: int, count: int, shown: slides.Slide, frames: str, graph: tuple[str, str], missing: str = "") -> str:
    """A slide: what the records lack for it (``missing``), the verdicts, plans, truth, the graph's legend and the
    frames on the left, the graph right (the deck's script moves the legend or the frames under the graph where
    the window's height is short of them)."""
    figure, legend = graph
    body = (f'<p class="missing" data-part="missing">missing from the records: {esc(missing)}</p>' if missing else "")
    if shown.record is None:
        body += _verdicts(shown.sides)
    else:  # each plan under its verdict (an A/B pair's verdict, naming its side and method, is its plan's heading)
        for side in shown.sides:
            body += _verdicts([side])
            if side.record is not None:
                body += _cards(side.plan, side.plan_right, PLAN_TINT, "plan", "" if side.name else "plan", side.name)
        body += _cards(shown.truth, None, TRUTH_TINT, "truth", "ground truth")
    body += legend + frames
    return (f'<section class="slide" id="slide-{k}" data-n="{k}">'
            f'<header><h1 data-part="title">{esc(shown.title)}</h1><span class="count">{k} / {count}</span></header>'
            f'<div class="body"><div class="left">{body}</div><div class="right">{figure}</div></div></section>')


def _graph_html(shown: slides.Slide, graph) -> tuple[str, str]:
    """The slide's plan graph (a figure) and its legend (which the slide sets under the plans, so that the drawing
    has the column's height)."""
    if shown.graph is None or graph is None:
        return "", ""
    drawn = shown.graph
    pg = plangraph.plan_graph(graph, drawn["endpoints"], drawn["named_paths"], drawn["truth"], own=drawn["own"],
                              **GRAPH)
    return (f'<figure class="graph" data-part="graph"><figcaption>{esc(drawn["title"])}</figcaption>'
            f'<div class="drawing">{graph_svg(pg)}</div></figure>', _legend(pg))


def deck_html(name: str, shown: Sequence[slides.Slide], frames: Sequence[str] = (), graphs: Sequence[tuple[str, str]] = (),
              mark: str = "", minutes: float | None = None, missing: Mapping[int, str] | None = None) -> str:
    """The deck's HTML: the slides ``shown`` (with their frames' and graphs' HTML, where given: a graph's figure
    and legend) of the
    playlist ``name``, the styles and the scripts inline (the slides' and the speaker's keys); ``mark``: the head
    that says the file is a deck (the playlists store's
    :attr:`~kepp_core.evaluation.playlists.PlaylistStore.deck_mark`); ``minutes``: the talk's length (the
    presenter view's countdown); ``missing``: what the records lack for a slide (by index), said on it."""
    count = len(shown)
    missing = missing or {}
    sections = "".join(_slide_html(k + 1, count, s, frames[k] if k < len(frames) else "",
                                   graphs[k] if k < len(graphs) else ("", ""), missing.get(k, ""))
                       for k, s in enumerate(shown))
    data = {"name": name, "count": count, "keys": scripts.SLIDE_KEYS, "minutes": minutes,
            "notes": [s.note for s in shown], "titles": [s.title for s in shown],
            "id": hashlib.sha1("\0".join([name, *(s.title for s in shown)]).encode()).hexdigest()[:12]}
    return ("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">" + mark
            + '<meta name="viewport" content="width=device-width, initial-scale=1">'
            + f"<title>{esc(name)} · KEPP talk</title>{css_variables()}<style>{scripts.source('kepp-deck.css')}"
            + f"{scripts.source('kepp-speaker.css')}</style></head>"
            + f'<body><main id="deck">{sections}</main>'
            + '<div id="presenter" hidden><div class="p-now"><h2>Now <span id="p-count"></span></h2><div class="p-frame" '
              'id="p-current"></div></div><div class="p-next"><h2 id="p-next-head">Next</h2><div class="p-frame" '
              'id="p-next"></div></div><div class="p-note" id="p-note"></div><div class="p-timer"><button type="button" id="p-clock" '
              'title="click: restart the clock">0:00</button><span id="p-left"></span><label>talk minutes '
              '<input id="p-minutes" type="number" min="0" max="600" step="1"></label></div></div>'
            + '<button type="button" id="open-presenter" title="the presenter view in a new window (P)">Notes</button>'
            + scripts.call("kepp-deck.js", data) + scripts.speaker_script([s.title for s in shown], deck=True)
            + "</body></html>\n")


def build_deck(name: str, items: Sequence[Mapping], ds, preds, graph, mark: str, names: Mapping[str, str] | None = None,
               thumbnail: Callable[[str, float, int], bytes] = api.thumbnail_png, minutes: float | None = None,
               missing: Mapping[int, str] | None = None) -> str:
    """The deck of the playlist ``name`` (its ``items``, dicts as the playlist file holds them) on the dataset
    ``ds``, the prediction records ``preds`` and the P²KG ``graph`` (None: no graph drawn); ``names``: the
    records' display names; ``minutes``: the talk's length; ``missing``: what the records lack for an item (by
    index, :func:`missing_items`; None: found here), said on its slide."""
    if not items:
        raise KeppError(f"playlist {name!r} is empty: there is nothing to put in a deck")
    shown = [slides.slide(item, ds, preds, names) for item in items]
    missing = missing_items(items, preds) if missing is None else missing
    return deck_html(name, shown, [_frames(s, thumbnail) for s in shown], [_graph_html(s, graph) for s in shown], mark,
                     minutes, missing)


def page_deck(cfg, name: str, items: Sequence[Mapping], ds, preds, names: Mapping[str, str], mark: str) -> bytes:
    """The Playlists page's **Export deck**: the deck of the playlist shown (its ``items``; the page's dataset,
    records and display names; ``mark``: its store's deck mark), with the configuration's graph (none drawn
    where it cannot be built)."""
    try:
        graph = api.Workspace(cfg, ds).graph()
    except KeppError:
        graph = None
    return sealed_deck(build_deck(name, items, ds, preds, graph, mark, names))  # as the export writes it


def playlist_items(cfg, playlist: str):
    """The store, name, items and talk length (minutes, or None) of ``playlist``: a playlist of the
    configuration's workspace (its name), or a playlist file (a path ending in ``.json``), checked as the
    Playlists page checks it."""
    path = Path(playlist)
    if path.suffix == ".json" and (path.exists() or len(path.parts) > 1):
        name, store = path.stem, api.Workspace(cfg).playlists(folder=path.parent)
    else:
        name, store = playlist, api.Workspace(cfg).playlists()
    read = store.read(name)
    return store, name, [i.to_json() for i in read.items], read.minutes


def _lacking(preds, episode: str, method: str, seed: int | None) -> str:
    """What the records lack for ``method``'s record of ``episode`` (and ``seed``, where the item names one)."""
    if preds is None:
        return f"{method!r}: no prediction records were given"
    rows = preds[preds["episode"] == episode]
    if not len(rows):
        return f"episode {episode!r} is not in the prediction records"
    rows = rows[rows["method"] == method]
    if not len(rows):
        return f"method {method!r} has no record of episode {episode!r}"
    seeds = sorted({int(s) for s in rows["seed"]})
    return f"method {method!r} has no record of episode {episode!r} with seed {seed} (its seeds: {seeds[:8]})"


def missing_items(items: Sequence[Mapping], preds) -> dict[int, str]:
    """The items (by index) that name an episode, seed or method the records ``preds`` lack, each with what is
    missing (an item planned live names no method and lacks nothing)."""
    out: dict[int, str] = {}
    for k, item in enumerate(items):
        recs = slides.item_records(preds, item)
        methods = (item.get("method") or "", item.get("versus") or "")[:len(recs)]
        seed = str(item.get("query", {}).get("seed", ""))
        seed = int(seed) if seed.lstrip("-").isdigit() else (recs[0].seed if recs[0] is not None else None)
        lacks = [_lacking(preds, item["episode"], m, seed) for m, r in zip(methods, recs) if m and r is None]
        if lacks:
            out[k] = "; ".join(lacks)
    return out


class MissingItems(KeppError):
    """A playlist names what the records lack: ``lines``, one per such item (the file, the item, what is missing)."""

    def __init__(self, lines: list[str], summary: str) -> None:
        super().__init__(summary)
        self.lines = lines


def export(cfg, playlist: str, out: str | Path, force: bool = False, allow_missing: bool = False,
           warn: Callable[[str], None] = lambda line: None, pdf: bool = False) -> Path:
    """``kepp talk export``: the deck of ``playlist`` (:func:`playlist_items`) on the configuration's dataset,
    records and graph, written to ``out`` by its store (atomically; over another file only with ``force``).
    A playlist naming an episode, seed or method the records lack is refused (:class:`MissingItems`, nothing
    written) unless ``allow_missing``: then each such item is ``warn``-ed and its slide says what is missing.
    ``pdf``: the deck printed by Chromium (:func:`components.talk.deck_pdf.print_pdf`) instead of its HTML."""
    ws = api.Workspace(cfg)
    files = ws.prediction_files()  # records that are gone are named before any playlist is looked for
    store, name, items, minutes = playlist_items(cfg, playlist)
    preds = api.read_predictions(files) if files else None
    missing = missing_items(items, preds)
    lines = [f"{store.path(name)}: item {k + 1} ({items[k]['episode']}): {why}" for k, why in missing.items()]
    if lines and not allow_missing:
        raise MissingItems(lines, f"{store.path(name)}: {len(lines)} of {len(items)} items name what the records "
                                  "lack: nothing was written (--allow-missing writes the deck, those slides marked)")
    for line in lines:
        warn(line)
    html = build_deck(name, items, ws.dataset, preds, ws.graph(), store.deck_mark, recorded.display_names(preds),
                      minutes=minutes, missing=missing)
    if pdf:
        from components.talk import deck_pdf  # Playwright, only when a PDF is asked for

        return store.write_pdf(out, deck_pdf.print_pdf(html), force)
    return store.write_deck(out, html, force)
