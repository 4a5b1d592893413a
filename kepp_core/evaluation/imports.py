"""Other methods' predictions as prediction records (``kepp records import``), so that a method this
package does not run sits beside KEPP's rows in every table, failure analysis and the app.

Each format is one :class:`ImportFormat` object in :data:`FORMATS` (its name, its reader, a line of help
and an example command line; ``kepp records import``'s ``--format`` choices, help and examples read
them). Two formats, both checked against the split list the predictions were made on (its episodes, in
order, are the records' episodes, with the ids ``kepp eval`` gives them on the same lists):

- ``vpn``: ViterbiPlanNet's ``T{h}_predictions.json``, ``{"0": {"pred": [ids], "true": [ids]}, ...}``,
  one key per list entry in the list's order; ``true`` must be the entry's plan;
- ``plain``: for any other method, JSON lines ``{"episode": E, "plan": [...]}`` or a CSV file with
  the header ``episode,plan`` and the steps separated by ``;``. ``E`` is the entry's place in the
  list (0-based) or its episode id (``task/video/first:T``); the steps are action ids or names
  (the taxonomy's or the list's names; a name two actions share is written with its task in
  brackets, as the dataset names it).

Every entry needs exactly one plan of ``T`` steps; a missing, extra or mismatched one is a KeppError
naming the file, the entry and what was expected. Each record notes where its plans came from:
``"imported": {method: file name}``.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import msgspec

from kepp_core.catalog import find_method
from kepp_core.data.split_lists import (MAX_ACTION_ID, ListedEpisode, list_horizon, list_vocabulary, listed_episode_ids,
                                        read_split_list, read_taxonomy)
from kepp_core.errors import KeppError
from kepp_core.catalog.limits import MAX_HORIZON
from kepp_core.io import decode_utf8, has_suffix, iter_lines, parse_json, read_bytes, utf8_text, whole_number
from kepp_core.schema import Meta, Struct, check_id, check_nesting, convert, decode_json

MAX_PREDICTIONS_BYTES = 1 << 30
ActionId = Annotated[int, Meta(ge=0, le=MAX_ACTION_ID)]
Steps = Annotated[list[ActionId], Meta(min_length=1, max_length=MAX_HORIZON)]


class _VpnPrediction(Struct):
    pred: Steps
    true: Steps


_StepName = Annotated[str, Meta(min_length=1, max_length=1000)]
_Step = ActionId | _StepName
_Episode = Annotated[int, Meta(ge=0)] | Annotated[str, Meta(min_length=1, max_length=1000)]
_MAX_DIGITS = 20  # more digits are no id or place (and int() of 4,300 digits is a ValueError)


class _PlainRow(Struct):
    episode: _Episode
    plan: Annotated[list[_Step], Meta(min_length=1, max_length=MAX_HORIZON)]


def import_predictions(predictions: str | Path, split: str | Path, method: str, fmt: str = "vpn",
                       taxonomy: str | Path | None = None, seed: int | None = None) -> list[dict]:
    """The prediction records (:mod:`kepp_core.evaluation.records`) of ``method``'s plans in the
    file ``predictions`` (format ``fmt``), one per entry of the split list ``split``, in its order."""
    check_id(method, "--method", "records import")
    if find_method(method) is not None:
        raise KeppError(f"--method {method!r} is one of this package's methods: name the imported one otherwise "
                        "(e.g. its paper and run: vpn-seed7)")
    form = FORMATS.get(fmt)
    if form is None:
        raise KeppError(f"--format {fmt!r}: expected one of {', '.join(FORMATS)}")
    episodes = read_split_list(split)
    tax = read_taxonomy(taxonomy) if taxonomy is not None else None
    path = Path(predictions)
    plans = form.read(path, episodes, Path(split).name, tax)
    horizon, source = list_horizon(episodes), path.name
    out = []
    for ep, episode, plan in zip(episodes, listed_episode_ids(episodes), plans):
        gt = list(ep.plan)
        rec = {} if seed is None else {"seed": seed}
        rec.update({"T": horizon, "episode": episode, "video": ep.video, "task": ep.task, "gt": gt,
                    "plans": {method: plan}, "success": {method: int(plan == gt)},
                    "acc": {method: sum(p == g for p, g in zip(plan, gt)) / len(gt)}, "imported": {method: source}})
        out.append(rec)
    return out


def _vpn_plans(path: Path, episodes: Sequence[ListedEpisode], list_name: str, taxonomy=None) -> list[list[int]]:
    """The ``pred`` of each entry of a ViterbiPlanNet predictions file, its ``true`` checked (its steps are
    ids: no ``taxonomy`` is read)."""
    data = _read(path)
    check_nesting(data, str(path), 3)
    # parsed with each key once (an entry given twice is refused, never one of them taken), then typed
    preds = convert(parse_json(utf8_text(data, str(path)), str(path), dict, unique_keys=True),
                    dict[str, _VpnPrediction], str(path))
    horizon = list_horizon(episodes)
    expected = [str(k) for k in range(len(episodes))]
    if set(preds) != set(expected):
        missing = [k for k in expected if k not in preds]
        extra = [k for k in preds if k not in set(expected)]
        what = f"missing {_few(missing)}" if missing else f"keys beyond the list: {_few(extra)}"
        raise KeppError(f"{path}: {len(preds)} predictions for the {len(episodes)} entries of {list_name} "
                        f"(expected keys '0'..'{len(episodes) - 1}', one per entry in the list's order; {what})")
    out = []
    for k, ep in enumerate(episodes):
        p = preds[str(k)]
        if len(p.pred) != horizon:
            raise KeppError(f"{path}: '{k}': 'pred' has {len(p.pred)} steps, the episodes of {list_name} have {horizon}")
        if list(p.true) != list(ep.plan):
            raise KeppError(f"{path}: '{k}': 'true' is {list(p.true)}, {list_name} entry {k} is {list(ep.plan)} "
                            "(predictions made on another list, or in another order?)")
        out.append(list(p.pred))
    return out


def _plain_plans(path: Path, episodes: Sequence[ListedEpisode], list_name: str, taxonomy=None) -> list[list[int]]:
    """The plan of each entry from a plain JSON-lines or CSV file (each entry once), its named steps read
    with the list's and ``taxonomy``'s names."""
    labels, raw = list_vocabulary(episodes, taxonomy)
    ids = listed_episode_ids(episodes)
    where_of = {e: k for k, e in enumerate(ids)}
    names = _name_index(labels, raw)
    horizon, found = list_horizon(episodes), {}
    for where, episode, steps in _plain_rows(path):
        k = episode if isinstance(episode, int) else where_of.get(episode)
        if k is None or k >= len(episodes):
            raise KeppError(f"{where}: episode {episode!r} is not in the split list (expected an entry's place "
                            f"0..{len(episodes) - 1} or an episode id such as {ids[0]!r})")
        if k in found:
            raise KeppError(f"{where}: a second plan for entry {k} ({ids[k]}; the first at {found[k][0]})")
        plan = [s if isinstance(s, int) else _action_id(s, names, where) for s in steps]
        if len(plan) != horizon:
            raise KeppError(f"{where}: a plan of {len(plan)} steps for entry {k}, whose episodes have T={horizon}")
        found[k] = (where, plan)
    missing = [ids[k] for k in range(len(episodes)) if k not in found]
    if missing:
        raise KeppError(f"{path}: no plan for {len(missing)} of the {len(episodes)} entries (e.g. {_few(missing)})")
    return [found[k][1] for k in range(len(episodes))]


def _plain_rows(path: Path):
    """``(where, episode, steps)`` of each row of a plain file (``.csv``, else JSON lines)."""
    if has_suffix(path, ".csv"):
        text = utf8_text(_read(path), str(path))
        rows = csv.reader(io.StringIO(text))
        try:
            header = next(rows, None)
            if header is None or [h.strip() for h in header] != ["episode", "plan"]:
                raise KeppError(f"{path}:1: expected the header 'episode,plan'")
            for row in rows:
                where = f"{path}:{rows.line_num}"
                if not any(c.strip() for c in row):
                    continue
                if len(row) != 2 or not row[1].strip():
                    raise KeppError(f"{where}: expected two cells, an episode and its steps separated by ';'")
                yield where, _csv_cell(row[0], "episode", _Episode, where), [_csv_cell(s, "step", _Step, where)
                                                                          for s in row[1].split(";")]
        except csv.Error as e:  # a field past the csv module's limit (131,072 characters), a stray quote
            raise KeppError(f"{path}:{rows.line_num}: not a CSV row this format holds ({e}; expected an episode "
                            f"and at most {MAX_HORIZON} steps separated by ';')") from None
        return
    decoder = msgspec.json.Decoder(_PlainRow)
    for where, raw in iter_lines(path):
        if raw.count(b'"episode"') > 1 or raw.count(b'"plan"') > 1:  # maybe a key twice: the reader that refuses it
            row = convert(parse_json(decode_utf8(raw, where), where, dict, lines=False, unique_keys=True), _PlainRow,
                          where)
        else:
            row = decode_json(raw, _PlainRow, where, decoder)
        yield where, row.episode, list(row.plan)


def _csv_cell(cell: str, what: str, schema, where: str) -> int | str:
    """A CSV cell as the JSON rows' field ``schema`` reads it (one set of bounds for both forms): ASCII
    digits are a number (an entry's place, an action id), any other text a name or an episode id."""
    text = cell.strip()
    value: int | str | None = text
    if text.isascii() and text.isdigit():
        value = whole_number(text, _MAX_DIGITS)
        if value is None:
            raise KeppError(f"{where}: {what} of {len(text):,} digits (expected at most {_MAX_DIGITS})")
    try:
        return msgspec.convert(value, schema)
    except msgspec.ValidationError as e:
        shown = text if len(text) <= 40 else f"{text[:40]}... ({len(text):,} characters)"
        raise KeppError(f"{where}: {what} {shown!r}: {str(e).removesuffix(' - at `$`')}") from None


def _name_index(labels: list[str], raw: dict[int, str]) -> dict[str, list[int]]:
    """The ids each step name may mean: the dataset's labels (unique) and the files' own names."""
    index: dict[str, list[int]] = {label: [a] for a, label in enumerate(labels)}
    for a, name in raw.items():
        ids = index.setdefault(name, [])
        if a not in ids:
            ids.append(a)
    return index


def _action_id(name: str, names: dict[str, list[int]], where: str) -> int:
    ids = names.get(name)
    if not ids:
        raise KeppError(f"{where}: step {name!r} is no action of the list (expected an id or a name the taxonomy or "
                        "the list gives)")
    if len(ids) > 1:
        raise KeppError(f"{where}: step {name!r} names actions {', '.join(map(str, ids))}: write the id")
    return ids[0]


def _read(path: Path) -> bytes:
    try:
        return read_bytes(path, MAX_PREDICTIONS_BYTES)
    except FileNotFoundError:
        raise KeppError(f"{path}: predictions file not found") from None


def _few(items: Sequence) -> str:
    shown = ", ".join(repr(x) for x in items[:3])
    return shown + (f" and {len(items) - 3} more" if len(items) > 3 else "")


@dataclass(frozen=True, kw_only=True)
class ImportFormat:
    """A format ``kepp records import`` reads: its ``name`` (``--format NAME``), a line of ``help``, an
    ``example`` (command lines, as ``kepp records import --help`` shows them) and its reader,
    ``read(path, episodes, list_name, taxonomy)``: the plan of each entry of the split list's ``episodes``,
    in its order (``list_name``: the list's file name, for messages; ``taxonomy``: the names of
    ``--taxonomy``, or None). A new format is one function and one object here."""

    name: str
    help: str
    example: str
    read: Callable[[Path, Sequence[ListedEpisode], str, dict | None], list[list[int]]]


FORMATS: dict[str, ImportFormat] = {f.name: f for f in (
    ImportFormat(name="vpn", help="ViterbiPlanNet's T<h>_predictions.json", read=_vpn_plans, example="""\
  kepp records import --format vpn --predictions checkpoints/niv_7/T3_predictions.json \\
      --split dataset/NIV/test30_3.json --method viterbiplannet-s7 --seed 7 --out runs/compare/vpn-s7-records.jsonl"""),
    ImportFormat(name="plain", help="JSON lines or CSV of episode and plan", read=_plain_plans, example="""\
  kepp records import --format plain --predictions mtid.csv --split test30_3.json \\
      --taxonomy niv_taxonomy.json --method mtid --out runs/mtid.jsonl
  (plain: JSON lines {"episode": E, "plan": [...]} or a CSV 'episode,plan' with the steps separated by ';';
   E is the entry's place in the list (0-based) or its episode id, the steps are action ids or names)"""),
)}


__all__ = ["FORMATS", "ImportFormat", "import_predictions"]
