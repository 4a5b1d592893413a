"""A records file that changes under the app: the table of its older version is let go of, even while a session
that showed it lives on (a reloaded tab's session stays for minutes), and that session's page still runs."""

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


def test_a_superseded_records_table_is_emptied_once_its_runs_are_over_and_its_session_still_runs(records_env,
                                                                                                  monkeypatch):
    from streamlit.testing.v1 import AppTest

    from components.records import backend

    first = results(AppTest)
    (old,) = [t for files, t in backend._tables.items() if str(records_env / "edited.jsonl") in files]
    with open(records_env / "edited.jsonl", "a", encoding="utf-8") as f:
        f.write(json.dumps(small_record(50)) + "\n")
    results(AppTest)  # a new tab: the new version read, the old table retired
    assert len(old.columns) == 21 and any(t is old for _, t in backend._retired)  # a run may still read it
    monkeypatch.setattr(backend, "RETIRED_S", 0.0)
    results(AppTest)  # its time is up: emptied, though the first session (and its page's variables) lives on
    assert len(old.columns) == 0 and not old.attrs and not backend._retired
    no_problems(first.run())  # the first tab's next run reads the new version
    (new,) = [t for files, t in backend._tables.items() if str(records_env / "edited.jsonl") in files]
    assert len(new) == 21  # ten records of each file, the one added
