"""A records file that changes under the app: the table of its older version is let go of, even while a session
that showed it lives on (a reloaded tab's session stays for minutes), once no run that could read it is going;
and that session's page still runs."""

from __future__ import annotations

import json

import pytest

from tests.helpers.app_session import no_problems
from tests.helpers.data import small_record, write_records_world
from tests.helpers.app_env import APP


@pytest.fixture
def records_env(tmp_path, monkeypatch):
    monkeypatch.setenv("KEPP_HOME", str(tmp_path / "home"))
    plans, folder = write_records_world(tmp_path)
    for k, v in {"KEPP_THREADS": "1", "KEPP_APP_DATASET": "plans", "KEPP_APP_ROOT": str(plans),
                 "KEPP_APP_PREDICTIONS": str(folder)}.items():
        monkeypatch.setenv(k, v)
    return folder


def results(at_class):
    at = at_class.from_file(str(APP), default_timeout=120)
    at.switch_page("views/5_Results.py")
    return no_problems(at.run())


def held(backend, path) -> list:
    """What the app's caches made of the records files that include ``path`` (their table first, then its
    index and the method's rows the page asked for), as noted to be emptied when the files change."""
    made = [ref() for files, refs in backend._made.items() if str(path) in files for ref in refs]
    return [m for m in made if m is not None]


def test_a_superseded_records_table_is_emptied_when_no_run_reads_it_and_its_session_still_runs(records_env):
    from streamlit.testing.v1 import AppTest

    from components.records import backend

    first = results(AppTest)
    old, *derived = held(backend, records_env / "edited.jsonl")
    assert {type(d).__name__ for d in derived} >= {"RecordsIndex", "DataFrame"}  # its index, a method's rows
    with open(records_env / "edited.jsonl", "a", encoding="utf-8") as f:
        f.write(json.dumps(small_record(50)) + "\n")
    results(AppTest)  # a new tab: the new version read; no run of the old one is going
    assert len(old.columns) == 0 and not old.attrs and not backend._retired  # though the first session lives on
    assert all(len(d.columns) == 0 if hasattr(d, "columns") else d.methods == [] for d in derived)
    no_problems(first.run())  # the first tab's next run reads the new version
    new = held(backend, records_env / "edited.jsonl")[0]
    assert len(new) == 21  # ten records of each file, and the one added


def test_a_superseded_records_table_stays_whole_while_a_run_that_asked_for_it_is_going(records_env):
    import threading

    from streamlit.testing.v1 import AppTest

    from components.records import backend

    results(AppTest)
    old = held(backend, records_env / "edited.jsonl")[0]
    going, done = threading.Event(), threading.Event()
    reader = threading.Thread(target=lambda: (going.set(), done.wait(60)))  # a run still reading the old version
    reader.start()
    going.wait(10)
    with backend._lock:
        backend._readers.append((reader, 0.0))
    try:
        with open(records_env / "edited.jsonl", "a", encoding="utf-8") as f:
            f.write(json.dumps(small_record(51)) + "\n")
        results(AppTest)
        assert len(old.columns) > 0 and any(t is old for _, t in backend._retired)
    finally:
        done.set()
        reader.join()
    results(AppTest)  # the next run after that run ended empties it
    assert len(old.columns) == 0 and not backend._retired
