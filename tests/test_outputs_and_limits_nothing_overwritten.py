"""Nothing overwritten unasked: a command that writes a file refuses, in one line naming the file and
``--force``, an output that is one of its inputs, another kind of file, or records that are not this
run's; ``--append`` keeps the records there and adds this run's; a kill leaves the old file whole."""

from __future__ import annotations

import hashlib

import pytest

from kepp_core import api
from tests.helpers.cli import assert_one_line_error, run_kepp
from tests.helpers.split_lists import lists_with_predictions


@pytest.fixture()
def lists(tmp_path):
    return lists_with_predictions(tmp_path)


def _digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _refused_unchanged(path, command, *words, named=None) -> None:
    """``command()`` is refused in one line naming ``path`` (or ``named``) and ``words``, and ``path`` is as it was."""
    before = _digest(path)
    assert_one_line_error(command(), str(named or path), *words)
    assert _digest(path) == before


def _import(p, out, *extra, seed=7, env=None):
    return run_kepp("records", "import", "--format", "vpn", "--predictions", p["vpn"], "--split", p["test"],
                    "--method", "vpn-run", "--seed", seed, "--out", out, *extra, env=env)


def _imported_in(p, folder, name):
    """``folder/name`` (``folder`` made): the records of an imported run (seed 7)."""
    folder.mkdir()
    records = folder / name
    assert _import(p, records).returncode == 0
    return records


@pytest.mark.slow
@pytest.mark.parametrize("given", ["vpn", "test", "taxonomy"])
def test_records_import_out_naming_one_of_its_inputs_is_refused_with_the_file_unchanged(lists, given):
    _refused_unchanged(lists[given], lambda: _import(lists, lists[given], "--taxonomy", lists["taxonomy"]),
                       "is this command's input", "--force")


@pytest.mark.slow
def test_an_output_of_another_kind_is_refused_and_force_replaces_it(lists, tmp_path):
    other = tmp_path / "notes.jsonl"
    other.write_text('{"episode": 1}\n')  # JSON lines, but no records
    r = _import(lists, other)
    assert_one_line_error(r, str(other), "is not prediction records", "--force")
    assert other.read_text() == '{"episode": 1}\n'
    r = _import(lists, other, "--force")
    assert r.returncode == 0, r.stderr
    assert set(api.read_predictions([other])["method"]) == {"vpn-run"}


@pytest.mark.slow
def test_another_runs_records_are_refused_and_append_keeps_both(lists, tmp_path):
    out = tmp_path / "vpn-records.jsonl"
    assert _import(lists, out).returncode == 0
    assert _import(lists, out).returncode == 0  # the same import again replaces its own records
    _refused_unchanged(out, lambda: _import(lists, out, seed=8), "vpn-run seed 7 imported from T3_predictions.json",
                       "--append", "--force")
    r = _import(lists, out, "--append", seed=8)
    assert r.returncode == 0, r.stderr
    preds = api.read_predictions([out])
    assert sorted(preds.groupby("seed").size().items()) == [(7, 6), (8, 6)]
    # the same run's episodes twice: refused before any work
    _refused_unchanged(out, lambda: _import(lists, out, "--append", seed=8),
                       "already holds records of vpn-run seed 8 imported from T3_predictions.json", "--force")
    renamed = dict(lists, vpn=tmp_path / "T3_predictions-copy.json")  # the same run's plans from another file
    renamed["vpn"].write_bytes(lists["vpn"].read_bytes())
    _refused_unchanged(out, lambda: _import(renamed, out, "--append", seed=8),
                       "already holds vpn-run seed 8 on episode", "--force")


@pytest.mark.slow
def test_a_kill_before_the_rename_leaves_the_appended_file_whole(lists, tmp_path):
    out = tmp_path / "vpn-records.jsonl"
    assert _import(lists, out).returncode == 0
    before = _digest(out)
    r = _import(lists, out, "--append", seed=8, env={"KEPP_FAULT_AT": f"before-rename:{out.name}"})
    assert r.returncode == 137
    assert _digest(out) == before


@pytest.mark.slow
def test_eval_records_over_an_imported_methods_records_refuses_and_append_keeps_both(lists, tmp_path):
    imported = tmp_path / "vpn-records.jsonl"
    assert _import(lists, imported).returncode == 0
    (tmp_path / "models").mkdir()
    run = ("eval", "--dataset", "split-lists", "--root", lists["root"], "--models", tmp_path / "models", "-T", "3",
           "--methods", "random", "graph-gt")
    _refused_unchanged(imported, lambda: run_kepp(*run, "--records", imported),
                       "vpn-run seed 7 imported from T3_predictions.json", "--append")
    # a list the --root split file names is an input, as the split file itself is
    _refused_unchanged(lists["test"], lambda: run_kepp(*run, "--records", lists["test"]),
                       f"is this command's input (--root {lists['root']}, which names it)", "--force")
    _refused_unchanged(lists["root"], lambda: run_kepp(*run, "--out", lists["root"]),
                       "is this command's input (--root", "--force")
    r = run_kepp(*run, "--records", imported, "--append")
    assert r.returncode == 0, r.stderr
    assert set(api.read_predictions([imported])["method"]) == {"vpn-run", "random", "graph-gt"}
    r = run_kepp(*run, "--records", imported, "--append", "--seed", "3")
    assert r.returncode == 0, r.stderr
    r = run_kepp(*run, "--records", tmp_path / "kepp.jsonl")
    assert r.returncode == 0, r.stderr
    r = run_kepp(*run, "--records", tmp_path / "kepp.jsonl", "--seed", "3")  # another run's records
    assert_one_line_error(r, "kepp.jsonl", "random seed 0", "--append")


@pytest.mark.slow
def test_compare_episodes_naming_the_compared_records_is_refused(lists, tmp_path):
    folder = tmp_path / "recs"
    records = _imported_in(lists, folder, "vpn-records.jsonl")
    assert _import(lists, records, "--append", seed=8).returncode == 0
    for given in (records, folder):  # the file itself, or the folder it is read from
        _refused_unchanged(records, lambda: run_kepp("eval", "compare", given, "--a", "vpn-run", "--b", "vpn-run",
                                                     "--episodes", records),
                           "is this command's input (--records", "--force")


@pytest.mark.slow
def test_graph_build_over_records_is_refused(lists, tmp_path):
    records = tmp_path / "vpn-records.jsonl"
    assert _import(lists, records).returncode == 0
    _refused_unchanged(records, lambda: run_kepp("graph", "build", "--dataset", "split-lists", "--root", lists["root"],
                                                 "--out", records), "is not a procedure graph", "--force")


# --- folder outputs: the same guard, each file the command would write there --------------------------------------
def _lists(p, out, *extra):
    return run_kepp("data", "lists", "--dataset", "split-lists", "--root", p["root"], "-T", "3", "--out", out, *extra)


@pytest.mark.slow
def test_data_lists_into_the_folder_of_its_own_lists_or_over_records_is_refused_and_reruns_replace_its_own(lists,
                                                                                                           tmp_path):
    # the lists the --root split file names would be replaced by what is made of them
    _refused_unchanged(lists["train"], lambda: _lists(lists, lists["root"].parent),
                       f"is this command's input (--root {lists['root']}, which names it)", "--force")
    out = tmp_path / "out"
    out.mkdir()
    records = out / "train_3.json"
    assert _import(lists, records).returncode == 0  # records where a list would go
    _refused_unchanged(records, lambda: _lists(lists, out), "exists and is not a split list", "--force")
    assert _lists(lists, out, "--force").returncode == 0
    written = {f: _digest(out / f) for f in ("train_3.json", "test_3.json", "taxonomy.json")}
    r = _lists(lists, out)  # the same command again: its own lists, replaced
    assert r.returncode == 0, r.stderr
    assert {f: _digest(out / f) for f in written} == written


def _spec(tmp_path, p, out, name="spec.toml"):
    spec = tmp_path / name
    spec.write_text(f'dataset = "split-lists"\nroot = "{p["root"]}"\nhorizons = [3]\nmethods = ["random"]\n'
                    f'seeds = 1\nout = "{out}"\n')
    return spec


@pytest.mark.slow
def test_protocol_out_over_imported_records_or_its_own_lists_is_refused(lists, tmp_path):
    out = tmp_path / "runs"
    imported = _imported_in(lists, out, "records.jsonl")
    spec = _spec(tmp_path, lists, out)
    _refused_unchanged(imported, lambda: run_kepp("protocol", spec),
                       "holds records of vpn-run seed 7 imported from T3_predictions.json", "--force")
    _refused_unchanged(imported, lambda: run_kepp("protocol", spec, "--out", out), "--force")
    # the spec's feature folder (named by the split file its root names) as the output folder
    feats = lists["features"]
    assert_one_line_error(run_kepp("protocol", spec, "--out", feats), str(feats), "is this command's input",
                          f"{spec}'s root {lists['root']}, which names it", "--force")
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "results.json").write_text('{"notes": 1}\n')
    _refused_unchanged(tmp_path / "results" / "results.json",
                       lambda: run_kepp("protocol", spec, "--out", tmp_path / "results"), "is not a protocol's",
                       "--force")


@pytest.mark.slow
def test_train_into_its_step_model_and_models_import_over_its_checkpoint_are_refused(lists, tmp_path):
    step = tmp_path / "step"
    step.mkdir()
    (step / "config.json").write_text('{"format": "kepp-checkpoint", "kind": "step"}\n')
    _refused_unchanged(step / "config.json", lambda: run_kepp(
        "train", "plan", "--dataset", "split-lists", "--root", lists["root"], "--out", step, "--step-model", step),
        "is this command's input (--step-model", "--force", named=step)
    plan = tmp_path / "plan.pth.tar"
    plan.write_bytes(b"not a checkpoint")
    _refused_unchanged(plan, lambda: run_kepp("models", "import", "--plan", plan, "--step", plan, "-T", "3",
                                              "--out", plan), "is this command's input (--plan", "--force")
    models = tmp_path / "models"
    (models / "T3" / "step").mkdir(parents=True)
    records = models / "T3" / "step" / "config.json"
    assert _import(lists, records, "--force").returncode == 0
    _refused_unchanged(records, lambda: run_kepp("models", "import", "--plan", plan, "--step", plan, "-T", "3",
                                                 "--out", models), "is not a model's config", "--force")
