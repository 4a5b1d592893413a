"""Run lists: the independent ``kepp train ...`` command lines behind ``kepp train all`` and
``kepp protocol`` (``--print-commands``), so a job-array scheduler or a shell loop spreads the
training runs over machines that share the working folder.

Each line trains one model with every training option spelled out (the preset's name, each
option that has a flag, and ``--set KEY=VALUE`` for the few that have none but differ from the
preset), so it gives the model that ``kepp train all`` or ``kepp protocol`` would train in its
place. Lines carry ``--skip-finished``: a finished model is left alone and a killed run resumes
from its saved state, so a whole list can be started again after a failure.

Two stages: stage 1 holds the models that need no other model (step models, planning models
without the graph condition, PDPP's task classifier); stage 2 the graph-conditioned planning
models, which read their horizon's finished step model. Lines of one stage run in any order.

>>> from kepp_core.training.config import preset
>>> from kepp_core.catalog import ModelRole
>>> r = train_command(ModelRole("plan", "graph", 2), preset("demo", horizon=4), "demo", "m/T4",
...                   ["--dataset", "demo"])
>>> r.stage, r.argv[:3], r.argv[r.argv.index("--R") + 1], r.argv[r.argv.index("--step-model") + 1]
(2, ['kepp', 'train', 'plan'], '2', 'm/T4/step')
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from kepp_core.errors import KeppError
from kepp_core.catalog import ModelRole, model_folder
from kepp_core.models.options import TrainConfig, read_by, train_flags
from kepp_core.training.config import preset
from kepp_core.training.suite import needs_step_model, role_config

STAGES = {1: "models that need no other model (step models, planning models without the graph condition, "
             "the task classifier, the endpoint model)",
          2: "graph-conditioned planning models: they read their horizon's step model from stage 1"}
SUBCOMMAND = {"step": "step", "plan": "plan", "task-classifier": "task-classifier", "endpoints": "endpoints"}


@dataclass(frozen=True)
class RunCommand:
    """One training run: its stage and its command line (``argv``, unquoted)."""

    stage: int
    argv: list[str]
    out: str

    @property
    def line(self) -> str:
        """The command as one shell line (each argument quoted where needed)."""
        return shlex.join(self.argv)


def _value(v) -> str:
    """An option value as the command line writes it (floats exactly: ``repr`` round-trips)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    return repr(v) if isinstance(v, float) else str(v)


def option_args(cfg: TrainConfig, preset_name: str, kind: str) -> list[str]:
    """Every option of ``cfg`` a model of ``kind`` reads as ``kepp train`` arguments: each flag its
    sub-command has (:func:`kepp_core.models.options.train_flags`), and ``--set KEY=VALUE`` (JSON value)
    for any other option it reads that differs from the preset ``preset_name``."""
    base = preset(preset_name).to_dict()
    values = cfg.to_dict()
    args: list[str] = []
    flagged = set()
    for f in train_flags(kind):
        flag, value = f.metadata["flag"].split()[0], values[f.name]
        flagged.add(f.name)
        if f.name == "decay":
            args += [flag, *(f"{at}:{_value(float(x))}" for at, x in cfg.decay)]
        elif isinstance(value, bool):
            args += [flag] if value else []
        else:
            args += [flag, _value(value)]
    for name in read_by((kind,)):
        if name not in flagged and values[name] != base[name]:
            args += ["--set", f"{name}={json.dumps(values[name])}"]
    return args


def train_command(role: ModelRole, cfg: TrainConfig, preset_name: str, hdir: str | Path, data: Sequence[str],
                  fraction: float = 1.0, threads: int | None = None, program: str = "kepp", *,
                  device: str | None = None) -> RunCommand:
    """The ``kepp train`` command that trains the model of ``role`` into ``HDIR/<its folder>``
    as :func:`kepp_core.training.suite.train_role` would (``data``: the dataset arguments; ``threads``
    and ``device``: the run's, where given)."""
    if role.kind not in SUBCOMMAND:
        raise KeppError(f"unknown model kind {role.kind!r}")
    hdir = Path(hdir)
    out = str(hdir / model_folder(role))
    argv = [program, "train", SUBCOMMAND[role.kind], *data, "--preset", preset_name]
    argv += option_args(role_config(cfg, role), preset_name, role.kind)
    if needs_step_model(role):
        argv += ["--step-model", str(hdir / model_folder(ModelRole("step")))]
    if fraction < 1:
        argv += ["--train-fraction", _value(float(fraction))]
    if threads is not None:
        argv += ["--threads", str(threads)]
    if device is not None:
        argv += ["--device", device]
    argv += ["--out", out, "--skip-finished", "--no-progress"]
    return RunCommand(2 if needs_step_model(role) else 1, argv, out)


def data_args(dataset: str, root: str | None = None, features: str | None = None, split_seed: int = 0,
              coin_actions: str = "steps", lists=None) -> list[str]:
    """The dataset arguments of a ``kepp train`` command (``--coin-actions`` for COIN only; ``lists``:
    the split lists of a ``split-lists`` dataset, :class:`~kepp_core.data.split_lists.SplitFiles`)."""
    args = ["--dataset", dataset]
    if root is not None:
        args += ["--root", str(root)]
    if features is not None:
        args += ["--features", str(features)]
    if lists is not None:
        args += ["--train-list", str(lists.train), "--test-list", str(lists.test)]
        args += ["--taxonomy", str(lists.taxonomy)] if lists.taxonomy is not None else []
    args += ["--split-seed", str(split_seed)]
    if dataset == "coin":
        args += ["--coin-actions", coin_actions]
    return args


def format_commands(commands: Iterable[RunCommand], stage: int | None = None) -> str:
    """The run list as text: with ``stage``, that stage's lines only (one command per line, for
    ``sed -n Np``); else every stage after a ``# stage N`` comment line (runs as a shell script)."""
    commands = list(commands)
    if stage is not None:
        if stage not in STAGES:
            raise KeppError(f"--stage {stage}: expected one of {', '.join(map(str, STAGES))}")
        return "".join(c.line + "\n" for c in commands if c.stage == stage)
    lines = []
    for s, what in STAGES.items():
        mine = [c.line for c in commands if c.stage == s]
        if mine:
            lines.append(f"# stage {s} of {len(STAGES)}: {len(mine)} run(s), {what}"
                         + ("; start after every stage-1 run has finished" if s > 1 else "; any order"))
            lines += mine
    return "".join(x + "\n" for x in lines)


__all__ = ["STAGES", "RunCommand", "data_args", "format_commands", "option_args",
           "train_command"]
