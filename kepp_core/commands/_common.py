"""Shared pieces of the command groups: dataset arguments, tables and JSON output."""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from kepp_core.catalog import MAX_HORIZON, MAX_SEED, MAX_TOP
from kepp_core.data import LOADERS, Dataset, load_dataset
from kepp_core.data.split_lists import SplitFiles
from kepp_core.data.synth import ensure_world
from kepp_core.io import has_suffix, refuse_non_regular, remove_stale_temporaries, writer_lock
from kepp_core.errors import KeppError, printable


class HelpFormatter(argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
    """Keeps the examples in ``epilog`` as written and shows each option's default once.

    argparse's own formatter appends ``(default: ...)`` to every option, also where the help
    already says what the default is, where the default is ``None`` (the option is simply
    off, or the help explains what happens without it) and to on/off flags (``False``).
    Here it is appended only where it adds something:

    >>> p = argparse.ArgumentParser(formatter_class=HelpFormatter)
    >>> _ = p.add_argument("--seed", type=int, default=0, help="split seed")
    >>> _ = p.add_argument("--root", default=None, help="dataset folder (default: the demo world)")
    >>> _ = p.add_argument("--json", action="store_true", help="machine-readable output")
    >>> [HelpFormatter("kepp")._get_help_string(a) for a in p._actions[1:]]
    ['split seed (default: %(default)s)', 'dataset folder (default: the demo world)', 'machine-readable output']
    """

    def _get_help_string(self, action: argparse.Action) -> str:
        help = action.help or ""
        if _STATES_DEFAULT.search(help) or action.default is None or action.default is argparse.SUPPRESS:
            return help
        if action.nargs == 0 and isinstance(action.default, bool) \
                and not isinstance(action, argparse.BooleanOptionalAction):
            return help  # store_true / store_false: the flag itself says it
        return super()._get_help_string(action)


# a help text that already names its default: "(default: ...)", "(default for demo: ...)",
# "(default 1)", or argparse's own "%(default)s"
_STATES_DEFAULT = re.compile(r"\(default\b|%\(default\)", re.IGNORECASE)


def add_command(sub, name: str, help: str, examples: str = "", func=None) -> argparse.ArgumentParser:
    """Add a sub-command with its one-line help and an ``examples:`` epilog."""
    p = sub.add_parser(name, help=help, description=help, formatter_class=HelpFormatter,
                       epilog=f"examples:\n{examples}" if examples else None)
    if func is not None:
        p.set_defaults(func=func)
    return p


# The files a dataset's options name (read by every command that takes them: never one of its outputs).
DATASET_INPUTS = ("root", "train_list", "test_list", "taxonomy")


def add_dataset_args(p: argparse.ArgumentParser, required: bool = True) -> None:
    """Add --dataset, --root, --features, --split-seed, --coin-actions and the split lists' files."""
    p.add_argument("--dataset", default="demo", choices=sorted(LOADERS),
                   help="dataset format (demo: the built-in synthetic world)")
    p.add_argument("--root", default=None,
                   help="dataset folder or annotation file (default for demo: the cached demo world)")
    p.add_argument("--features", default=None, help="folder of per-second .npy features (overrides the default)")
    p.add_argument("--split-seed", type=int, default=0, help="seed of the 70/30 split where a dataset has none")
    p.add_argument("--coin-actions", choices=["steps", "labels"], default="steps",
                   help="COIN only: one action per COIN step id, or per distinct label")
    p.add_argument("--train-list", default=None, metavar="FILE",
                   help="split-lists only: the training episodes (a data list as PDPP, KEPP and ViterbiPlanNet read)")
    p.add_argument("--test-list", default=None, metavar="FILE", help="split-lists only: the test episodes")
    p.add_argument("--taxonomy", default=None, metavar="FILE",
                   help="split-lists only: the action and task names (ViterbiPlanNet's *_taxonomy*.json)")


# The range of every numeric option that means one thing in every command, by its argparse name:
# `kepp` checks them all before a command runs, so `--seed 2**70`, `--split-seed -1`, `-R 0` or
# `-T 1000` are refused the same way whichever command is given them.
OPTION_RANGES: dict[str, tuple[str, int, int]] = {
    "seed": ("--seed", 0, MAX_SEED), "split_seed": ("--split-seed", 0, MAX_SEED),
    "horizon": ("--horizon", 2, MAX_HORIZON), "horizons": ("--horizons", 2, MAX_HORIZON),
    "top": ("--top", 1, MAX_TOP), "paths": ("-R/--paths", 1, MAX_TOP), "depth": ("--depth", 0, 10),
    "videos": ("--videos", 1, 1_000_000), "workers": ("--workers", 1, 256),
    "seconds": ("--seconds", 1, 3600),
}


def check_numbers(args: argparse.Namespace) -> None:
    """Refuse a numeric option outside :data:`OPTION_RANGES` (one value or a list), naming it.

    >>> check_numbers(argparse.Namespace(seed=2**70))
    Traceback (most recent call last):
    ...
    kepp_core.errors.KeppError: --seed 1180591620717411303424: expected 0..4294967295
    """
    for name, (flag, low, high) in OPTION_RANGES.items():
        value = getattr(args, name, None)
        for v in value if isinstance(value, (list, tuple)) else [value]:
            if type(v) is int and not low <= v <= high:
                raise KeppError(f"{flag} {v}: expected {low}..{high}")


def dataset_from_args(args) -> Dataset:
    """The dataset the arguments name; ``--dataset demo`` without ``--root`` builds the default
    world first where it is missing (about a minute, once)."""
    root = args.root
    if args.dataset == "demo" and root is None:
        root = ensure_world()
    return load_dataset(args.dataset, root, features=args.features, seed=args.split_seed,
                        coin_actions=getattr(args, "coin_actions", "steps"), lists=split_files(args))


def split_files(args) -> SplitFiles | None:
    """The split lists ``--train-list``, ``--test-list`` and ``--taxonomy`` name (both lists or
    none: a KeppError naming the missing one), or None without them."""
    train, test, taxonomy = (getattr(args, k, None) for k in ("train_list", "test_list", "taxonomy"))
    if train is None and test is None and taxonomy is None:
        return None
    if train is None or test is None:
        raise KeppError(f"{'--test-list' if train is not None else '--train-list'} is missing: the split lists "
                        "come in pairs (--train-list FILE --test-list FILE)")
    return SplitFiles(train=Path(train), test=Path(test), taxonomy=Path(taxonomy) if taxonomy else None)


def writes(p: argparse.ArgumentParser, *, kinds: dict[str, str] | None = None, folders: dict | None = None,
           pair: tuple[str, ...] = (), reads: tuple[str, ...] = (), reads_records: tuple[str, ...] = (),
           run_keys=None, lock_folders: bool = True) -> None:
    """Declare the options of a command that name what it writes: ``kinds``, each file option and the
    kind of file it writes (:data:`kepp_core.commands._outputs.KINDS`), and ``folders``, each folder option
    and what the command writes there (a function of the arguments giving a
    :class:`~kepp_core.commands._outputs.FolderOutput`); and the options
    that name what it reads (``reads``; of those, ``reads_records``: records files or folders of them).
    `kepp` holds the outputs' writer locks while the command runs (:func:`hold_outputs`) and, before
    any work, refuses an output that is an input, another kind of file or other runs' records
    (:func:`~kepp_core.commands._outputs.guard_outputs`: ``--force``, and ``--append`` for records,
    are added here; ``run_keys(args)``: the ``(method, seed, T, imported from)`` of the records this run
    writes). ``pair``: the suffixes of a file's companions (a graph's ``.json`` and ``.safetensors``,
    written together by ``--compact``): their locks are held too, so two commands never write one pair
    at once. ``lock_folders`` False: the command takes its folders' locks itself (a training run, once the
    folder's name is checked)."""
    from kepp_core.commands._outputs import add_output_flags

    kinds, folders = kinds or {}, folders or {}
    if kinds or folders:
        add_output_flags(p, kinds.values())
    p.set_defaults(writes_files=tuple(kinds), writes_kinds=kinds, writes_folders=tuple(folders) if lock_folders else (),
                   writes_folder_files=folders, writes_pair=pair,
                   reads=reads, reads_records=reads_records, run_keys=run_keys)


@contextlib.contextmanager
def hold_outputs(args: argparse.Namespace) -> Iterator[None]:
    """Hold the writer lock (:func:`kepp_core.io.writer_lock`) of every output the command declared
    with :func:`writes`, for as long as it runs: a second command writing the same file or folder
    is refused naming the first. The temporary files a killed writer left there are removed first;
    an output that is not a regular file is refused before any work (:func:`check_outputs`)."""
    from kepp_core.commands._outputs import guard_outputs

    files = [Path(getattr(args, d)) for d in getattr(args, "writes_files", ()) if getattr(args, d, None)]
    folders = [Path(getattr(args, d)) for d in getattr(args, "writes_folders", ()) if getattr(args, d, None)]
    check_outputs(*files)
    what = " ".join(["kepp", str(getattr(args, "command", "")),
                     *[str(v) for k, v in vars(args).items() if k.endswith("_command") and v]])
    pair = getattr(args, "writes_pair", ())
    companions = [c for f in files if has_suffix(f, *pair) for c in (f.with_suffix(s) for s in pair) if c not in files]
    with contextlib.ExitStack() as stack:
        for path in [*files, *dict.fromkeys(companions), *folders]:  # a refusal names the file given first
            stack.enter_context(writer_lock(path, what))
        for path in files:
            remove_stale_temporaries(path.parent, name=path.name)
        for path in folders:
            remove_stale_temporaries(path, recursive=True)
        guard_outputs(args)  # under the locks: no other command is writing them meanwhile
        yield


def check_outputs(*paths) -> None:
    """Refuse, before any work, an output path that exists and is not a regular file (a device,
    FIFO or socket, also behind a symlink): it is never written or renamed over."""
    for path in paths:
        if path is not None:
            refuse_non_regular(path)


def emit_json(obj) -> None:
    json.dump(obj, sys.stdout, indent=2)
    sys.stdout.write("\n")


# The columns a table never cuts or wraps: a method is read by its whole name ("KEPP R=1 + joint decoding with
# the endpoint model", "viterbiplannet"), never "metho…".
WHOLE_COLUMNS = ("method",)


def print_table(rows: Sequence[dict], columns: Sequence[str] | None = None, title: str | None = None) -> None:
    """Print rows as a readable table (rich). Cells and title are plain text: a dataset label
    like ``[/red]`` is printed as it is, never read as rich markup, and control characters are
    escaped (:func:`~kepp_core.errors.printable`). Where the table is wider than the terminal, a column of
    :data:`WHOLE_COLUMNS` is as wide as its longest cell, on one line, the others wrap between words, and the
    table is as wide as that needs: no name, word or number is cut ("metho…", "1.4e…")."""
    import shutil

    from rich.cells import cell_len
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    columns = list(columns or (rows[0].keys() if rows else []))
    table = Table(title=escape(printable(title)) if title is not None else None)
    cells = [[printable(_fmt(r.get(c))) for c in columns] for r in rows]  # control characters escaped before measuring
    # piped output (no terminal) gets 160 columns instead of rich's 80, so wide tables stay legible
    width = shutil.get_terminal_size((160, 24)).columns
    texts = [[printable(str(c)), *(row[k] for row in cells)] for k, c in enumerate(columns)]
    # a table too wide for that: every column's least width, a whole column's longest cell
    # (on one line), another's longest word (its cells wrap between words, never cut in one); 3: padding and rule
    uncut = bool(cells) and 1 + sum(3 + max(map(cell_len, t)) for t in texts) > width
    need = [max(map(cell_len if c in WHOLE_COLUMNS else _longest_word, t)) for c, t in zip(columns, texts)]
    tight = 1 + sum(3 + n for n in need) >= width  # no room beyond the least widths: each column exactly its own
    for c, n in zip(columns, need):
        widths = {"min_width": n, **({"max_width": n} if tight else {})}  # (rich's squeezing would crop the last)
        table.add_column(escape(printable(str(c))), justify="right" if rows and isinstance(rows[0].get(c), (int, float))
                         else "left", **({"no_wrap": c in WHOLE_COLUMNS, **widths} if uncut else {}))
    for row in cells:
        table.add_row(*map(escape, row))
    # no colours: the table is plain text, so the printable standard output (kepp_core.cli) passes it as it is
    Console(width=max(width, 1 + sum(3 + n for n in need)) if uncut else width, color_system=None).print(table)


def _longest_word(text: str) -> int:
    """The cells of the longest word of ``text`` (what a wrapped column holds uncut)."""
    from rich.cells import cell_len

    return max((cell_len(w) for w in text.split()), default=0)


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.2f}"
    return "" if v is None else str(v)


DEVICE_HELP = ("where the networks run: cpu, cuda or cuda:N (default: $KEPP_DEVICE, else the GPU where there is "
               "one)")


def add_device_option(p: argparse.ArgumentParser, *, shared: bool = False,
                      no_network: Callable[[argparse.Namespace], bool] | None = None) -> None:
    """``--device cpu|cuda|cuda:N``: `kepp` resolves it (:mod:`kepp_core.devices`) before the command
    runs and makes it the command's device (:func:`command_device`). ``shared``: ranks of a launcher may
    share a GPU (inference); otherwise each rank needs its own (training: NCCL). ``no_network``: for the
    arguments of a run that places no network (``kepp eval --from-records``), True: the device's words are
    checked and nothing is resolved, so torch is never imported for it."""
    p.add_argument("--device", default=None, metavar="DEVICE", help=DEVICE_HELP)
    p.set_defaults(device_ranks="shared" if shared else "one-per-rank", device_unused=no_network)


@contextlib.contextmanager
def command_device(args: argparse.Namespace) -> Iterator[None]:
    """The device of a command that declared ``--device`` (:func:`add_device_option`), for as long as it
    runs: one line before any work where it cannot be had (no CUDA, no such GPU, more ranks than GPUs).
    A command that only prints run lists (``--print-commands``) checks the words and resolves nothing:
    its lines run elsewhere; so does a run that places no network (:func:`add_device_option`'s ``no_network``)."""
    ranks = getattr(args, "device_ranks", None)
    if ranks is None:
        yield
        return
    from kepp_core.devices import check_device, using

    unused = getattr(args, "device_unused", None)
    if getattr(args, "print_commands", False) or (unused is not None and unused(args)):
        if args.device is not None:
            args.device = check_device(args.device)
        yield
        return
    with using(args.device, one_per_rank=ranks == "one-per-rank") as device:
        args.device = device
        yield


def set_threads(args) -> int:
    """``--threads``: the CPU threads of this run (checked here, so the error names the flag)."""
    from kepp_core.training.loop import set_cpu_threads

    from kepp_core.training.loop import most_threads

    if args.threads is not None and not 1 <= args.threads <= most_threads():
        raise KeppError(f"--threads {args.threads}: expected 1 to {most_threads()} (4 per core of this machine)")
    return set_cpu_threads(args.threads)
