"""``kepp train step|plan|task-classifier|endpoints|all``: train models (CPU, CUDA, or many GPUs under torchrun)."""

from __future__ import annotations

import argparse
from dataclasses import replace

from kepp_core.catalog import (ENDPOINTS, ENDPOINTS_PAIR, EXTRA_ROLES, LLM_CONDITIONS, METHODS, SUITE_ROLES, TABLE_HORIZONS,
                               model_folder, models_dir)
from kepp_core.commands._common import (DATASET_INPUTS, add_command, add_dataset_args, add_device_option,
                                        dataset_from_args, emit_json, set_threads, writes)
from kepp_core.errors import KeppError

EXAMPLES_STEP = """  kepp train step --dataset demo -T 4 --out models/T4/step
  kepp train step --dataset crosstask --root data/crosstask -T 3 --out models/T3/step --batch-size 256
  torchrun --nproc-per-node 2 -m kepp_core train step --dataset demo -T 4 --out models/T4/step
  kepp train step --dataset demo -T 4 --out models/T4/step --resume"""
EXAMPLES_PLAN = """  kepp train plan --dataset demo -T 4 --step-model models/T4/step --out models/T4/plan-graph-R1
  kepp train plan --dataset demo -T 4 --step-model models/T4/step --R 2 --out models/T4/plan-graph-R2
  kepp train plan --dataset demo -T 4 --step-model models/T4/step --structured-weight 1 \\
      --out models/T4/plan-graph-R1-struct
  kepp train plan --dataset demo -T 4 --condition none --out models/T4/plan-none
  kepp train plan --dataset demo -T 4 --condition task --out models/T4/plan-task
  kepp train plan --dataset demo -T 4 --step-model models/T4/step --condition llm --out models/T4/plan-llm \\
      --llm-url http://127.0.0.1:8080/v1 --llm-model llama
  KEPP_LLM_URL=http://127.0.0.1:8080/v1 KEPP_LLM_MODEL=llama kepp train plan --dataset demo -T 4 \\
      --step-model models/T4/step --condition graph+llm --out models/T4/plan-graph-llm"""
EXAMPLES_CLS = "  kepp train task-classifier --dataset demo -T 4 --out models/T4/task-classifier"
EXAMPLES_ENDPOINTS = """  kepp train endpoints --dataset demo -T 4 --out models/T4/endpoints
  kepp train endpoints --dataset demo --root runs/niv-world -T 3 --out models/T3/endpoints --seed 1

  kepp train endpoints --dataset demo -T 3 --out models/T3/endpoints-pair \
      --set endpoint_arch=pair --set endpoint_windows=false --set endpoint_smoothing=0

  The endpoint model names the task, the first and the last step from the observation windows:
  one encoder per clip, whose heads also learn from every labelled window of the training videos
  (--set endpoint_arch=pair: the earlier model, one MLP over both clips); cross-entropy with label
  smoothing (--set endpoint_smoothing=S), the task classifier's schedule (--set endpoint_epochs=N,
  0: classifier_epochs). One temperature per head is fitted on the held-out training videos and
  stored in its config. Rows: """ + ", ".join(m.name for m in METHODS if ENDPOINTS in m.roles) + """ (the
  earlier model's, from endpoints-pair: """ + ", ".join(m.name for m in METHODS if ENDPOINTS_PAIR in m.roles) + ")."
EXAMPLES_ALL = """  kepp train all --dataset demo --out models --horizons 3 4 5 6
  kepp train all --dataset demo --out models --horizons 4 --only step plan-graph-R1
  kepp train all --dataset demo --out models --horizons 3 4 --print-commands > runs.txt   # a run list
  kepp train all --dataset demo --out models --horizons 3 4 --print-commands --stage 1 > stage1.txt

  --print-commands prints one self-contained 'kepp train ...' line per model instead of training:
  stage 1 (step models, planning models without the graph, the task classifier) in any order,
  then stage 2 (graph-conditioned planning models, which read their horizon's finished step
  model). Without --stage both stages are printed after '# stage N' comment lines, so the file
  also runs as a shell script; --stage N prints that stage's lines only, one run per line (for a
  job array: line $SLURM_ARRAY_TASK_ID). Each line carries --skip-finished: finished models are
  skipped and killed runs resume, so a list can be started again. Run the lines from the
  directory this command ran in (the paths are as given here)."""


def register(sub) -> None:
    """Add ``kepp train step|plan|task-classifier|endpoints|all``."""
    p = sub.add_parser("train", help="train step models, planning models and the task classifier")
    tsub = p.add_subparsers(dest="train_command", metavar="SUBCOMMAND", required=True)
    s = add_command(tsub, "step", "train the step model (observations → first and last step)", EXAMPLES_STEP, _step)
    _common(s)
    pl = add_command(tsub, "plan", "train a planning model (observations + condition → plan)", EXAMPLES_PLAN, _plan)
    _common(pl, kind="plan")
    pl.add_argument("--step-model", default=None, help="step model folder (needed for --condition graph)")
    from kepp_core.commands.llm_args import add_llm_args

    add_llm_args(pl)
    c = add_command(tsub, "task-classifier", "train PDPP's task classifier", EXAMPLES_CLS, _classifier)
    _common(c)
    e = add_command(tsub, "endpoints", "train the endpoint model (observations → task, first and last step; "
                    "cross-entropy)", EXAMPLES_ENDPOINTS, _endpoints)
    _common(e)
    a = add_command(tsub, "all", "train every model of the evaluation table for some horizons", EXAMPLES_ALL, _all)
    _common(a, out_help="models folder (ROOT/T<h>/<model>)")
    a.add_argument("--horizons", type=int, nargs="+", default=list(TABLE_HORIZONS))
    a.add_argument("--only", nargs="+", default=None, help="train only these models")
    add_print_args(a)


def add_print_args(p: argparse.ArgumentParser) -> None:
    """Add --print-commands and --stage (run lists for job arrays; kepp train all, kepp protocol)."""
    p.add_argument("--print-commands", action="store_true",
                   help="print the independent 'kepp train' command of every model instead of training "
                        "(stage 1, then stage 2: graph-conditioned planning models that need the step model)")
    p.add_argument("--stage", type=int, choices=[1, 2], default=None,
                   help="with --print-commands: only this stage's commands, one per line, no comments")


def _train_output(args):
    """What ``kepp train`` writes into ``--out``: models (the configs already there are rewritten); nothing
    with --print-commands."""
    from pathlib import Path

    from kepp_core.commands._outputs import FolderOutput, model_configs

    if getattr(args, "print_commands", False):
        return None
    return FolderOutput(folder=Path(args.out), files=model_configs(Path(args.out)))


def _common(p: argparse.ArgumentParser, out_help: str = "checkpoint folder", kind: str | None = None) -> None:
    add_dataset_args(p)
    p.add_argument("--out", required=True, help=out_help)
    writes(p, folders={"out": _train_output}, reads=(*DATASET_INPUTS, "step_model"), lock_folders=False)
    p.add_argument("--preset", default=None, help="training preset (default: the dataset's; see PRESETS)")
    add_option_flags(p, kind)
    p.add_argument("--resume", action="store_true", help="continue from the folder's last saved state")
    p.add_argument("--skip-finished", action="store_true",
                   help="do nothing when OUT holds a finished model; resume when it holds a killed run's state "
                        "(what kepp protocol does; run lists use it); a --step-model must be finished")
    p.add_argument("--train-fraction", type=float, default=None, metavar="F",
                   help="train on the nested fraction F of the training videos (as kepp protocol's train_fractions)")
    p.add_argument("--set", action="append", default=None, metavar="KEY=VALUE", dest="set_options",
                   help="any training option a model of this command reads, by its config name, VALUE in JSON "
                        "(e.g. mults=[1,2], val_fraction=0.2); repeatable")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--threads", type=int, default=None, help="CPU threads (default: $KEPP_THREADS or half the cores)")
    add_device_option(p)
    p.add_argument("--json", action="store_true", help="print the summary as JSON")


def add_option_flags(p: argparse.ArgumentParser, kind: str | None = None) -> None:
    """The training options' flags (:func:`kepp_core.models.options.train_flags`: each option's flag,
    help and choices are declared with the option), every value left out None (the preset's)."""
    from typing import Annotated, Literal, get_args, get_origin, get_type_hints

    from kepp_core.models.options import TrainConfig, default_of, train_flags

    hints = get_type_hints(TrainConfig, include_extras=True)
    for f in train_flags(kind):
        meta, default = f.metadata, default_of(f)
        names = meta["flag"].split()
        kw = {"dest": f.name, "default": None, "help": meta["help"] or None}
        base = get_args(hints[f.name])[0] if get_origin(hints[f.name]) is Annotated else hints[f.name]
        choices = meta["choices"] or (get_args(base) if get_origin(base) is Literal else None)
        if isinstance(default, bool):
            kw["action"] = "store_true"
        elif f.name == "decay":
            kw.update(nargs="*", metavar="STEP:FACTOR")
        elif choices:
            kw.update(type=type(default), choices=list(choices))
        else:
            kw.update(type=type(default), metavar=names[-1].lstrip("-").replace("-", "_").upper())
        p.add_argument(*names, **kw)


def config_from_args(args):
    """The training config: the preset (``--preset`` or the dataset's) with the options given on the command line."""
    from kepp_core.training import DATASET_PRESET, preset

    set_threads(args)
    name = args.preset or DATASET_PRESET.get(args.dataset, "crosstask")
    decay = None
    if getattr(args, "decay", None) is not None:
        try:
            decay = [(int(d.split(":")[0]), float(d.split(":")[1])) for d in args.decay]
        except (ValueError, IndexError):
            raise KeppError(f"--decay {' '.join(args.decay)}: expected STEP:FACTOR pairs like 10000:0.5") from None
    from kepp_core.models.options import train_flags

    given = {f.name: getattr(args, f.name, None) for f in train_flags("plan")}
    given["decay"] = decay
    extra = parse_set_options(getattr(args, "set_options", None) or [], _kinds(args))
    both = sorted(k for k in extra if given.get(k) is not None)
    if both:
        raise KeppError(f"--set {', '.join(both)}: given twice (by its own flag and by --set)")
    return preset(name, **{**given, **extra})


def _kinds(args) -> tuple[str, ...]:
    """The model kinds a ``kepp train`` command trains (``all``: those of its members)."""
    from kepp_core.catalog import parse_model_folder
    from kepp_core.training.suite import MEMBERS

    command = getattr(args, "train_command", None)
    if command == "all":
        return tuple(sorted({parse_model_folder(m).kind for m in (args.only or MEMBERS)}))
    return (command,) if command else ()


def parse_set_options(items: list[str], kinds: tuple[str, ...] = ()) -> dict:
    """``--set KEY=VALUE`` items as training options (VALUE in JSON, else a plain string; lists
    become the tuples the config holds); with ``kinds``, a KEY no model of those kinds reads is refused.

    >>> parse_set_options(["mults=[1, 2]", "val_sampler=ddpm", "decay=[[30, 0.5]]", "lr=1"])
    {'mults': (1, 2), 'val_sampler': 'ddpm', 'decay': [(30, 0.5)], 'lr': 1.0}
    >>> parse_set_options(["endpoint_arch=pair"], ("step",))
    Traceback (most recent call last):
    ...
    kepp_core.errors.KeppError: --set endpoint_arch=pair: no model this command trains (step) reads endpoint_arch (read by: endpoints)
    """
    from kepp_core.io import parse_json
    from kepp_core.models.options import TrainConfig, readers

    defaults = TrainConfig().to_dict()
    out = {}
    for item in items:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or key not in defaults:
            raise KeppError(f"--set {item!r}: expected KEY=VALUE with KEY one of {', '.join(sorted(defaults))}")
        if kinds and not set(readers(key)) & set(kinds):
            raise KeppError(f"--set {item}: no model this command trains ({', '.join(kinds)}) reads {key} "
                            f"(read by: {', '.join(readers(key))})")
        try:
            value = parse_json(raw, f"--set {key}", lines=False)
        except KeppError as e:
            if ": invalid JSON (" not in str(e):  # nesting, huge numbers, NaN: refused, not taken as text
                raise
            value = raw  # not JSON: a plain string (val_sampler=ddpm)
        out[key] = _typed_option(key, value, defaults[key])
    return out


def _typed_option(key: str, value, default):
    """``value`` in the type of the option's default (KeppError when it cannot be)."""
    def bad():
        return KeppError(f"--set {key}={value!r}: expected {type(default).__name__} like {default!r}")

    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise bad()
        return value
    if isinstance(default, (int, float)):
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        if not ok or (isinstance(default, int) and not isinstance(value, int)):
            raise bad()
        return type(default)(value)
    if isinstance(default, list):  # mults (ints) and decay ([step, factor] pairs)
        if not isinstance(value, list):
            raise bad()
        if key == "decay":
            if not all(isinstance(x, list) and len(x) == 2 and all(isinstance(y, (int, float))
                                                                   and not isinstance(y, bool) for y in x)
                       for x in value):
                raise bad()
            return [(int(a), float(f)) for a, f in value]
        if not all(isinstance(x, int) and not isinstance(x, bool) for x in value):
            raise bad()
        return tuple(value)
    if not isinstance(value, str):
        raise bad()
    return value


def _report(args, summary: dict) -> int:
    if args.json:
        emit_json(summary)
    else:
        best = summary.get("best") or {}
        extra = ", ".join(f"{k} {v:.2f}" for k, v in best.items() if isinstance(v, float) and k != "score")
        print(f"trained {summary['steps']} steps in {summary['seconds']:.1f}s on {summary['device']} "
              f"(world size {summary['world_size']}){'; ' + extra if extra else ''} → {args.out}")
    return 0


def _dataset(args):
    """The dataset the arguments name, restricted to ``--train-fraction`` of its training videos."""
    f = _fraction(args)
    ds = dataset_from_args(args)
    if f >= 1:
        return ds
    from kepp_core.experiments.protocol import fraction_subset

    return fraction_subset(ds, f)


def _fraction(args) -> float:
    """``--train-fraction`` (1 when not given), checked."""
    f = getattr(args, "train_fraction", None)
    if f is not None and not 0 < f <= 1:
        raise KeppError(f"--train-fraction {f}: expected a fraction in (0, 1]")
    return 1.0 if f is None else f


def _skip_or_resume(args, cfg) -> bool:
    """With ``--skip-finished``: True when OUT holds a model finished with the same options
    (nothing to do; other options are an error); sets ``args.resume`` when OUT holds a killed
    run's saved state."""
    if not getattr(args, "skip_finished", False):
        return False
    from pathlib import Path

    from kepp_core.experiments.protocol import finished
    from kepp_core.training.loop import STATE_JSON

    out = Path(args.out)
    if finished(out):
        differs = _trained_differently(out, cfg)
        if differs:
            raise KeppError(f"{out}: --skip-finished, but the finished model there was trained with {differs}; "
                            f"train into another --out, or delete it to retrain")
        print(f"already trained: {out} (--skip-finished)")
        return True
    step = getattr(args, "step_model", None)
    if step is not None and not finished(Path(step)):
        raise KeppError(f"{step}: the step model is not finished (train it first: stage 1 of the run list)")
    args.resume = args.resume or (out / STATE_JSON).is_file()
    return False


# Options that do not change the trained model (where training reads windows from, how often it logs).
_RUN_ONLY = {"windows", "log_every"}


def _trained_differently(out, cfg) -> str:
    """'KEY=stored (asked: VALUE)' for the options the finished model in ``out`` was trained with
    that differ from ``cfg`` (empty when it matches); only the options its kind reads count
    (:func:`kepp_core.models.options.read_by`: the cross-entropy models set their own schedule)."""
    from kepp_core.catalog import ENDPOINT_VARIANTS, KINDS
    from kepp_core.models.folders import read_config
    from kepp_core.models.options import TrainConfig, read_by

    stored = read_config(out)
    kind = stored.get("kind")
    read = set(read_by((kind,))) if kind in KINDS else set(cfg.to_dict())
    try:
        was = TrainConfig.from_dict(stored.get("train") or {}).to_dict()
    except (TypeError, ValueError):
        return "options this version cannot read"
    if kind == "endpoints" and "endpoint_arch" not in (stored.get("train") or {}):
        was.update(ENDPOINT_VARIANTS["pair"])  # trained before the options existed: the earlier (pair) model
    asked = cfg.to_dict()
    diff = [f"{k}={was[k]!r} (asked: {asked[k]!r})" for k in asked
            if k in read and k not in _RUN_ONLY and was.get(k) != asked[k]]
    return ", ".join(diff[:3]) + (f" and {len(diff) - 3} more" if len(diff) > 3 else "")


def _step(args) -> int:
    from kepp_core.training import train_step_model

    cfg = config_from_args(args)
    if _skip_or_resume(args, cfg):
        return 0
    return _report(args, train_step_model(_dataset(args), cfg, args.out, args.resume, not args.no_progress))


def _plan(args) -> int:
    from kepp_core.training import train_plan_model

    cfg = config_from_args(args)
    if _skip_or_resume(args, cfg):
        return 0
    ds = _dataset(args)
    llm = None
    if cfg.condition in LLM_CONDITIONS:
        from kepp_core.commands.llm_args import recommender_from_args

        llm = recommender_from_args(args, ds)
    summary = train_plan_model(ds, cfg, args.out, args.step_model, args.resume, not args.no_progress, llm=llm)
    if llm is not None and not args.json:
        print(llm_line(summary["llm"]))
    return _report(args, summary)


def llm_line(s: dict) -> str:
    """One line on where the LLM condition rows came from (plans, fallback and why)."""
    why = ", ".join(f"{k} ×{v}" for k, v in s.get("fallback_reasons", {}).items())
    line = (f"LLM rows: {s['llm']} of {s['episodes']} episodes from the LLM, {s['fallback']} from the "
            f"fallback {s['fallback_name']!r}{' (' + why + ')' if why else ''}; "
            f"{s['requests']} requests, {s['cache_hits']} cached replies")
    if s.get("server_given_up"):
        line += f"; server given up: {s['server_given_up']}"
    return line


def _classifier(args) -> int:
    from kepp_core.training import train_task_classifier

    cfg = config_from_args(args)
    if _skip_or_resume(args, cfg):
        return 0
    return _report(args, train_task_classifier(_dataset(args), cfg, args.out, args.resume, not args.no_progress))


def _endpoints(args) -> int:
    from kepp_core.models.folders import check_endpoint_folder
    from kepp_core.training import train_endpoint_model

    cfg = config_from_args(args)
    check_endpoint_folder(args.out, cfg.endpoint_arch)  # before the dataset loads
    if _skip_or_resume(args, cfg):
        return 0
    return _report(args, train_endpoint_model(_dataset(args), cfg, args.out, args.resume, not args.no_progress))


def _all(args) -> int:
    from kepp_core.training.suite import EXTRA_MEMBERS, MEMBERS, train_horizon

    if args.resume:
        raise KeppError("--resume applies to one model; rerun 'kepp train step|plan ... --resume'")
    if args.stage is not None and not args.print_commands:
        raise KeppError("--stage goes with --print-commands")
    cfg = config_from_args(args)
    members = args.only or MEMBERS
    bad = [m for m in members if m not in MEMBERS + EXTRA_MEMBERS]
    if bad:
        raise KeppError(f"unknown model(s) {bad} (expected some of {', '.join(MEMBERS + EXTRA_MEMBERS)})")
    if args.print_commands:
        print(all_commands(args, cfg, members), end="")
        return 0
    ds = _dataset(args)
    for h in args.horizons:
        train_horizon(ds, replace(cfg, horizon=h), args.out, members, not args.no_progress)
    return 0


def all_commands(args, cfg, members) -> str:
    """The run list of ``kepp train all``: one ``kepp train`` line per horizon and member."""
    from kepp_core.commands.runlist import data_args, format_commands, train_command
    from kepp_core.training import DATASET_PRESET

    name = args.preset or DATASET_PRESET.get(args.dataset, "crosstask")
    data = data_args(args.dataset, args.root, args.features, args.split_seed, args.coin_actions)
    roles = [r for r in SUITE_ROLES + EXTRA_ROLES if model_folder(r) in members]
    cmds = [train_command(r, replace(cfg, horizon=h), name, models_dir(args.out, h), data,
                          _fraction(args), args.threads, device=args.device)
            for h in args.horizons for r in roles]
    return format_commands(cmds, args.stage)
