"""``kepp app``: options, config files and the environment handed to the app."""

from __future__ import annotations

import socket
import sys

import pytest

from kepp_core.api import AppConfig
from kepp_core.api.config import ENV
from kepp_core.cli import main
from app.commands import app_command
from kepp_core.api.serving import check_options
from kepp_core.errors import KeppError
from kepp_core.paths import REPO_ROOT
import os
import subprocess
import time
import numpy as np
from kepp_core.api.serving import free_port
from tests.helpers import hostile
from tests.helpers.cli import assert_one_line_error, run_kepp
from tests.helpers.hostile import PLAN

REPO = REPO_ROOT


def test_nonexistent_root_exits_2_with_one_line(capsys, tmp_path):
    assert main(["app", "--root", str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err
    assert "nowhere: path does not exist" in err and "Traceback" not in err and err.count("\n") == 1


def test_busy_port_is_refused():
    with socket.socket() as s:
        s.bind(("localhost", 0))
        s.listen()
        port = s.getsockname()[1]
        with pytest.raises(KeppError, match=f"port {port} on localhost is already in use"):
            check_options(AppConfig(port=port))


def test_config_file_paths_resolve_against_its_folder(tmp_path):
    (tmp_path / "world").mkdir()
    cfg = tmp_path / "app.toml"
    cfg.write_text('[app]\ndataset = "demo"\nroot = "world"\npresentation = true\n')
    assert AppConfig.read_file(cfg) == {"dataset": "demo", "root": str(tmp_path / "world"), "presentation": True}


@pytest.mark.parametrize("text, message", [
    ("root = [1, 2]\n", "'root' must be a file or folder path \\(expected a string"),
    ("colour = 'blue'\n", "unknown key 'colour'"),
    ("dataset = 'imagenet'\n", "'dataset' must be one of coin, crosstask"),
    ("presentation = 'yes'\n", "'presentation' must be true or false"),
    ("root = \n", "not a valid TOML file"),
])
def test_bad_config_files_name_the_file_and_the_problem(tmp_path, text, message):
    cfg = tmp_path / "bad.toml"
    cfg.write_text(text)
    with pytest.raises(KeppError, match=message) as e:
        AppConfig.read_file(cfg)
    assert str(cfg) in str(e.value)


def test_bad_config_file_fails_before_the_server_starts(capsys, tmp_path):
    cfg = tmp_path / "bad.toml"
    cfg.write_text("colour = 'blue'\n")
    assert main(["app", "--config", str(cfg)]) == 2
    assert "unknown key 'colour'" in capsys.readouterr().err


def test_options_reach_the_app_configuration(monkeypatch, tmp_path):
    argv, env = app_command(AppConfig(dataset="plans", root=str(tmp_path), presentation=True, port=8765))
    assert argv[:4] == [sys.executable, str(REPO / "app" / "serve.py"), "run", str(REPO / "app" / "Home.py")]
    assert "--server.headless=true" in argv and "--server.port=8765" in argv
    assert env[ENV["root"]] == str(tmp_path.resolve()) and env[ENV["presentation"]] == "1"
    assert ENV["graph"] not in env
    # what the app makes of that environment
    for var in ENV.values():
        monkeypatch.delenv(var, raising=False)
    for var in ENV.values():
        if var in env:
            monkeypatch.setenv(var, env[var])
    monkeypatch.syspath_prepend(str(REPO / "app"))
    from components.ui.config import initial_config

    assert initial_config() == AppConfig(dataset="plans", root=str(tmp_path.resolve()), presentation=True)


def test_config_file_then_command_line_options_win(monkeypatch, tmp_path):
    cfg = tmp_path / "app.toml"
    cfg.write_text('dataset = "plans"\nroot = "a.jsonl"\ngraph = "g.json"\n')
    (tmp_path / "b.jsonl").write_text("")
    _, env = app_command(AppConfig(config=str(cfg), root=str(tmp_path / "b.jsonl")))
    for var in ENV.values():
        monkeypatch.delenv(var, raising=False)
        if var in env:
            monkeypatch.setenv(var, env[var])
    monkeypatch.syspath_prepend(str(REPO / "app"))
    from components.ui.config import initial_config

    c = initial_config()
    assert (c.dataset, c.root, c.graph) == ("plans", str(tmp_path / "b.jsonl"), str(tmp_path / "g.json"))


@pytest.mark.slow
@pytest.mark.parametrize("how", ["SIGTERM", "SIGINT-to-a-background-job", "SIGHUP"])
def test_kepp_app_ends_its_server_on_a_stop_signal(tmp_path, how):
    """SIGTERM (a service manager), SIGINT (Ctrl+C, or ``kill -INT`` of a job a shell started with ``&``,
    which inherits SIGINT ignored) and SIGHUP (its terminal closed): ``kepp app`` ends with status 0 and its
    server with it, the port free and no child of it left."""
    import signal
    import time

    from kepp_core.api.serving import free_port, port_is_free
    from tests.helpers.cli import alive, child_pids, start_kepp_app

    port = free_port()
    proc = start_kepp_app(port, tmp_path, ignore_sigint=how.startswith("SIGINT"))
    children = child_pids(proc.pid)
    try:
        assert children, "kepp app has no server process"
        proc.send_signal(getattr(signal, how.split("-")[0]))
        status = proc.wait(timeout=60)
        log = (tmp_path / "kepp-app.log").read_text()
        assert status == 0 and "Traceback" not in log, (status, log[-2000:])
        assert not [c for c in children if alive(c)], "a child of kepp app outlived it"
        deadline = time.monotonic() + 10
        while not port_is_free(port) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert port_is_free(port), "the streamlit server's port is still held"
    finally:
        for c in [proc.pid, *children]:
            if alive(c):
                os.kill(c, signal.SIGKILL)


def _server_log(opts: AppConfig, wanted: str, timeout: float = 90.0) -> tuple[str, bool]:
    """Start the app's server with ``opts``; its stderr once it holds ``wanted`` (or the server
    exited, or ``timeout``), and whether the server then still answered."""
    import subprocess
    import time
    import urllib.request

    argv, env = app_command(opts)
    proc = subprocess.Popen(argv, env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and proc.poll() is None and not any(wanted in x for x in lines):
            lines.append(proc.stderr.readline())
        try:
            with urllib.request.urlopen(f"http://localhost:{opts.port}/_stcore/health", timeout=5) as r:
                answered = r.read() == b"ok"
        except OSError:
            answered = False
        return "".join(lines), answered
    finally:
        proc.terminate()
        proc.wait(timeout=20)


@pytest.mark.slow
def test_the_server_opens_the_dataset_while_it_starts(synth_world):
    from kepp_core.api.serving import free_port
    from kepp_core.data import load_dataset

    n = len(load_dataset("demo", synth_world).videos)
    log, answered = _server_log(AppConfig(dataset="demo", root=str(synth_world), port=free_port()), "KEPP app: dataset")
    assert f"KEPP app: dataset demo opened ({n} videos" in log and answered
    assert "ScriptRunContext" not in log  # the cache's warning about a thread without a page stays quiet


@pytest.mark.slow
def test_a_dataset_that_fails_to_open_is_left_to_the_page(tmp_path):
    from kepp_core.api.serving import free_port

    (tmp_path / "tasks_primary.txt").write_text("")
    log, answered = _server_log(AppConfig(dataset="crosstask", root=str(tmp_path), port=free_port()),
                                "ahead of the first page")
    assert "the dataset was not opened ahead of the first page" in log and str(tmp_path) in log
    assert answered and "Traceback" not in log


@pytest.mark.slow
def test_an_unbuilt_demo_world_is_left_to_the_first_page(monkeypatch, tmp_path):
    """The server builds no demo world by itself: that takes minutes and the first page shows its progress."""
    import subprocess
    import time
    import urllib.request

    from kepp_core.api.serving import free_port

    monkeypatch.setenv("KEPP_HOME", str(tmp_path / "home"))
    opts = AppConfig(port=free_port())
    argv, env = app_command(opts)
    with open(tmp_path / "server.log", "w") as log:
        proc = subprocess.Popen(argv, env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=log)
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(f"http://localhost:{opts.port}/_stcore/health", timeout=2):
                    break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, "the server did not start"
                time.sleep(0.2)
        time.sleep(3)  # an absence to prove (no world built): no event marks the opening thread deciding not to
        # build it, so this waits as long as that thread would take to begin (tests/test_suite_shape.py: TIMER_WAITS)
        assert not (tmp_path / "home" / "demo-world").exists()
        assert "KEPP app: dataset" not in (tmp_path / "server.log").read_text()
    finally:
        proc.terminate()
        proc.wait(timeout=20)


# --- the app fails fast ------------------------------------------------------------------------------
def _app(*argv, timeout: float = 60) -> subprocess.CompletedProcess:
    """``kepp app ARGV`` on a free port; a server that starts instead of refusing is stopped at ``timeout``."""
    try:
        return run_kepp("app", "--port", free_port(), *argv, timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"kepp app {' '.join(map(str, argv))} started serving instead of refusing")


class TestAppFailsFast:
    """``kepp app`` (and ``kepp plan``) refuse options they cannot use before anything is served."""

    @pytest.fixture
    def files(self, tmp_path):
        (tmp_path / "garbage.pt").write_bytes(b"not torchscript")
        plans = tmp_path / "plans.jsonl"
        plans.write_text(hostile.plans_lines(*[{**PLAN, "video": f"v{i}"} for i in range(4)]))
        (tmp_path / "preds.jsonl").write_text("{not json\n")
        (tmp_path / "bad-encoder.toml").write_text('encoders = ["os:system"]\n')
        (tmp_path / "deep.toml").write_text("x = " + "[" * 5000 + "]" * 5000 + "\n")
        os.mkfifo(tmp_path / "fifo.toml")
        (tmp_path / "seed-negative.toml").write_text("split_seed = -1\n")
        (tmp_path / "seed-huge.toml").write_text(f"split_seed = {2**70}\n")
        (tmp_path / "two-places.toml").write_text(f'root = "{plans}"\n[app]\npresentation = true\n')
        return tmp_path

    @pytest.mark.parametrize("argv, words", [
        (["--encoder", "os:system"], "does not take (frames, fps)"),
        (["--encoder", "{tmp}/garbage.pt"], "garbage.pt"),
        (["--graph", "{tmp}/plans.jsonl"], "plans.jsonl"),
        (["--predictions", "{tmp}/preds.jsonl"], "preds.jsonl:1"),
        (["--config", "{tmp}/bad-encoder.toml"], "does not take (frames, fps)"),
        (["--config", "{tmp}/fifo.toml"], "not a regular file"),
        (["--config", "{tmp}/deep.toml"], "nested too deeply"),
        (["--config", "{tmp}/seed-negative.toml"], "seed-negative.toml: 'split_seed' must be a seed 0.."),
        (["--config", "{tmp}/seed-huge.toml"], "seed-huge.toml: 'split_seed' must be a seed 0.."),
        (["--config", "{tmp}/two-places.toml"], "two-places.toml: keys both under [app] and outside it"),
    ])
    @pytest.mark.slow
    def test_kepp_app_refuses_before_serving(self, files, argv, words):
        t0 = time.monotonic()
        r = _app(*[a.replace("{tmp}", str(files)) for a in argv])
        assert_one_line_error(r, words)
        assert time.monotonic() - t0 < 60

    @pytest.mark.slow
    def test_kepp_plan_never_calls_an_encoder_that_does_not_take_frames(self, tmp_path):
        video = tmp_path / "v.mp4"
        from kepp_core.video.write import write_video

        write_video(video, np.zeros((40, 32, 32, 3), np.uint8), 4)
        marker = tmp_path / "ran"
        r = run_kepp("plan", video, "--start", 0, 2, "--goal", 4, 6, "-T", 3, "--encoder", "os:system",
                     env={"KEPP_HOME": str(tmp_path / "home")}, cwd=tmp_path)
        assert_one_line_error(r, "does not take (frames, fps)")
        assert not marker.exists()


@pytest.mark.parametrize("variable, value, words", [
    ("KEPP_DEVICE", "cuda", ["KEPP_DEVICE=cuda: ", "run on the CPU with --device cpu"]),
    ("KEPP_APP_DEVICE", "cuda", ["KEPP_APP_DEVICE=cuda: ", "run on the CPU with --device cpu"]),
    ("KEPP_APP_BENCHMARK", "bogus", ["KEPP_APP_BENCHMARK: 'benchmark' must be one of", "crosstask-133"]),
    ("KEPP_APP_DATASET", "bogus", ["KEPP_APP_DATASET: 'dataset' must be one of", "split-lists"]),
    ("KEPP_APP_PRESENTATION", "yes", ["KEPP_APP_PRESENTATION='yes': expected 1"]),
])
def test_an_environment_variable_the_app_cannot_use_is_refused_before_it_serves(tmp_path, variable, value, words):
    """The environment's forms of the device and the app's keys refused as ``--device``, ``--benchmark`` and the
    config file's keys are (on a machine whose torch reports no CUDA GPU: ``tests/helpers/fake_cuda.py``)."""
    import signal
    import subprocess

    from kepp_core.api.serving import free_port

    env = {**os.environ, "PYTHONPATH": str(REPO), "KEPP_FAKE_GPUS": "0", variable: value}
    proc = subprocess.Popen([sys.executable, str(REPO / "tests" / "helpers" / "fake_cuda.py"), "app", "--port",
                             str(free_port())], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
                            env=env, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=90)
    except subprocess.TimeoutExpired:  # it serves: end it and its server (its own process group)
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
    assert_one_line_error(subprocess.CompletedProcess(proc.args, proc.returncode, out, err), *words)


def test_the_apps_start_configuration_refuses_a_variable_as_the_config_file_refuses_its_key():
    for variable, value in (("KEPP_APP_BENCHMARK", "bogus"), ("KEPP_APP_DATASET", "bogus"),
                            ("KEPP_APP_PRESENTATION", "yes")):
        with pytest.raises(KeppError, match=variable):
            AppConfig.from_env({variable: value})
    assert AppConfig.from_env({"KEPP_APP_BENCHMARK": "coin", "KEPP_APP_PRESENTATION": "1"}).benchmark == "coin"
