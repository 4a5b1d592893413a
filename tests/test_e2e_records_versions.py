"""A records file edited under a running app: the cache keeps one version per records file (the tables of versions
no longer on disk deleted, kepp_core.evaluation.store.sources), with a real server and a real headless Chromium
reloading the Results page after every edit."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from kepp_core import api
from kepp_core.api import AppConfig
from kepp_core.evaluation.store import source_keys
from tests.helpers.browser import app_server, idle
from tests.helpers.data import small_record, write_records_world

EDITS = 20


@pytest.fixture
def small_world(tmp_path, monkeypatch) -> tuple[Path, Path]:
    """A plans-JSONL dataset of six actions and a records folder of two files, with the test's own cache home."""
    monkeypatch.setenv("KEPP_HOME", str(tmp_path / "home"))
    return write_records_world(tmp_path)


def test_a_records_file_edited_twenty_times_under_a_running_app_leaves_one_cached_version_per_file(small_world, browser):
    plans, folder = small_world
    edited, kept = folder / "edited.jsonl", folder / "kept.jsonl"
    cache = Path(os.environ["KEPP_HOME"]) / "records"
    with app_server(AppConfig(dataset="plans", root=str(plans), predictions=str(folder))) as url:
        page = browser.new_page()
        try:
            page.goto(f"{url}/Results")
            idle(page, timeout=120_000)
            seen = set()
            for k in range(EDITS):
                with open(edited, "a", encoding="utf-8") as f:  # one more record, as an evaluation still running adds
                    f.write(json.dumps(small_record(10 + k)) + "\n")
                seen.add(api.records_version(edited))
                page.reload()
                idle(page, timeout=120_000)
                page.get_by_text(f"of {21 + k}", exact=False).first.wait_for(timeout=30_000)
        finally:
            page.close()
    versions = {api.records_version(edited), api.records_version(kept)}
    assert len(seen) == EDITS  # every edit was a new version, read by the app
    assert {p.name for p in cache.glob("*.arrow")} == {f"{v}.arrow" for v in versions}
    assert source_keys() == {str(edited): api.records_version(edited), str(kept): api.records_version(kept)}
