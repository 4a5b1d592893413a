"""The real app server and a real headless Chromium (Debian's ``chromium``, driven by Playwright
with ``executable_path``; no browser download), for the end-to-end tests."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.app_env import REPO

ARTIFACTS = REPO / "test-artifacts"


CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update"]


def chromium_path() -> str:
    path = shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(path).exists():
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("chromium is missing: CI installs Debian's chromium ('make browser')")
        pytest.skip("chromium is not installed ('make browser' installs Debian's package)")
    return path


def wait_until_healthy(url: str, proc: subprocess.Popen, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"the app server exited with status {proc.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise AssertionError(f"the app server did not answer within {timeout} s")


@contextlib.contextmanager
def app_server(opts) -> Iterator[str]:
    """``kepp app`` started with ``opts`` (an ``AppConfig``; its port is replaced by a free one):
    yields the server's URL once it answers, and stops it afterwards."""
    from kepp_core.commands.app import free_port, start_app

    opts = dataclasses.replace(opts, port=free_port())
    proc = start_app(opts)
    url = f"http://localhost:{opts.port}"
    try:
        wait_until_healthy(url, proc)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()


@contextlib.contextmanager
def env_server(env) -> Iterator[str]:
    """The app server on an environment's world, models and records (``app_env``, ``demo_env``)."""
    from kepp_core.api import AppConfig

    with app_server(AppConfig(dataset="demo", root=str(env.world), checkpoints=str(env.models),
                               predictions=str(env.records))) as url:
        yield url


@pytest.fixture(scope="module")
def server(app_env):
    """The app server on the test world, its models and records."""
    with env_server(app_env) as url:
        yield url


@pytest.fixture(scope="module")
def demo_server(demo_env):
    """The app server on the demo world with the shipped models and records."""
    with env_server(demo_env) as url:
        yield url


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    exe = chromium_path()
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS)
        yield b
        b.close()


def idle(page, timeout: float = 60_000) -> None:
    """Wait until Streamlit has finished running the script (no 'running' status widget)."""
    page.wait_for_function(
        "() => !document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=timeout)


def drawn_frame(page, script: str):
    """The first iframe with a vis.js canvas for which ``script`` (a JS function) is true, or None."""
    for frame in page.frames:
        try:
            if frame.locator("#mynetwork canvas").count() and frame.evaluate(script):
                return frame
        except Exception:  # a frame can detach while we look
            continue
    return None


def graph_frame(page, timeout: float = 30.0):
    """The iframe holding the pyvis drawing, once vis.js has drawn its nodes."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        frame = drawn_frame(page, "() => typeof network !== 'undefined' && network.body.data.nodes.length")
        if frame is not None:
            return frame
        time.sleep(0.2)
    raise AssertionError("no drawn graph (pyvis iframe with a canvas and nodes) in the page")
