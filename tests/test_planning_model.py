"""The planning model a user gets is one decision (``kepp_core/evaluation/planning_model.py``): chosen on
the models folder's validation episodes and stored beside the models (``kepp plan --choose-planning-model``,
``ROOT/T<h>/planner.json``), asked by ``kepp plan`` and the Plan page, and said beside the plan; a folder
without a stored choice keeps the documented default (KEPP R=1), so the shipped demo models plan as before."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.helpers.app_session import no_problems, open_page
from tests.helpers.cli import assert_one_line_error, run_kepp

ASSETS = Path(__file__).resolve().parent.parent / "assets" / "demo"


@pytest.fixture(scope="module")
def demo_world():
    from kepp_core.data.synth import ensure_world

    if not (ASSETS / "T3" / "decoding.json").is_file():
        pytest.skip("no shipped demo checkpoints in assets/demo")
    return ensure_world(progress=False)


@pytest.fixture()
def models(tmp_path) -> Path:
    """A copy of the shipped demo models of T=3 (with their stored decoding choices, no planning-model choice)."""
    shutil.copytree(ASSETS / "T3", tmp_path / "models" / "T3")
    return tmp_path / "models"


def _features(root: Path) -> Path:
    return sorted((Path(root) / "features").glob("*.npy"))[0]


def _best_by_validation(hdir: Path) -> str:
    """The planning model with the highest validation SR among the decoding choices the folder stores
    (each planning model scored by its best live row: +dec, or +jdec with the endpoint model), computed
    here from decoding.json and the catalogue, not by the module under test."""
    from kepp_core.catalog import method, planner_method, plan_model_id, parse_model_folder
    from kepp_core.evaluation.methods.choice import choice_key, planner_rows

    stored = json.loads((hdir / "decoding.json").read_text())
    best = {}
    for folder in sorted(hdir.glob("plan-*")):
        base = planner_method(parse_model_folder(folder.name))
        if base is None:
            continue
        best[plan_model_id(parse_model_folder(folder.name))] = max(
            stored[choice_key(method(e.name))]["val_SR"] for e in planner_rows(base))
    return max(best, key=best.get)


def test_a_folder_without_a_stored_choice_plans_with_the_documented_default(models):
    from kepp_core.catalog.roles import DEFAULT_PLANNING_MODEL
    from kepp_core.evaluation.planning_model import stored_planning_model

    choice = stored_planning_model(models / "T3")
    assert choice.role == DEFAULT_PLANNING_MODEL and choice.id == "graph-R1" and not choice.chosen
    assert stored_planning_model(ASSETS / "T3").id == "graph-R1"  # the shipped demo models store none
    assert "the default" in choice.describe()


@pytest.mark.slow
def test_a_stored_planning_model_choice_is_what_kepp_plan_uses_and_says(demo_world, models, tmp_path):
    env = {"KEPP_HOME": str(tmp_path / "home"), "KEPP_THREADS": "1"}
    clips = ("--start", 0, 4, "--goal", 20, 24, "-T", 3, "--models", models, "--root", demo_world)
    before = run_kepp("plan", _features(demo_world), *clips, "--json", env=env)
    assert before.returncode == 0, before.stderr
    assert json.loads(before.stdout)["planning_model"] == "graph-R1"
    assert "planning_model_choice" not in json.loads(before.stdout)  # nothing stored: nothing new said

    r = run_kepp("plan", _features(demo_world), *clips, "--choose-planning-model", "--json", env=env)
    assert r.returncode == 0, r.stderr
    stored = json.loads((models / "T3" / "planner.json").read_text())
    expected = _best_by_validation(models / "T3")
    assert expected != "graph-R1"  # the demo's validation episodes prefer another planner: the test can fail
    assert stored["planning_model"] == expected and stored["val_episodes"] > 0
    out = json.loads(r.stdout)
    assert out["planning_model"] == expected
    assert out["planning_model_choice"]["text"] == (
        f"planning model: {expected} (chosen on {stored['val_episodes']} validation episodes: "
        f"{stored['method']}, validation SR {stored['val_SR']:.1f}%)")

    again = run_kepp("plan", _features(demo_world), *clips, env=env)  # later plans ask the stored choice
    assert again.returncode == 0, again.stderr
    assert out["planning_model_choice"]["text"] in again.stdout.splitlines()
    named = run_kepp("plan", _features(demo_world), *clips, "--planning-model", "graph-R1", "--json", env=env)
    assert json.loads(named.stdout)["planning_model"] == "graph-R1"  # a named model still wins


def test_a_choice_made_for_other_models_is_not_used_and_says_why(models):
    from kepp_core.evaluation.planning_model import PLANNER_FORMAT, stored_planning_model
    from kepp_core.models.folders import model_stamps
    from kepp_core.catalog import parse_model_folder

    hdir = models / "T3"
    stamps = model_stamps(hdir, [parse_model_folder(n) for n in ("step", "plan-graph-R2")])
    entry = {"format": PLANNER_FORMAT, "planning_model": "graph-R2", "method": "kepp-R2+dec", "val_SR": 70.0,
             "val_episodes": 12, "candidates": [{"planning_model": "graph-R2", "method": "kepp-R2+dec", "val_SR": 70.0}],
             "models": stamps}
    (hdir / "planner.json").write_text(json.dumps(entry))
    assert stored_planning_model(hdir).id == "graph-R2" and stored_planning_model(hdir).chosen
    (hdir / "planner.json").write_text(json.dumps({**entry, "models": {**stamps, "step": [1, None]}}))
    stale = stored_planning_model(hdir)
    assert stale.id == "graph-R1" and not stale.chosen and "chosen for other models" in stale.describe()


def test_a_planner_file_that_is_not_a_choice_is_refused_in_one_line(demo_world, models, tmp_path):
    (models / "T3" / "planner.json").write_text(json.dumps({"format": 1, "planning_model": "graph-R2",
                                                            "val_SR": "high"}))
    r = run_kepp("plan", _features(demo_world), "--start", 0, 4, "--goal", 20, 24, "-T", 3, "--models", models,
                 env={"KEPP_HOME": str(tmp_path / "home"), "KEPP_THREADS": "1"})
    assert_one_line_error(r, "planner.json")


@pytest.mark.slow
def test_the_plan_page_offers_the_stored_planning_model_first_and_says_it_beside_the_plan(
        monkeypatch, demo_env, demo_world, models, tmp_path):
    from components.ui.text import md
    from kepp_core import api
    from kepp_core.evaluation.planning_model import choose_planning_model

    choice = choose_planning_model(models / "T3", lambda: None)  # the shipped decoding choices decide
    labels = {role: label for label, role in api.Workspace(api.AppConfig(checkpoints=str(models))).plan_variants(3).items()}
    query = {"T": "3", "video": sorted(p.stem for p in (demo_world / "features").glob("*.npy"))[0].split("_")[1],
             "plan": "1"}
    at = no_problems(open_page(monkeypatch, demo_env, "views/1_Plan.py", query, KEPP_APP_CHECKPOINTS=str(models),
                               KEPP_HOME=str(tmp_path / "home")))
    assert at.selectbox(key="plan_variant").value == labels[choice.role]
    assert md(choice.describe()) in [c.value for c in at.caption]
