"""Run lists (docs, At scale): ``kepp protocol SPEC --print-commands`` and ``kepp train all
--print-commands`` print one self-contained ``kepp train`` line per model; the lines parse back
to the very configs the protocol trains with, running them (in stage order, as separate
processes) and then the protocol gives the records of the protocol trained in one go, and bad
input is a one-line error."""

from __future__ import annotations

import contextlib
import io
import json
import shlex
from pathlib import Path

import pytest
import torch

from tests.helpers.training import TINY, kepp, spec_file, tiny_world

torch.set_num_threads(1)
METHODS = ["graph-gt", "kepp-nograph", "kepp-R1", "kepp-R1-struct+dec"]


def write_spec(path: Path, world: Path, out: Path, **keys) -> Path:
    """A tiny protocol spec: the demo format on ``world``, TINY training, T=3, 2 seeds unless ``keys`` say."""
    spec = {"dataset": "demo", "root": str(world), "horizons": [3], "methods": METHODS, "seeds": 2,
            "out": str(out), **keys}
    return spec_file(path, spec, TINY)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return tiny_world(tmp_path_factory.mktemp("runlist-world") / "world", seed=5)


def printed(*args) -> str:
    """What ``kepp ARGS`` prints (in this process: printing a run list trains nothing)."""
    from kepp_core.cli import main

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main([str(a) for a in args]) == 0
    return buf.getvalue()


def read(cfg, role) -> dict:
    """The options of ``cfg`` a model of ``role`` reads (a run list's line carries those: ``--set`` of an
    option its model does not read is refused)."""
    from kepp_core.models.options import read_by

    values = cfg.to_dict()
    return {k: values[k] for k in read_by((role.kind,))}


def command_lines(text: str) -> list[list[str]]:
    return [shlex.split(x) for x in text.splitlines() if x and not x.startswith("#")]


def test_protocol_lines_parse_back_to_the_configs_the_protocol_trains_with(world, tmp_path):
    from kepp_core.cli import build_parser
    from kepp_core.commands.train import config_from_args
    from kepp_core.catalog import parse_model_folder
    from kepp_core.experiments.protocol import load_protocol, members_for
    from kepp_core.training.suite import role_config

    spec_file = write_spec(tmp_path / "spec.toml", world, tmp_path / "run", horizons=[3, 4],
                           train_fractions=[0.5, 1.0], methods=METHODS + ["pdpp"], features=str(world / "features"))
    with spec_file.open("a") as f:  # options without a flag of their own travel as --set KEY=VALUE
        f.write("val_fraction = 0.2\nclassifier_epochs = 7\nweight_decay = 0.01\n")
    text = printed("protocol", spec_file, "--print-commands", "--threads", "1")
    spec = load_protocol(spec_file)
    lines = command_lines(text)
    members = members_for(spec.methods)
    assert len(lines) == 2 * 2 * 2 * len(members)  # fractions x seeds x horizons x models
    seen = set()
    for argv in lines:
        assert argv[:2] == ["kepp", "train"] and "--skip-finished" in argv
        args = build_parser().parse_args(argv[1:])
        out = Path(args.out)
        hdir, role = out.parent, parse_model_folder(out.name)
        frac, seed, h = int(hdir.parts[-3][4:]), int(hdir.parts[-2][4:]), int(hdir.parts[-1][1:])
        assert hdir == tmp_path / "run" / f"frac{frac}" / f"seed{seed}" / f"T{h}"
        assert read(config_from_args(args), role) == read(role_config(spec.config(h, seed), role), role)
        assert (args.train_fraction or 1.0) == frac / 100 and args.threads == 1
        assert (args.dataset, args.root, args.features) == ("demo", str(world), str(world / "features"))
        seen.add((frac, seed, h, out.name))
    assert len(seen) == len(lines) and {m for *_, m in seen} == set(members)
    # stage 1 first, and --stage N prints exactly that stage's lines, no comments
    s1 = printed("protocol", spec_file, "--print-commands", "--threads", "1", "--stage", "1")
    s2 = printed("protocol", spec_file, "--print-commands", "--threads", "1", "--stage", "2")
    assert command_lines(s1) + command_lines(s2) == lines and "#" not in s1 + s2
    assert all("--step-model" not in a for a in command_lines(s1))
    assert all("--step-model" in a for a in command_lines(s2)) and command_lines(s2)
    assert text.startswith("# stage 1 of 2")


def test_train_all_lines_parse_back_to_what_train_all_trains(tmp_path):
    from dataclasses import replace

    from kepp_core.cli import build_parser
    from kepp_core.commands.train import config_from_args
    from kepp_core.catalog import parse_model_folder
    from kepp_core.training.suite import MEMBERS, role_config

    base = ["train", "all", "--dataset", "coin", "--root", "data/coin with space/COIN.json", "--preset", "coin",
            "--out", tmp_path / "m", "--horizons", "3", "4", "--lr", "3e-5", "--set", "mults=[1,2]",
            "--decay", "--threads", "1"]
    text = printed(*base, "--print-commands")
    lines = command_lines(text)
    assert len(lines) == 2 * len(MEMBERS)
    whole = build_parser().parse_args([str(x) for x in base])
    cfg = config_from_args(whole)
    assert cfg.decay == [] and cfg.mults == (1, 2) and cfg.lr == 3e-5
    for argv in lines:
        args = build_parser().parse_args(argv[1:])
        assert args.root == "data/coin with space/COIN.json" and args.coin_actions == "steps"
        out = Path(args.out)
        h = int(out.parent.name[1:])
        expected = role_config(replace(cfg, horizon=h), parse_model_folder(out.name))
        assert read(config_from_args(args), parse_model_folder(out.name)) == read(expected, parse_model_folder(out.name))
    only = command_lines(printed(*base, "--print-commands", "--only", "step", "plan-graph-R2", "--stage", "2"))
    assert [Path(a[a.index("--out") + 1]).name for a in only] == ["plan-graph-R2", "plan-graph-R2"]


@pytest.mark.slow
@pytest.mark.cpu
def test_printed_commands_then_the_protocol_give_the_one_go_records(world, tmp_path):
    from kepp_core.experiments.protocol import load_protocol, run_protocol

    keys = dict(seeds=[1], train_fractions=[0.5], methods=["kepp-nograph", "kepp-R1"],
                pairs=[["kepp-R1", "kepp-nograph"]], features=str(world / "features"))
    one_go = write_spec(tmp_path / "a.toml", world, tmp_path / "a", **keys)
    spread = write_spec(tmp_path / "b.toml", world, tmp_path / "b", **keys)
    stage1 = command_lines(printed("protocol", spread, "--print-commands", "--stage", "1", "--threads", "1"))
    stage2 = command_lines(printed("protocol", spread, "--print-commands", "--stage", "2", "--threads", "1"))
    assert [Path(a[a.index("--out") + 1]).name for a in stage1 + stage2] == ["step", "plan-none", "plan-graph-R1"]
    from kepp_core.cli import main

    assert main(stage2[0][1:]) == 2  # stage 2 before its step model: a clear error, nothing trained
    assert not (Path(stage2[0][stage2[0].index("--out") + 1]) / "config.json").exists()
    for argv in stage1[::-1] + stage2:  # any order within a stage; each line its own process
        assert argv[0] == "kepp"
        r = kepp(*argv[1:])
        assert r.returncode == 0, r.stderr
    assert "already trained" in printed(*stage1[0][1:])  # a finished model is skipped
    gathered = kepp("protocol", spread, "--threads", "1")
    assert gathered.returncode == 0, gathered.stderr
    assert "trained 0 model(s)" in gathered.stdout
    result = run_protocol(load_protocol(one_go), log=lambda _: None)  # trained in one go
    assert sorted(result["timings"]) == ["frac50/seed1/T3"] and result["timings"]["frac50/seed1/T3"]["train_s"] > 0
    a = (tmp_path / "a" / "records.jsonl").read_text().splitlines()
    b = (tmp_path / "b" / "records.jsonl").read_text().splitlines()
    assert a == b and len(a) > 10
    ra, rb = (json.loads((tmp_path / d / "results.json").read_text()) for d in "ab")
    assert json.dumps([ra["summary"], ra["pairs"]]) == json.dumps([rb["summary"], rb["pairs"]])  # CI: NaN (1 seed)


@pytest.mark.parametrize("spec_text, message", [
    ("dataset = 'demo'\nout = 'x'\nhorizon = [3]\n", "unknown key(s) ['horizon']"),
    ("out = 'x'\nmethods = ['kepp-R9000']\n", "kepp-R9000"),
    ("out = 'x'\n[train]\nlearning_rate = 1\n", "learning_rate"),
    ("out = [\n", "not valid TOML"),
])
def test_a_bad_spec_is_one_line_without_traceback(tmp_path, capsys, spec_text, message):
    from kepp_core.cli import main

    spec = tmp_path / "bad.toml"
    spec.write_text(spec_text)
    assert main(["protocol", str(spec), "--print-commands"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("kepp: error:") and message in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("argv, message", [
    (["protocol", "{spec}", "--stage", "1"], "--stage goes with --print-commands"),
    (["train", "all", "--out", "m", "--print-commands", "--only", "plan-graph-R7"], "unknown model(s)"),
    (["train", "all", "--out", "m", "--print-commands", "--set", "learning_rate=1"], "expected KEY=VALUE"),
    (["train", "all", "--out", "m", "--print-commands", "--set", "mults=[1, \"x\"]"], "--set mults"),
    (["train", "all", "--out", "m", "--print-commands", "--set", "lr=0.1", "--lr", "0.2"], "given twice"),
    (["train", "all", "--out", "m", "--print-commands", "--train-fraction", "1.5"], "--train-fraction 1.5"),
])
def test_bad_run_list_options_are_one_line(tmp_path, capsys, argv, message):
    from kepp_core.cli import main

    spec = write_spec(tmp_path / "ok.toml", tmp_path, tmp_path / "run")
    assert main([a.replace("{spec}", str(spec)) for a in argv] + ["--threads", "1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("kepp: error:") and message in err and len(err.strip().splitlines()) == 1
