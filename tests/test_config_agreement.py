"""Configs that agree, each case through the real command line: an endpoint
checkpoint's architecture, folder name and training options are one or the checkpoint is refused; a
folder name that says no model (``endpoints-clips``) is refused before training starts; a protocol
spec's ``[train]`` table never overrides the spec's own horizon, seed or setting; ``--set`` keys that no
model of the command reads are refused; every numeric training option has a range; a stored decoding
choice (a cache) with bad values is made again, never trusted."""

from __future__ import annotations

import json
import shutil
import typing

import pytest

from tests.helpers.cli import assert_one_line_error, run_kepp


def _endpoints_copy(models, folder: str, **train):
    """The shipped T=3 endpoint model (per-clip) copied to ``models/T3/<folder>``, its training options
    changed by ``train``."""
    target = models / "T3" / folder
    if target != models / "T3" / "endpoints":
        shutil.copytree(models / "T3" / "endpoints", target)
    cfg = json.loads((target / "config.json").read_text())
    assert cfg["model"]["arch"] == "clips" and cfg["train"]["endpoint_arch"] == "clips"
    cfg["train"].update(train)
    (target / "config.json").write_text(json.dumps(cfg))
    return target


@pytest.mark.slow
def test_an_endpoints_pair_folder_holding_a_per_clip_model_is_refused(demo_t3):
    _, root, models = demo_t3
    target = _endpoints_copy(models, "endpoints-pair")
    r = run_kepp("eval", "--dataset", "demo", "--root", root, "--models", models, "-T", "3", "--methods",
                 "graph-ce-pair")
    assert_one_line_error(r, str(target / "config.json"), "endpoints-pair holds the 'pair' endpoint model",
                          "architecture is 'clips'")
    shutil.rmtree(target)


def test_an_endpoint_checkpoint_whose_architecture_and_training_options_differ_is_refused(demo_t3, tmp_path):
    _, root, models = demo_t3
    copy = tmp_path / "models"
    shutil.copytree(models, copy)
    target = _endpoints_copy(copy, "endpoints", endpoint_arch="pair")
    r = run_kepp("eval", "--dataset", "demo", "--root", root, "--models", copy, "-T", "3", "--methods", "graph-ce")
    assert_one_line_error(r, str(target / "config.json"), "architecture is 'clips'", "endpoint_arch='pair'")


@pytest.mark.parametrize("folder, words", [
    ("endpoints-pair", ["the folder of the 'pair' endpoint model", "endpoint_arch='clips'"]),
    ("endpoints-clips", ["'endpoints-clips' is not a model folder name"]),  # the default architecture is no variant
])
@pytest.mark.slow
def test_training_into_a_folder_whose_name_says_another_model_is_refused_at_the_start(tmp_path, folder, words):
    out = tmp_path / "models" / "T3" / folder
    r = run_kepp("train", "endpoints", "--dataset", "demo", "-T", "3", "--out", out, "--no-progress")
    assert_one_line_error(r, str(out), *words)
    assert not (tmp_path / "models").exists()  # nothing written: refused before the dataset loads


def test_endpoints_clips_is_no_model_a_run_list_or_the_suite_trains():
    r = run_kepp("train", "all", "--dataset", "demo", "--out", "m", "--only", "endpoints-clips", "--print-commands")
    assert_one_line_error(r, "'endpoints-clips' is not a model folder name", "endpoints-pair")


@pytest.mark.slow
@pytest.mark.parametrize("key, value", [("horizon", "4"), ("seed", "3"), ("setting", '"pdpp"')])
def test_a_protocol_train_table_cannot_override_the_specs_own_horizon_seed_or_setting(tmp_path, key, value):
    spec = tmp_path / "spec.toml"
    spec.write_text(f'out = "{tmp_path / "out"}"\nmethods = ["random"]\nhorizons = [3]\n[train]\n{key} = {value}\n')
    r = run_kepp("protocol", spec, "--seeds", "1")
    assert_one_line_error(r, str(spec), f"[train] {key}: set by the spec itself")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("command, item, kinds", [
    (["step"], "endpoint_arch=\"pair\"", "(step)"),
    (["endpoints"], "R=2", "(endpoints)"),
    (["task-classifier"], "structured_weight=0.5", "(task-classifier)"),
    (["all", "--only", "step", "plan-none", "--print-commands"], "endpoint_smoothing=0.2", "(plan, step)"),
])
@pytest.mark.slow
def test_set_keys_that_no_model_of_the_command_reads_are_refused(tmp_path, command, item, kinds):
    r = run_kepp("train", *command, "--dataset", "demo", "-T", "3", "--out", tmp_path / "m", "--set", item)
    assert_one_line_error(r, f"--set {item}", f"no model this command trains {kinds} reads {item.split('=')[0]}")
    assert not (tmp_path / "m").exists()


@pytest.mark.parametrize("flag, value, words", [
    ("--warmup", "-5", "training option warmup=-5 must not be negative"),
    ("--set", "classifier_epochs=-1", "training option classifier_epochs=-1 must be at least 1"),
    ("--set", "endpoint_epochs=-2", "training option endpoint_epochs=-2 must not be negative"),
    ("--set", "weight_decay=-0.5", "training option weight_decay=-0.5 must be a finite number >= 0"),
    ("--set", "m=0", "training option m=0 must be at least 1"),
])
@pytest.mark.slow
def test_negative_warm_up_or_epochs_are_refused(tmp_path, flag, value, words):
    r = run_kepp("train", "all", "--dataset", "demo", "--out", tmp_path / "m", "--print-commands", flag, value)
    assert_one_line_error(r, words)


def test_every_numeric_training_option_has_a_range(capsys):
    """Each whole-number or real training option refuses a value below its range (in process: the
    same parser and error as the command line, one run per option)."""
    from kepp_core.cli import main
    from kepp_core.models.options import TrainConfig

    hints = typing.get_type_hints(TrainConfig, include_extras=True)
    numeric = [name for name, tp in hints.items() if typing.get_origin(tp) is typing.Annotated
               and typing.get_args(tp)[0] in (int, float)]
    assert len(numeric) == 22
    for name in numeric:
        low = next(m for m in typing.get_args(hints[name])[1:]).ge
        low = next(m for m in typing.get_args(hints[name])[1:]).gt if low is None else low
        value = (low - 1) if typing.get_args(hints[name])[0] is int else -1.0
        code = main(["train", "all", "--dataset", "demo", "--out", "m", "--print-commands", "--set",
                     f"{name}={json.dumps(value)}"])
        assert code == 2
        err = capsys.readouterr().err
        assert f"training option {name}=" in err and err.count("kepp: error:") == 1, (name, err)


@pytest.mark.slow
def test_a_stored_decoding_choice_with_bad_values_is_made_again_not_trusted(demo_t3, tmp_path):
    _, root, models = demo_t3
    copy = tmp_path / "models"
    shutil.copytree(models, copy)
    path = copy / "T3" / "decoding.json"
    stored = json.loads(path.read_text())
    stored["kepp-R1"]["choice"]["lam"] = "x"  # text where a weight goes
    stored["kepp-R1"]["val_SR"] = "high"  # text where a percentage goes
    path.write_text(json.dumps(stored))
    home = tmp_path / "home"
    r = run_kepp("eval", "--dataset", "demo", "--root", root, "--models", copy, "-T", "3", "--methods", "kepp-R1+dec",
                 "--out", tmp_path / "rows.json", env={"KEPP_HOME": str(home), "KEPP_THREADS": "1"})
    assert r.returncode == 0, r.stderr[-2000:]
    made = [json.loads(p.read_text()) for p in (home / "decoding").glob("*.json")]
    assert len(made) == 1 and made[0]["kepp-R1"]["choice"]["lam"] >= 0  # made again, in the cache home
    assert json.loads(path.read_text())["kepp-R1"]["choice"]["lam"] == "x"  # the models folder is never rewritten
