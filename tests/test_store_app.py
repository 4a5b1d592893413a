"""The records store behind the app's pages (real app sessions): a records folder read whole whatever its files'
names, the files that are not records named on the page, and a page that never says no records were given when
files were skipped; records of another dataset a message, not a traceback."""

from __future__ import annotations

import pytest

from kepp_core.evaluation.records import write_records
from tests.helpers.app_session import open_page, texts

RECORD = {"seed": 0, "T": 3, "episode": "t/v/0:3", "video": "v", "task": "t", "setting": "conventional",
          "gt": [1, 2, 3], "plans": {"kepp-R1": [1, 2, 3], "pdpp": [1, 0, 3]},
          "success": {"kepp-R1": 1, "pdpp": 0}, "acc": {"kepp-R1": 1.0, "pdpp": 2 / 3}}
NO_RECORDS = "started without the evaluation's per-episode records"


def results(monkeypatch, env, tmp_path, folder):
    return open_page(monkeypatch, env, "views/5_Results.py", KEPP_HOME=tmp_path / "home", KEPP_APP_PREDICTIONS=folder)


@pytest.mark.slow
@pytest.mark.xdist_group("app")
def test_the_results_page_reads_every_records_file_and_names_the_others(monkeypatch, demo_env, tmp_path):
    folder = tmp_path / "compare"
    folder.mkdir()
    write_records(folder / "m1.jsonl", [RECORD])
    write_records(folder / "second run.jsonl", [{**RECORD, "seed": 1}])
    (folder / "notes.jsonl").write_text('{"note": 1}\n', encoding="utf-8")
    at = results(monkeypatch, demo_env, tmp_path, folder)
    assert not at.exception, texts(at.exception)
    warnings = texts(at.warning)
    assert len([w for w in warnings if "notes.jsonl" in w and "record lacks episode, gt, plans" in w]) == 1, warnings
    shown = " ".join(texts(at.caption) + texts(at.markdown) + texts(at.info) + texts(at.error))
    assert NO_RECORDS not in shown and "m1.jsonl" in shown and "second run.jsonl" in shown


@pytest.mark.slow
@pytest.mark.xdist_group("app")
def test_a_folder_of_files_that_are_not_records_is_never_called_no_records_given(monkeypatch, demo_env, tmp_path):
    folder = tmp_path / "compare"
    folder.mkdir()
    (folder / "notes.jsonl").write_text('{"note": 1}\n', encoding="utf-8")
    at = results(monkeypatch, demo_env, tmp_path, folder)
    assert not at.exception, texts(at.exception)
    shown = " ".join(texts(at.warning) + texts(at.info) + texts(at.markdown) + texts(at.error) + texts(at.caption))
    assert NO_RECORDS not in shown and "No readable prediction records: 1 file(s)" in shown, shown


@pytest.mark.slow
@pytest.mark.xdist_group("app")
def test_records_of_another_vocabulary_are_a_message_on_the_page(monkeypatch, demo_env, tmp_path):
    folder = tmp_path / "other"
    folder.mkdir()
    write_records(folder / "r.jsonl", [{**RECORD, "plans": {"pdpp": [1, 9999, 3]}}])
    at = results(monkeypatch, demo_env, tmp_path, folder)
    assert not at.exception, texts(at.exception)
    errors = texts(at.error)
    assert len([e for e in errors if "action id 9999" in e and "not of this dataset" in e]) == 1, errors
