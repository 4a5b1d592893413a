"""Nothing overwritten unasked: the one guard every ``kepp`` command that writes a file passes before
any work (:func:`guard_outputs`, called by :func:`kepp_core.commands._common.hold_outputs`).

A command declares its outputs, each with its **kind**, and its inputs (:func:`~kepp_core.commands._common.writes`).
An output is refused, in one line naming the file and ``--force``, when

- it is one of the command's own inputs (the same file, through any link): the file read would be
  replaced by what was made of it;
- it exists, holds something, and is not of the output's kind (a predictions file, a split list, a
  graph or a features array named as the records to write);
- it holds prediction records that are not this run's own (another run's, another seed's, an imported
  method's): ``--append`` keeps them and adds this run's (:func:`write_records_output`), ``--force``
  replaces them. One records file holds one dataset: ``--append`` refuses records of another dataset
  (no video in common, a video of another task, an episode with another ground truth), another
  taxonomy (an action named otherwise) or another format (a protocol's records, with a training
  fraction, and one run's), and an output that is a symbolic link (its target is named instead: the
  link is never replaced by a file).

A run's own earlier output (the same command run again) is replaced as before. Every write stays
atomic (:mod:`kepp_core.io`): a kill at any moment leaves the old file whole.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from kepp_core.errors import KeppError, printable
from kepp_core.io import has_suffix

SNIFF_BYTES = 1 << 16  # how much of an existing file is read to tell its kind


@dataclass(frozen=True, kw_only=True)
class OutputKind:
    """What a command writes: its readable ``name`` and how to recognise an existing file of it."""

    name: str
    recognise: Callable[[Path, bytes], bool]


def _first_line_json(head: bytes):
    try:
        return json.loads(head.split(b"\n", 1)[0])
    except ValueError:
        return None


def _is_records(path: Path, head: bytes) -> bool:
    from kepp_core.evaluation.records import REQUIRED

    if has_suffix(path, ".parquet"):
        try:
            import pyarrow.parquet as pq

            return set(REQUIRED) <= set(pq.read_schema(path).names)
        except Exception:  # pyarrow raises several types for a file that is not Parquet
            return False
    first = _first_line_json(head.lstrip())
    return isinstance(first, dict) and set(REQUIRED) <= set(first)


def _json_object(path: Path, head: bytes) -> dict | None:
    from kepp_core.io import read_json

    if not head.lstrip().startswith(b"{"):
        return None
    try:
        obj = read_json(path)
    except KeppError:
        return None
    return obj if isinstance(obj, dict) else None


def _is_table(path: Path, head: bytes) -> bool:
    obj = _json_object(path, head)
    return obj is not None and ("rows" in obj or "tables" in obj)


def _is_episodes(path: Path, head: bytes) -> bool:
    return head.startswith(b"episode,T,")


def _is_graph(path: Path, head: bytes) -> bool:
    from kepp_core.graph.build import FORMAT

    return FORMAT.encode() in head


def _is_deck(path: Path, head: bytes) -> bool:
    from kepp_core.evaluation.playlists import is_deck, is_deck_pdf

    return is_deck(path) or is_deck_pdf(path)  # sealed by the export: a note quoting the deck's head is not one


def _is_features(path: Path, head: bytes) -> bool:
    return head.startswith(b"\x93NUMPY")


def _is_split_list(path: Path, head: bytes) -> bool:
    return head.lstrip().startswith(b"[")


def _is_taxonomy(path: Path, head: bytes) -> bool:
    obj = _json_object(path, head)
    return obj is not None and all(isinstance(v, dict) for v in obj.values())


def _is_checkpoint(path: Path, head: bytes) -> bool:
    from kepp_core.models.folders import FORMAT

    obj = _json_object(path, head)
    return obj is not None and obj.get("format") == FORMAT


def _is_results(path: Path, head: bytes) -> bool:
    obj = _json_object(path, head)
    return obj is not None and {"rows", "summary"} <= set(obj)


RECORDS = "records"
KINDS: dict[str, OutputKind] = {
    RECORDS: OutputKind(name="prediction records", recognise=_is_records),
    "table": OutputKind(name="a 'kepp eval' table (JSON)", recognise=_is_table),
    "episodes": OutputKind(name="an episodes list of 'kepp eval compare' (CSV)", recognise=_is_episodes),
    "graph": OutputKind(name="a procedure graph", recognise=_is_graph),
    "features": OutputKind(name="a features array (.npy)", recognise=_is_features),
    "split-list": OutputKind(name="a split list (JSON array)", recognise=_is_split_list),
    "taxonomy": OutputKind(name="a taxonomy (JSON)", recognise=_is_taxonomy),
    "checkpoint": OutputKind(name="a model's config (config.json)", recognise=_is_checkpoint),
    "results": OutputKind(name="a protocol's or table's results (JSON)", recognise=_is_results),
    "deck": OutputKind(name="a KEPP deck (HTML, or PDF with --pdf: 'kepp talk export')", recognise=_is_deck),
}


@dataclass(frozen=True, kw_only=True)
class FolderOutput:
    """What a command writes into a folder: the ``folder``, each file it would write there with its kind
    (``files``), what it reads that its options name only indirectly (``inputs``: ``(what names it,
    path)``, e.g. a spec's lists) and the ``(method, seed, T, imported from)`` of the records it writes
    (``run_keys``; ``T`` None: any; None: records of any run are its own to replace). A command declares
    it with ``writes(p, folders={dest: declare})``,
    ``declare(args)`` giving it (None: nothing to guard, the command says what is wrong)."""

    folder: Path
    files: tuple[tuple[Path, str], ...]
    inputs: tuple[tuple[str, Path], ...] = ()
    run_keys: frozenset | None = None


def model_configs(root: Path) -> tuple[tuple[Path, str], ...]:
    """The model configs already under ``root`` (a models folder: its checkpoints are rewritten)."""
    from kepp_core.catalog import CONFIG_FILE

    if not root.is_dir():
        return ()
    return tuple((p, "checkpoint") for p in sorted(root.rglob(CONFIG_FILE)))


def add_output_flags(p: argparse.ArgumentParser, kinds: Iterable[str]) -> None:
    """``--force`` on every command that writes a file; ``--append`` where it writes records."""
    p.add_argument("--force", action="store_true",
                   help="replace an existing output that is another kind of file, one of this command's inputs or "
                        "other runs' records")
    if RECORDS in kinds:
        p.add_argument("--append", action="store_true",
                       help="keep the records already in the output file and add this run's to them")


def _flag(dest: str) -> str:
    return "--" + dest.replace("_", "-")


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def _input_files(args: argparse.Namespace) -> list[tuple[str, Path]]:
    """What the command reads, by option, each as ``(what names it, path)``: the files and folders given,
    a records folder's records files (as they are read) and the lists a split file (``--root
    SPLIT.toml``) names."""
    from kepp_core.evaluation.store import record_files

    out = []
    for dest in getattr(args, "reads", ()):
        value = getattr(args, dest, None)
        for v in value if isinstance(value, (list, tuple)) else [value]:
            if v is None:
                continue
            path, named = Path(v), f"{_flag(dest)} {printable(str(v))}"
            if path.is_dir():
                out.append((named, path))
                if dest in getattr(args, "reads_records", ()):
                    try:
                        out += [(named, f) for f in record_files(path)]
                    except KeppError:
                        pass  # the command says what is wrong with it
            elif path.is_file():
                out.append((named, path))
                out += split_file_inputs(path, named)
    return out


def split_file_inputs(path: Path, named: str) -> list[tuple[str, Path]]:
    """The lists, taxonomy and feature folder a split file (TOML) names, each as ``(what names it, path)``;
    none for another file (what is wrong with it is said where it is read)."""
    if not has_suffix(path, ".toml"):
        return []
    from kepp_core.data.split_lists import read_split_file

    try:
        lists = read_split_file(path)
    except KeppError:
        return []
    return [(f"{named}, which names it", p) for p in (lists.train, lists.test, lists.taxonomy, lists.features)
            if p is not None]


def guard_outputs(args: argparse.Namespace) -> None:
    """Refuse, before any work, an output the command would overwrite unasked (the module docstring)."""
    force = getattr(args, "force", False) is True
    files = {dest: (Path(v), kind) for dest, kind in getattr(args, "writes_kinds", {}).items()
             if (v := getattr(args, dest, None)) is not None}
    folders = {dest: out for dest, declare in getattr(args, "writes_folder_files", {}).items()
               if (out := declare(args)) is not None}
    if not files and not folders:
        return  # writes nothing: its inputs (a records folder's files) are not listed for nothing
    inputs = _input_files(args)
    run_keys = getattr(args, "run_keys", None)
    mine = frozenset(run_keys(args)) if run_keys is not None else frozenset()
    for dest, (path, kind) in files.items():
        _guard_file(path, kind, dest, inputs, args, force, _flag(dest) + " file", mine)
    for dest, out in folders.items():
        where = f"{_flag(dest)} folder"
        for named, f in [*inputs, *out.inputs]:
            if _same_file(out.folder, f) and not force:
                raise KeppError(f"{printable(str(out.folder))}: is this command's input ({named}); name another "
                                f"{where} (--force writes into it)")
        for path, kind in out.files:
            _guard_file(path, kind, dest, [*inputs, *out.inputs], args, force,
                        f"{where} than {printable(str(out.folder))}", out.run_keys)


def _guard_file(path: Path, kind: str, dest: str, inputs: list[tuple[str, Path]], args: argparse.Namespace,
                force: bool, another: str, mine: frozenset | None) -> None:
    """Refuse the output ``path`` of ``kind`` (option ``dest``) where it is an input, or an existing file of
    another kind or of other runs' records (``mine``: this run's keys; None: records of any run are
    replaced) (``another``: what to name instead)."""
    for named, f in inputs:
        if _same_file(path, f) and not force:
            raise KeppError(f"{printable(str(path))}: is this command's input ({named}); name another {another} "
                            "(--force replaces it)")
    if kind == RECORDS and getattr(args, "append", False) and path.is_symlink():
        raise KeppError(f"{printable(str(path))}: is a symbolic link (to {printable(os.path.realpath(path))}); "
                        f"--append writes a regular file only: name the link's target as {_flag(dest)}")
    if force or not path.is_file() or path.stat().st_size == 0:
        return
    with open(path, "rb") as fh:
        head = fh.read(SNIFF_BYTES)
    if not KINDS[kind].recognise(path, head):
        raise KeppError(f"{printable(str(path))}: exists and is not {KINDS[kind].name} (what {_flag(dest)} "
                        f"writes); name another {another}, or --force to replace it")
    if kind == RECORDS and mine is not None:
        _check_records(path, args, mine)


def _check_records(path: Path, args: argparse.Namespace, mine: frozenset) -> None:
    """The records already in ``path``: all this run's own (replaced), or others' (refused without
    ``--append``); with ``--append``, none of this run's (its episodes would be there twice). A run's
    records are known by ``(method, seed, T, imported from)``; the command's ``run_keys(args)`` gives
    its own (``mine``; ``T`` None: any)."""
    from kepp_core.evaluation.records import read_records

    own: dict[str, None] = {}
    foreign: dict[str, None] = {}
    for method, seed, horizon, source in _record_keys(read_records(path)):
        what = method + (f" seed {seed}" if seed is not None else "") + (f" imported from {source}" if source else "")
        ours = (method, seed, horizon, source) in mine or (method, seed, None, source) in mine
        (own if ours else foreign).setdefault(what, None)
    where = printable(str(path))
    if getattr(args, "append", False):
        if own:
            raise KeppError(f"{where}: already holds records of {_some(own)} (this run's); --append adds other "
                            "runs only (--force replaces the file)")
    elif foreign:
        raise KeppError(f"{where}: holds records of {_some(foreign)} (not this run's); --append keeps them and adds "
                        "this run's, --force replaces them")


def _some(names: dict[str, None]) -> str:
    shown = [printable(s) for s in names]
    return ", ".join(shown[:3]) + (f" and {len(shown) - 3} more" if len(shown) > 3 else "")


def _record_keys(records: Iterable[dict]) -> set[tuple]:
    keys = set()
    for rec in records:
        imported = rec.get("imported") if isinstance(rec.get("imported"), dict) else {}
        for method in rec["plans"]:
            keys.add((str(method), rec.get("seed"), rec.get("T"), imported.get(method)))
    return keys


def _differs(there: dict, here: dict) -> tuple | None:
    """The first key both mappings hold with different values, as ``(key, there, here)``; None if none."""
    return next(((k, there[k], v) for k, v in here.items() if k in there and there[k] != v), None)


def _mapping(records: Iterable[dict], key: str, value: str) -> dict:
    """``record[key] -> record[value]`` over the records holding both (lists as tuples)."""
    out = {}
    for rec in records:
        k, v = rec.get(key), rec.get(value)
        if k is not None and v is not None:
            out[str(k)] = tuple(v) if isinstance(v, list) else v
    return out


def _labels(records: Iterable[dict]) -> dict:
    """Action id -> its name, from the records' ground truth and endpoints with their labels."""
    out = {}
    for rec in records:
        for ids, names in ((rec.get("gt"), rec.get("gt_labels")), (rec.get("endpoints"), rec.get("endpoint_labels"))):
            if isinstance(ids, list) and isinstance(names, list) and len(ids) == len(names):
                out.update(zip(map(str, ids), map(str, names)))
    return out


def check_one_dataset(where: str, kept: list[dict], records: list[dict]) -> None:
    """Refuse appending ``records`` to ``kept`` (the file ``where``'s) when they are of another format, dataset
    or taxonomy (the module docstring), in one line naming what differs."""
    if not kept or not records:
        return
    protocol = {"fraction" in r for r in kept}, {"fraction" in r for r in records}
    if protocol[0] != protocol[1]:
        what = {True: "a protocol's records (with a training fraction)", False: "one run's records"}
        raise KeppError(f"{where}: holds {' and '.join(what[b] for b in sorted(protocol[0]))}, this run writes "
                        f"{' and '.join(what[b] for b in sorted(protocol[1]))}: one records file holds one format "
                        "(--append adds runs of the same kind; name another file)")
    tasks_there, tasks_here = _mapping(kept, "video", "task"), _mapping(records, "video", "task")
    if tasks_there and tasks_here and not set(tasks_there) & set(tasks_here):
        raise KeppError(f"{where}: holds records of another dataset (none of this run's {len(tasks_here)} videos, "
                        f"e.g. {printable(next(iter(tasks_here)))}, is among its {len(tasks_there)}): one records file "
                        "holds one dataset (name another file)")
    for (key, value, what) in (("video", "task", "video"), ("episode", "gt", "episode")):
        diff = _differs(_mapping(kept, key, value), _mapping(records, key, value))
        if diff:
            raise KeppError(f"{where}: holds records of another dataset ({what} {printable(diff[0])} has {value} "
                            f"{printable(str(diff[1]))} there, {printable(str(diff[2]))} in this run): one records "
                            "file holds one dataset (name another file)")
    diff = _differs(_labels(kept), _labels(records))
    if diff:
        raise KeppError(f"{where}: holds records of another taxonomy (action {diff[0]} is {printable(diff[1])!r} "
                        f"there, {printable(diff[2])!r} in this run): one records file holds one taxonomy "
                        "(name another file)")


def write_records_output(args: argparse.Namespace, dest: str, records: list[dict]) -> int:
    """Write ``records`` to the records output ``dest`` (atomically); with ``--append``, after the
    records already there, refusing an episode both hold for the same method and seed. Returns how
    many records the file holds."""
    from kepp_core.evaluation.records import read_records, write_records

    path = Path(getattr(args, dest))
    kept: list[dict] = []
    if getattr(args, "append", False) and path.is_file() and path.stat().st_size > 0:
        kept = list(read_records(path))
        check_one_dataset(printable(str(path)), kept, records)
        have = {(m, rec.get("seed"), rec.get("T"), rec["episode"]) for rec in kept for m in rec["plans"]}
        for rec in records:
            for m in rec["plans"]:
                if (m, rec.get("seed"), rec.get("T"), rec["episode"]) in have:
                    raise KeppError(f"{printable(str(path))}: already holds {printable(str(m))} seed {rec.get('seed')} "
                                    f"on episode {printable(str(rec['episode']))}; --append adds other runs only "
                                    "(--force replaces the file)")
    write_records(path, kept + list(records))
    return len(kept) + len(records)
