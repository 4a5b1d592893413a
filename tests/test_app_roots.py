"""The sidebar's "Data and models" panel opens only paths under the folders the person running
the server allowed (the start paths, `kepp app --allow-root DIR`, KEPP's cache home): a browser
visitor learns nothing of what lies outside (the same message whether a path exists or not) and
the app writes nothing there; a path a dataset file names (or links to) is as untrusted as a typed
one, and no command-line error quotes a file's content. Real Streamlit sessions (AppTest)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest
from kepp_core.paths import REPO_ROOT
import numpy as np
from tests.helpers import hostile
from tests.helpers.app_session import open_page
from tests.helpers.cli import in_process, one_error
from tests.helpers.data import write_crosstask
from tests.helpers.hostile import PLAN


pytestmark = pytest.mark.xdist_group("app")

APP = REPO_ROOT / "app" / "Home.py"
REFUSED = "is not under a folder this app server allows"


def session(monkeypatch, env, **more) -> AppTest:
    for k, v in {**env.environ(), **more}.items():
        monkeypatch.setenv(k, str(v))
    at = AppTest.from_file(str(APP), default_timeout=180).run()
    at.session_state["kepp_panel_open"] = True
    return at.run()


def errors(at: AppTest) -> list[str]:
    return [e.value for e in at.error]


def set_path(at: AppTest, key: str, value: str) -> AppTest:
    return at.text_input(key=f"cfg_{key}").set_value(value).run()


def outside_plans(tmp_path: Path) -> Path:
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    (folder / "plans.jsonl").write_text("\n".join(json.dumps({"video": f"v{i}", "task": "t", "steps": ["a", "b", "c"]})
                                                  for i in range(12)) + "\n")
    return folder


@pytest.mark.slow
@pytest.mark.parametrize("key", ["root", "features", "graph", "checkpoints", "predictions"])
def test_a_path_outside_the_allowed_folders_is_refused_the_same_whether_it_exists_or_not(monkeypatch, app_env,
                                                                                           tmp_path, key):
    at = session(monkeypatch, app_env)
    before = at.session_state["kepp_cfg"]
    messages = []
    for path in ("/etc/passwd", "/etc/no-such-file-here", str(tmp_path / "missing" / "x.json")):
        set_path(at, key, path)
        assert at.session_state["kepp_cfg"] == before  # nothing applied
        (message,) = [m for m in errors(at) if REFUSED in m]
        messages.append(message.replace(path, "PATH"))
    assert len(set(messages)) == 1, messages  # existence does not change the answer
    assert "invalid JSON" not in messages[0] and "does not exist" not in messages[0]


def test_nothing_is_written_into_a_folder_outside_the_allowed_ones(monkeypatch, app_env, tmp_path):
    folder = outside_plans(tmp_path)
    at = session(monkeypatch, app_env)
    at.selectbox(key="cfg_dataset").select("plans").run()
    set_path(at, "root", str(folder / "plans.jsonl"))
    assert any(REFUSED in m for m in errors(at))
    assert sorted(p.name for p in folder.iterdir()) == ["plans.jsonl"]


def test_a_symlink_inside_an_allowed_folder_that_points_outside_is_refused(monkeypatch, app_env, tmp_path):
    folder = outside_plans(tmp_path)
    link = app_env.world / "link-outside"
    if not link.exists():
        os.symlink(folder, link)
    at = session(monkeypatch, app_env)
    set_path(at, "root", str(link / "plans.jsonl"))
    assert any(REFUSED in m for m in errors(at))


def test_a_config_file_outside_or_naming_paths_outside_is_refused(monkeypatch, app_env, tmp_path):
    folder = outside_plans(tmp_path)
    (folder / "app.toml").write_text('dataset = "plans"\nroot = "plans.jsonl"\n')
    at = session(monkeypatch, app_env)
    before = at.session_state["kepp_cfg"]
    at.text_input(key="cfg_file").set_value(str(folder / "app.toml")).run()
    at.button(key="cfg_load").click().run()
    assert at.session_state["kepp_cfg"] == before and any(REFUSED in m for m in errors(at))
    inside = app_env.world / "outside-root.toml"
    inside.write_text(f'dataset = "plans"\nroot = "{folder / "plans.jsonl"}"\n')
    at.text_input(key="cfg_file").set_value(str(inside)).run()
    at.button(key="cfg_load").click().run()
    assert at.session_state["kepp_cfg"] == before and any(REFUSED in m for m in errors(at))


def test_a_folder_the_server_allowed_opens(monkeypatch, app_env, tmp_path):
    folder = outside_plans(tmp_path)
    at = session(monkeypatch, app_env, KEPP_APP_ALLOW_ROOTS=str(folder))
    set_path(at, "root", str(folder / "plans.jsonl"))
    assert not any(REFUSED in m for m in errors(at))
    assert at.session_state["kepp_cfg"].root == str(folder / "plans.jsonl")


def test_kepp_app_refuses_an_allow_root_that_is_not_a_folder(tmp_path, capsys):
    from kepp_core.cli import main

    codes = []
    for bad in (tmp_path / "nope", Path("/dev/null")):
        codes.append(main(["app", "--allow-root", str(bad), "--port", "0"]))
        err = capsys.readouterr().err
        assert err.startswith(f"kepp: error: --allow-root {bad}: not a folder") and err.count("\n") == 1
    assert codes == [2, 2] and list(tmp_path.iterdir()) == []  # both refused; the missing folder not made


SECRET = "kepp-secret-content-7f3a"  # a file outside every allowed root holds it: it must never be shown


class _NoEnv:
    """An app environment with nothing preset: each test names its dataset."""

    def environ(self) -> dict[str, str]:
        return {}


# --- paths named inside data files ----------------------------------------------------------------
def _outside(tmp_path: Path) -> Path:
    """A valid feature file outside every folder the app allows (its folder holds a secret too)."""
    folder = tmp_path / "outside"
    folder.mkdir()
    np.save(folder / "feats.npy", np.ones((30, 8), np.float32))
    (folder / "secret.txt").write_text(f"{SECRET}:x:0:0\n")
    return folder / "feats.npy"


def _plans_naming(tmp_path, outside: Path) -> dict:
    root = tmp_path / "data"
    root.mkdir()
    lines = [{**PLAN, "video": f"v{i}"} for i in range(6)]
    lines[0]["features"] = str(outside)
    (root / "plans.jsonl").write_text(hostile.plans_lines(*lines))
    return {"KEPP_APP_DATASET": "plans", "KEPP_APP_ROOT": root / "plans.jsonl"}


def _plans_symlinked(tmp_path, outside: Path) -> dict:
    env = _plans_naming(tmp_path, outside)
    path = env["KEPP_APP_ROOT"]
    (path.parent / "features").mkdir()
    (path.parent / "features" / "v1.npy").symlink_to(outside)
    path.write_text(hostile.plans_lines(*[{**PLAN, "video": f"v{i}"} for i in range(6)]))
    return env


def _coin_symlinked(tmp_path, outside: Path) -> dict:
    root = tmp_path / "coin"
    (root / "features").mkdir(parents=True)
    db = {f"v{i}": {"class": "MakeTea", "subset": "training", "recipe_type": 1, "annotation": [
        {"id": "1", "label": "boil", "segment": [0, 2]}, {"id": "2", "label": "pour", "segment": [3, 5]}]}
        for i in range(4)}
    (root / "COIN.json").write_text(json.dumps({"database": db}))
    (root / "features" / "v0.npy").symlink_to(outside)
    return {"KEPP_APP_DATASET": "coin", "KEPP_APP_ROOT": root / "COIN.json", "KEPP_APP_FEATURES": root / "features"}


def _crosstask_feature(tmp_path, outside: Path) -> dict:
    root = write_crosstask(tmp_path / "ct")
    (root / "features" / "101_a.npy").unlink()
    (root / "features" / "101_a.npy").symlink_to(outside)
    return {"KEPP_APP_DATASET": "crosstask", "KEPP_APP_ROOT": root}


def _crosstask_annotation(tmp_path, outside: Path) -> dict:
    root = write_crosstask(tmp_path / "ct")
    (root / "annotations" / "101_a.csv").unlink()
    (root / "annotations" / "101_a.csv").symlink_to(outside.parent / "secret.txt")
    return {"KEPP_APP_DATASET": "crosstask", "KEPP_APP_ROOT": root}


def _official_list(tmp_path, outside: Path) -> dict:
    (outside.parent / "list.jsonl").write_text("".join(json.dumps({"vid": f"v{i}", "legal_range": [0, 1, 2]}) + "\n"
                                                       for i in range(4)))
    root = tmp_path / "lists"
    root.mkdir()
    (root / "train_list.jsonl").symlink_to(outside.parent / "list.jsonl")
    return {"KEPP_APP_DATASET": "official-list", "KEPP_APP_ROOT": root / "train_list.jsonl"}


def _feature_manifest(tmp_path, outside: Path) -> dict:
    """A feature folder whose manifest (``features.json``, read for the features' encoder) links outside."""
    (outside.parent / "features.json").write_text(json.dumps({"encoder": SECRET, "dim": 8}))
    root = write_crosstask(tmp_path / "ct")
    (root / "features" / "features.json").symlink_to(outside.parent / "features.json")
    return {"KEPP_APP_DATASET": "crosstask", "KEPP_APP_ROOT": root}


APP_PATH_CASES = {"plans-features-key": _plans_naming, "feature-manifest-symlink": _feature_manifest, "plans-feature-folder-symlink": _plans_symlinked,
                  "coin-feature-symlink": _coin_symlinked, "crosstask-feature-symlink": _crosstask_feature,
                  "crosstask-annotation-symlink": _crosstask_annotation, "official-list-symlink": _official_list}


@pytest.mark.xdist_group("app")
class TestPathsNamedInDataFiles:
    """A path a dataset file names is as untrusted as a path a visitor types (real app sessions),
    and no command-line error quotes a file's content."""

    @pytest.mark.parametrize("case", sorted(APP_PATH_CASES))
    def test_the_app_refuses_a_dataset_naming_a_file_outside_the_allowed_folders(self, monkeypatch, tmp_path, case):
        env = APP_PATH_CASES[case](tmp_path, _outside(tmp_path))
        at = open_page(monkeypatch, _NoEnv(), "views/2_Graph.py", KEPP_APP_CHECKPOINTS=None, KEPP_APP_PREDICTIONS=None,
                       KEPP_HOME=tmp_path / "home", **env)
        assert not at.exception, [e.value for e in at.exception]
        shown = " ".join(str(e.value) for e in at.error)
        assert REFUSED in shown, shown
        assert SECRET not in shown and "root:x" not in shown

    @pytest.mark.parametrize("typed", ["/data/a\u0000b.jsonl", "/" + "x" * 5000], ids=["nul-byte", "5000-characters"])
    def test_a_path_no_system_call_takes_is_refused_in_the_sidebar(self, monkeypatch, tmp_path, typed):
        plans = tmp_path / "plans.jsonl"
        plans.write_text(hostile.plans_lines(*[{**PLAN, "video": f"v{i}"} for i in range(4)]))
        at = open_page(monkeypatch, _NoEnv(), KEPP_HOME=tmp_path / "home", KEPP_APP_DATASET="plans", KEPP_APP_ROOT=plans)
        at.session_state["kepp_panel_open"] = True
        at.run()
        at.text_input(key="cfg_root").set_value(typed).run()
        assert not at.exception, [e.value for e in at.exception]
        assert any("not a usable path" in str(e.value) for e in at.error), [e.value for e in at.error]

    def test_the_command_line_never_quotes_a_named_file(self, capsys, tmp_path):
        outside = _outside(tmp_path)
        secret = outside.parent / "secret.txt"
        cases = []
        plans = tmp_path / "p.jsonl"  # a features key naming a text file (here the secret, and /etc/hostname)
        for target in (secret, Path("/etc/hostname")):
            plans.write_text(hostile.plans_lines({**PLAN, "video": "v0", "features": str(target)}))
            cases.append(in_process(capsys, "data", "stats", "--dataset", "plans", "--root", plans))
        root = _crosstask_annotation(tmp_path, outside)["KEPP_APP_ROOT"]  # an annotation file that is the secret
        cases.append(in_process(capsys, "data", "stats", "--dataset", "crosstask", "--root", root))
        hostname = Path("/etc/hostname").read_text(errors="replace").strip() if Path("/etc/hostname").is_file() else ""
        for code, err in cases:
            line = one_error(code, err)
            assert SECRET not in line and "b'" not in line, line
            assert not hostname or len(hostname) < 4 or hostname not in line, line
        assert [code for code, _ in cases] == [2, 2, 2] and SECRET in secret.read_text()  # 3 refusals; it was there
