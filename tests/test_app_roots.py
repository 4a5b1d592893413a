"""The sidebar's "Data and models" panel opens only paths under the folders the person running
the server allowed (the start paths, `kepp app --allow-root DIR`, KEPP's cache home): a browser
visitor learns nothing of what lies outside (the same message whether a path exists or not) and
the app writes nothing there. Real Streamlit sessions (AppTest)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest
from kepp_core.paths import REPO_ROOT


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
