"""Shared fixtures: the real annotation sets in ../shared/data and small synthetic worlds."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from kepp_core.paths import REPO_ROOT

REPO = REPO_ROOT
APP_DIR = REPO / "app"
# The app's components are plain Python (app/components): tests import them as the app does.
if str(APP_DIR) not in sys.path:
    sys.path.insert(0, str(APP_DIR))
SHARED_DATA = REPO.parent / "shared" / "data"


def _declare_checkout_commands() -> None:
    """This checkout's plug-in commands (pyproject's ``kepp.commands`` entry points: ``kepp app``, ``kepp talk``),
    declared where every test and every ``kepp`` process a test starts (``PYTHONPATH`` = the checkout) finds them
    first: a ``<name>-<version>.dist-info`` at the checkout's root (git ignores it), as ``pip install -e .`` writes
    one into the venv. The tests so run this checkout's declarations, not those of whichever checkout the venv
    was installed from."""
    import tomllib

    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    lines = [f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items())
             for group, eps in project.get("entry-points", {}).items()]
    files = {"METADATA": f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n",
             "entry_points.txt": "\n".join(lines)}
    info = REPO / f"{project['name']}-{project['version']}.dist-info"
    if info.is_dir() and all((info / k).is_file() and (info / k).read_text() == v for k, v in files.items()):
        return
    import tempfile

    made = Path(tempfile.mkdtemp(prefix=".dist-info-", dir=REPO))
    for name, text in files.items():
        (made / name).write_text(text)
    shutil.rmtree(info, ignore_errors=True)
    try:
        made.rename(info)
    except OSError:  # another test process declared them at the same moment
        shutil.rmtree(made, ignore_errors=True)


_declare_checkout_commands()


def _shared(relative: str) -> Path:
    path = SHARED_DATA / relative
    if not path.exists():
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{path} is missing: CI always provides ../shared/data")
        pytest.skip(f"{path} is not present (the shared annotation sets live beside the repository)")
    return path


@pytest.fixture(scope="session")
def coin_json() -> Path:
    return _shared("coin/COIN.json")


@pytest.fixture(scope="session")
def niv_plans() -> Path:
    return _shared("niv/plans.jsonl")


@pytest.fixture(scope="session")
def official_kepp() -> Path:
    """Checkpoints in the official KEPP format with the official code's outputs (README there)."""
    return _shared("official-kepp")


@pytest.fixture(scope="session")
def protocol_metrics_cases() -> list[dict]:
    """The plans of ``../shared/data/protocol-metrics`` and what PDPP's and ViterbiPlanNet's codes report on them
    (``cases-exact.json``: PDPP's numbers as its code really rounds them, and as it prints them)."""
    import json

    return json.loads(_shared("protocol-metrics/cases-exact.json").read_text())["cases"]


@pytest.fixture(scope="session")
def official_s3d() -> Path:
    """The S3D HowTo100M reference network's facts, weight rule and outputs (README there)."""
    return _shared("official-s3d")


@pytest.fixture(scope="session")
def coin_dataset(coin_json):
    from kepp_core.data import load_coin

    return load_coin(coin_json)


@pytest.fixture(scope="session")
def niv_dataset(niv_plans):
    from kepp_core.data import load_plans

    return load_plans(niv_plans)


@pytest.fixture(autouse=True)
def _cpu_where_marked(request, monkeypatch):
    """A test marked ``cpu`` runs its networks on the CPU on every machine: ``KEPP_DEVICE=cpu`` for the test
    and the `kepp` processes it starts (a GPU's kernels may add in another order, so bit-for-bit equality
    of two training runs, or of a run and its resumed twin, is a CPU promise). Every other test runs on the
    default device: the GPU where there is one."""
    if request.node.get_closest_marker("cpu") is not None:
        monkeypatch.setenv("KEPP_DEVICE", "cpu")


# --- synthetic worlds (kepp_core.data.synth) ---------------------------------------------
# Small, fast worlds: shorter steps and 64-px frames keep them at a few seconds to build.
SMALL_WORLD = {"seed": 0, "videos": 42, "difficulty": "default", "step_min": 1.0, "step_max": 1.5,
               "idle": 0.3, "size": 64}


def _shared_tmp(tmp_path_factory, name: str) -> Path:
    """A folder shared by all pytest-xdist workers of this run (built once, under a lock)."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent
    return base / name


def _locked_build(tmp_path_factory, name: str, build):
    import fcntl

    root = _shared_tmp(tmp_path_factory, name)
    root.parent.mkdir(parents=True, exist_ok=True)
    with open(root.parent / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            return build(root)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@pytest.fixture(scope="session")
def synth_world(tmp_path_factory) -> Path:
    """Root of a small synthetic world (42 videos, 7 tasks, default difficulty) with mp4
    videos and builtin features, in the CrossTask layout: ``load_dataset("demo", synth_world)``."""
    from kepp_core.data.synth import ensure_world

    return _locked_build(tmp_path_factory, "synth-world",
                         lambda root: ensure_world(root, progress=False, **SMALL_WORLD))


@pytest.fixture(scope="session")
def niv_world(tmp_path_factory, niv_plans) -> Path:
    """A synthetic world rendered from 30 of the shared NIV plans (spread over its 5 tasks)."""
    from kepp_core.data.synth import generate_world, world_fingerprint

    def build(root: Path) -> Path:
        if world_fingerprint(root) is not None:
            return root
        return generate_world(root, seed=0, videos=30, from_plans=niv_plans, progress=False,
                              step_min=1.0, step_max=1.5, idle=0.3, size=64)

    return _locked_build(tmp_path_factory, "niv-world", build)


@pytest.fixture(scope="session")
def s3d_world(tmp_path_factory) -> tuple[Path, Path]:
    """A small synthetic world whose features are the S3D encoder's (the reference fixture's weight
    rule, a 32-px crop; tests/helpers/s3d.py): ``(world root, weights file)``."""
    from tests.helpers.s3d import build_s3d_world

    return _locked_build(tmp_path_factory, "s3d-world", build_s3d_world)


@pytest.fixture(scope="session")
def s3d_official(s3d_world, tmp_path_factory) -> Path:
    """Official-format checkpoints for ``s3d_world`` (observations of 3 s × 512 S3D values), imported:
    the models folder."""
    from tests.helpers.s3d import build_official_models

    return _locked_build(tmp_path_factory, "s3d-official", lambda base: build_official_models(base, s3d_world[0]))


# --- the shipped demo models ---------------------------------------------------------------
DEMO_ASSETS = REPO_ROOT / "assets" / "demo"


@pytest.fixture(scope="module")
def demo_t3(tmp_path_factory):
    """The default demo world and a private copy (per test module) of the shipped T=3 models:
    (dataset, world root, models folder)."""
    from kepp_core.data import load_dataset  # lazy: conftest loads before any test is chosen
    from kepp_core.data.synth import ensure_world

    if not all((DEMO_ASSETS / "T3" / m / "config.json").is_file() for m in ("plan-none", "plan-graph-R1")):
        pytest.skip("no shipped demo checkpoints in assets/demo")
    root = ensure_world(progress=False)
    models = tmp_path_factory.mktemp("demo-t3") / "models"
    shutil.copytree(DEMO_ASSETS / "T3", models / "T3")
    return load_dataset("demo", root), root, models


# --- fixtures of tests/helpers, for every test module ---------------------------------------------
from tests.helpers.app_env import app_env, app_world, demo_env, lists_env  # noqa: E402,F401
from tests.helpers.browser import browser, demo_server, records_copy, records_server, server  # noqa: E402,F401
