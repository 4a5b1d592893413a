"""The app's commands plug into ``kepp`` through the one point, the ``kepp.commands`` entry points that the project's
pyproject declares: ``kepp`` lists and runs them as its own, and runs a plug-in by its command's name only."""

from __future__ import annotations

import tomllib

import pytest

from kepp_core.commands.plugins import GROUP, plugin_entry_points, run_plugin
from kepp_core.paths import REPO_ROOT
from tests.helpers.cli import assert_one_line_error, run_kepp


def test_the_apps_commands_are_the_entry_points_pyproject_declares():
    declared = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["entry-points"][GROUP]
    assert {ep.name: ep.value for ep in plugin_entry_points()} == declared == {
        "app": "app.commands:register_app", "talk": "app.commands:register_talk"}


def test_kepp_lists_the_plugged_in_commands_and_runs_them_with_its_own_error_rule(tmp_path):
    r = run_kepp("--help", cwd=tmp_path)
    assert r.returncode == 0 and "Start the KEPP Streamlit app" in r.stdout and "talks: a playlist" in r.stdout
    # a plug-in's user error is kepp's one line: the app's --port checked by the core's serving checks
    assert_one_line_error(run_kepp("app", "--port", "0", cwd=tmp_path), "--port 0", "1..65535")
    assert_one_line_error(run_kepp("talk", "export", "nothing here.json", "--out", "t.html", cwd=tmp_path),
                          "nothing here.json")
    assert list(tmp_path.iterdir()) == []


def test_a_command_no_plugin_declares_is_not_run():
    assert run_plugin("no-such-command", []) is None


@pytest.mark.slow
def test_kepp_demo_starts_the_app_as_the_plugged_in_command(demo_env, tmp_path):
    # the world and models are ready, then `kepp demo` hands its port to the command `app`, whose own check
    # refuses it: the app is reached through the plug-in point, by its command's name
    r = run_kepp("demo", "--port", "0", cwd=tmp_path)
    assert "models:" in r.stdout
    assert_one_line_error(r, "--port 0", "1..65535")
