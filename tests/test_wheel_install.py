"""The core stands alone: the wheel built from this checkout, installed without the app's extras into a clean venv,
evaluates the demo's records from a folder of its own, and knows no command of the app's (the app declares them in its own distribution, app/pyproject.toml).

How it installs, and why: a clean venv (``uv venv``, else ``python -m venv``: no system or project site-packages)
gets the wheel and its declared dependencies, resolved by the installer from the machine's own package sources
(pip's configuration: find-links, extra index URLs, constraints, as ``make install`` reads them), pinned by the
project's requirements.txt (so the CPU build of torch, as ``make`` installs it). Nothing of the app's extras
(streamlit, pyvis, plotly) is asked for, so a dependency the core imports but pyproject does not declare fails
the run. With uv and a warm cache this takes seconds; the demo evaluation itself about a minute on a busy machine.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kepp_core.paths import REPO_ROOT
from tests.helpers.cli import run_kepp

APP_EXTRAS = ("streamlit", "pyvis", "plotly")


def _installer() -> str | None:
    found = Path(sys.executable).parent / "uv"
    return str(found) if found.is_file() else shutil.which("uv")


def _pip_setting(name: str) -> str:
    r = subprocess.run([sys.executable, "-m", "pip", "config", "get", f"global.{name}"], capture_output=True,
                       text=True)
    return r.stdout.strip() if r.returncode == 0 else ""


def _build_wheel(tmp: Path) -> Path:
    """The wheel of this checkout's core, built from a copy of what the wheel holds (the checkout is not written)."""
    src = tmp / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copyfile(REPO_ROOT / name, src / name)
    shutil.copytree(REPO_ROOT / "kepp_core", src / "kepp_core", ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                    "-w", str(tmp / "dist"), str(src)], check=True, capture_output=True, timeout=600)
    (wheel,) = (tmp / "dist").glob("kepp-*.whl")
    return wheel


def _clean_venv(tmp: Path, wheel: Path) -> Path:
    """A venv of the base interpreter with the wheel and its dependencies alone; its python."""
    venv, uv = tmp / "venv", _installer()
    base = getattr(sys, "_base_executable", sys.executable)
    pins = ["--constraint", str(REPO_ROOT / "requirements.txt")]
    if uv is not None:
        env = {**os.environ, "UV_INDEX_STRATEGY": "unsafe-best-match"}
        for setting, var, sep in (("find-links", "UV_FIND_LINKS", ","), ("extra-index-url", "UV_EXTRA_INDEX_URL", " "),
                                  ("constraint", "UV_CONSTRAINT", " ")):
            if _pip_setting(setting):
                env[var] = sep.join(_pip_setting(setting).split())
        subprocess.run([uv, "venv", "--quiet", "--python", base, str(venv)], check=True, env=env, timeout=300)
        cmd = [uv, "pip", "install", "--quiet", "--python", str(venv / "bin" / "python")]
    else:
        env = dict(os.environ)
        subprocess.run([base, "-m", "venv", str(venv)], check=True, timeout=300)
        cmd = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet"]
    r = subprocess.run([*cmd, *pins, str(wheel)], capture_output=True, text=True, env=env, timeout=1200)
    assert r.returncode == 0, r.stderr[-3000:]
    return venv / "bin" / "python"


@pytest.mark.slow
def test_the_wheel_installed_without_the_apps_extras_evaluates_the_demo_records(tmp_path):
    python = _clean_venv(tmp_path, _build_wheel(tmp_path))
    kepp = python.parent / "kepp"
    run = tmp_path / "run"
    run.mkdir()
    shutil.copyfile(REPO_ROOT / "assets" / "demo" / "predictions.jsonl", run / "predictions.jsonl")
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), "KEPP_HOME": str(tmp_path / "home"),
           "COLUMNS": "200", "KEPP_DEVICE": "cpu"}  # no PYTHONPATH: the venv's own packages alone
    where = subprocess.run([str(python), "-c", "import kepp_core, importlib.util as u; print(kepp_core.__file__); "
                            f"print([m for m in {APP_EXTRAS!r} if u.find_spec(m)])"],
                           capture_output=True, text=True, env=env, cwd=run, check=True).stdout.splitlines()
    assert Path(where[0]).is_relative_to(python.parent.parent) and where[1] == "[]", where

    r = subprocess.run([str(kepp), "eval", "--from-records", "predictions.jsonl"], capture_output=True, text=True,
                       env=env, cwd=run, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    checkout = run_kepp("eval", "--from-records", "predictions.jsonl", cwd=run,
                        env={"COLUMNS": "200", "KEPP_HOME": str(tmp_path / "home-checkout"), "KEPP_DEVICE": "cpu"})
    assert checkout.returncode == 0, checkout.stderr[-3000:]
    assert r.stdout == checkout.stdout and "T=3 SR" in r.stdout  # the installed core's table is the checkout's

    # the core declares none of the app's commands: without the app they are not commands at all
    for command in (["talk", "export", "talk.json", "--out", "talk.html"], ["app", "--port", "8600"]):
        r = subprocess.run([str(kepp), *command], capture_output=True, text=True, env=env, cwd=run, timeout=300)
        last = r.stderr.splitlines()[-1]  # argparse's usage line, then kepp's one error line
        assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr[-2000:]
        assert last.startswith("kepp: error: ") and f"invalid choice: '{command[0]}'" in last, r.stderr[-2000:]
    assert sorted(p.name for p in run.iterdir()) == ["predictions.jsonl"]
