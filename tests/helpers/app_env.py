"""Fixtures shared by the app tests (AppTest pages and the browser end-to-end test).

The app runs on a small synthetic world (the ``synth_world`` fixture of conftest.py) with
models that ``kepp train`` makes for it in a few seconds (tiny networks, few steps: the
pages are under test, not the models) and the prediction records ``kepp eval`` writes.
``lists_env`` is the same world as the field's split lists with features alone (no mp4, no
features.json: the released features' case), KEPP's records on them and another method's
predictions brought in with ``kepp records import``.
``tests/conftest.py`` makes the fixtures available to every test module.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from kepp_core.paths import REPO_ROOT

REPO = REPO_ROOT
APP_DIR = REPO / "app"  # the app's folder (its own distribution: app/pyproject.toml)
APP = APP_DIR / "Home.py"
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
    dataset: str = "demo"  # the dataset format of ``world``

    def environ(self) -> dict[str, str]:
        return {"KEPP_APP_DATASET": self.dataset, "KEPP_APP_ROOT": str(self.world),
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


IMPORTED = "ViterbiPlanNet"  # the imported method of lists_env (kepp records import --method)
IMPORTED_FILE = f"T{HORIZON}_predictions.json"


@pytest.fixture(scope="session")
def lists_env(app_env, tmp_path_factory) -> AppEnv:
    """``app_env``'s world as split lists (``kepp data lists``: a split file, a taxonomy, train and test lists)
    with its feature files alone (no videos, no features.json), ``app_env``'s models, and a records folder:
    KEPP's records (``kepp eval`` on the lists) and ViterbiPlanNet-shaped predictions imported with
    ``kepp records import --format vpn`` (every third plan's middle step wrong)."""
    import json
    import shutil

    from kepp_core.cli import main

    out = tmp_path_factory.mktemp("lists-env")
    lists, records = out / "lists", out / "records"
    code = main(["data", "lists", "--dataset", "demo", "--root", str(app_env.world), "-T", str(HORIZON),
                 "--out", str(lists)])
    assert code == 0, "kepp data lists could not write the split lists"
    (lists / "feats").mkdir()
    for f in (app_env.world / "features").glob("*.npy"):  # the features alone: no encoder named
        shutil.copy(f, lists / "feats" / f.name)
    split = lists / "split.toml"
    split.write_text(f'train = "train_{HORIZON}.json"\ntest = "test_{HORIZON}.json"\ntaxonomy = "taxonomy.json"\n'
                     'features = "feats"\n')
    # the models with their graph decoding chosen on the world's validation videos and kept beside them (the
    # Plan page decodes with it: the lists' few training videos leave these ids no validation video)
    models = out / "models"
    shutil.copytree(app_env.models, models)
    code = main(["eval", "--dataset", "demo", "--root", str(app_env.world), "--models", str(models), "-T", str(HORIZON),
                 "--methods", "kepp-R1+dec", "kepp-R2+dec", "kepp-nograph+dec", "--save-decoding"])
    assert code == 0, "kepp eval could not keep the decoding choices"
    records.mkdir()
    code = main(["eval", "--dataset", "split-lists", "--root", str(split), "--models", str(models),
                 "-T", str(HORIZON), "--records", str(records / "kepp-records.jsonl"), "--methods", *METHODS])
    assert code == 0, "kepp eval could not write records on the split lists"
    entries = json.loads((lists / f"test_{HORIZON}.json").read_text())
    truth = [[int(a) for _, _, a in e["id"]["legal_range"]] for e in entries]
    n = 1 + max(a for t in truth for a in t)
    preds = {str(k): {"pred": [t[0], (t[1] + 1) % n, *t[2:]] if k % 3 == 0 else t, "true": t}
             for k, t in enumerate(truth)}
    (out / IMPORTED_FILE).write_text(json.dumps(preds))
    code = main(["records", "import", "--format", "vpn", "--predictions", str(out / IMPORTED_FILE),
                 "--split", str(lists / f"test_{HORIZON}.json"), "--method", IMPORTED,
                 "--out", str(records / "vpn-records.jsonl")])
    assert code == 0, "kepp records import could not import the predictions"
    return AppEnv(split, models, records, HORIZON, dataset="split-lists")
