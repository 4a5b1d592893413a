"""Fixtures shared by the app tests (AppTest pages and the browser end-to-end test).

The app runs on a small synthetic world (the ``synth_world`` fixture of conftest.py) with
models that ``kepp train`` makes for it in a few seconds (tiny networks, few steps: the
pages are under test, not the models) and the prediction records ``kepp eval`` writes.
``tests/conftest.py`` makes the fixtures available to every test module.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from kepp_core.paths import REPO_ROOT

REPO = REPO_ROOT
APP = REPO / "app" / "Home.py"
HORIZON = 3
MEMBERS = ["step", "plan-graph-R1", "plan-graph-R2", "plan-none"]
METHODS = ["random", "graph-pred", "kepp-nograph", "kepp-R1", "kepp-R2"]


@dataclass(frozen=True)
class AppEnv:
    """Paths the app is started with in the tests."""

    world: Path  # a demo-format dataset root
    models: Path  # models folder: T<h>/step, T<h>/plan-graph-R1, ...
    records: Path  # prediction records written by kepp eval
    horizon: int  # the horizon the models were trained for

    def environ(self) -> dict[str, str]:
        return {"KEPP_APP_DATASET": "demo", "KEPP_APP_ROOT": str(self.world),
                "KEPP_APP_CHECKPOINTS": str(self.models), "KEPP_APP_PREDICTIONS": str(self.records)}


@pytest.fixture(scope="session")
def app_world(request, tmp_path_factory) -> Path:
    """A small demo-format world: conftest's ``synth_world`` when present, else one made here."""
    try:
        return Path(request.getfixturevalue("synth_world"))
    except pytest.FixtureLookupError:
        from kepp_core.data.synth import generate_world

        return Path(generate_world(tmp_path_factory.mktemp("app-world"), seed=0, videos=40))


@pytest.fixture(scope="session")
def app_env(app_world, tmp_path_factory) -> AppEnv:
    """The world, models trained on it by ``kepp train`` and their ``kepp eval`` records."""
    from kepp_core.cli import main

    out = tmp_path_factory.mktemp("app-models")
    models, records = out / "models", out / "predictions.jsonl"
    common = ["--dataset", "demo", "--root", str(app_world)]
    code = main(["train", "all", *common, "--out", str(models), "--horizons", str(HORIZON), "--only", *MEMBERS,
                 "--train-steps", "20", "--diffusion-steps", "10", "--dim", "16", "--val-every", "1000",
                 "--no-progress"])
    assert code == 0, "kepp train could not make the test models"
    code = main(["eval", *common, "--models", str(models), "-T", str(HORIZON), "--records", str(records),
                 "--methods", *METHODS])
    assert code == 0 and records.is_file(), "kepp eval could not write prediction records"
    return AppEnv(app_world, models, records, HORIZON)


@pytest.fixture(scope="session")
def demo_env() -> AppEnv:
    """The app's own defaults: the demo world (built once into the cache, about a minute on a
    machine that has none), the shipped demo models and their prediction records. Scenes and
    the Plan page's first episode need models that plan well, which the tiny test models do not."""
    from kepp_core.data.synth import ensure_world

    return AppEnv(ensure_world(progress=False), REPO / "assets" / "demo", REPO / "assets" / "demo" / "predictions.jsonl",
                  3)
