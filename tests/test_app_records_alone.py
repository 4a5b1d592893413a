"""Records by themselves: ``kepp app --predictions FOLDER`` whose records are of no known dataset opens them at once,
steps named by a taxonomy file, else by the records' own labels, else by their id; no world is built for them, and
the pages that need a dataset say so in one line."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from kepp_core.data.step_names import read_step_names
from tests.helpers.app_session import open_page
from tests.helpers.cli import assert_one_line_error, run_kepp

NAMES = {0: "whisk eggs", 1: "heat pan", 2: "pour batter", 3: "flip", 4: "serve", 5: "chop", 6: "fry", 7: "plate"}


def write_records(folder: Path, labels: bool = True) -> Path:
    """40 records of two tasks no dataset of this package knows (omelette, stirfry), two methods; action ids 0..7
    named by the records' ``gt_labels`` (where ``labels``), and ids 9 and 10 that only plans name."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = []
    for k in range(40):
        task = "omelette" if k % 2 else "stirfry"
        gt = [k % 8, (k + 3) % 8, (k + 5) % 8]
        rec = {"seed": 0, "T": 3, "episode": f"{task}/vid{k:03d}/0:3", "video": f"vid{k:03d}", "task": task, "gt": gt,
               **({"gt_labels": [NAMES[a] for a in gt]} if labels else {}),
               "plans": {"method-a": gt if k % 3 else [gt[0], 9, gt[2]],
                         "method-b": [gt[0], gt[1], 10 if k % 4 == 0 else gt[2]]}}
        lines.append(json.dumps(rec))
    (folder / "run-records.jsonl").write_text("\n".join(lines) + "\n")
    return folder


@dataclass(frozen=True)
class AloneEnv:
    """The app started with records only (no dataset named), in a cache home of its own."""

    records: Path
    home: Path
    taxonomy: Path | None = None

    def environ(self) -> dict[str, str | None]:
        return {"KEPP_HOME": str(self.home), "KEPP_APP_PREDICTIONS": str(self.records), "KEPP_APP_DATASET": None,
                "KEPP_APP_ROOT": None, "KEPP_APP_CHECKPOINTS": None,
                "KEPP_APP_TAXONOMY": None if self.taxonomy is None else str(self.taxonomy)}


def _tables(at) -> str:
    return "\n".join(d.value.to_string() for d in at.dataframe) + "\n".join(m.value for m in at.markdown)


@pytest.mark.slow
def test_records_of_no_known_dataset_open_by_themselves_named_by_their_labels(monkeypatch, tmp_path):
    env = AloneEnv(write_records(tmp_path / "records"), tmp_path / "home")
    at = open_page(monkeypatch, env, "views/5_Results.py")
    assert not at.exception and not at.error, [e.value for e in (*at.exception, *at.error)]
    shown = _tables(at)
    assert "whisk eggs" in shown and "step 9" in shown  # the records' names; an id nothing names, by its id
    assert "method-a" in shown and "method-b" in shown
    at = open_page(monkeypatch, env, "views/4_Failure_cases.py", {"pattern": "other"})
    assert not at.exception and not at.error, [e.value for e in (*at.exception, *at.error)]
    assert "step 9" in _tables(at) or "step 10" in _tables(at)
    at = open_page(monkeypatch, env, "views/1_Plan.py")
    (line,) = [i.value for i in at.info]
    assert "The Plan page needs a dataset" in line and not at.exception
    # no world was built for them: the cache home holds no demo world (nor anything but the records' cache)
    assert not (env.home / "demo-world").exists() and sorted(p.name for p in env.home.iterdir()) == ["records"]


@pytest.mark.slow
def test_a_taxonomy_file_names_the_records_steps(monkeypatch, tmp_path):
    taxonomy = tmp_path / "steps.csv"
    taxonomy.write_text("id,name\n9,crack egg\n0,beat eggs\n")
    env = AloneEnv(write_records(tmp_path / "records", labels=False), tmp_path / "home", taxonomy)
    at = open_page(monkeypatch, env, "views/5_Results.py")
    assert not at.exception and not at.error, [e.value for e in (*at.exception, *at.error)]
    shown = _tables(at)
    assert "crack egg" in shown and "beat eggs" in shown and "step 3" in shown and "whisk eggs" not in shown


def test_taxonomy_files_are_read_strictly(tmp_path):
    flat = tmp_path / "flat.json"
    flat.write_text(json.dumps({"0": "whisk eggs", "17": "serve"}))
    assert read_step_names(flat) == {0: "whisk eggs", 17: "serve"}
    vpn = tmp_path / "vpn_taxonomy.json"
    vpn.write_text(json.dumps({"0_x_omelette": {"0": "whisk eggs", "1": "heat pan"}}))
    assert read_step_names(vpn) == {0: "whisk eggs", 1: "heat pan"}
    good = tmp_path / "steps.csv"
    good.write_text("id,name\n3,flip\n")
    assert read_step_names(good) == {3: "flip"}
    from kepp_core.errors import KeppError

    for name, text, words in (
            ("a.csv", "number,label\n1,x\n", ("line 1", "expected the header 'id,name'")),
            ("b.csv", "id,name\n1,x\nseven,y\n", ("line 3", "'seven'", "expected a whole number")),
            ("c.csv", "id,name\n1,x\n1,y\n", ("line 3", "action id 1 is named twice")),
            ("d.csv", "id,name\n1,x,z\n", ("line 2", "3 fields")),
            ("e.csv", "id,name\n1, \n", ("line 2", "step name", "expected text")),
            ("f.json", json.dumps({"-1": "x"}), ("key '-1'", "expected a whole number")),
            ("g.json", json.dumps({"1": 5}), ("key '1'", "step name 5")),
            ("h.json", "[1, 2]", ("h.json",)),
            ("i.txt", "1,x", ("expected a taxonomy file ending in .json or .csv",))):
        path = tmp_path / name
        path.write_text(text)
        with pytest.raises(KeppError) as e:
            read_step_names(path)
        message = str(e.value)
        assert "\n" not in message and str(path) in message and all(w in message for w in words), message


@pytest.mark.slow
def test_kepp_app_refuses_a_bad_taxonomy_in_one_line_before_the_server_starts(tmp_path):
    records = write_records(tmp_path / "records")
    bad = tmp_path / "steps.csv"
    bad.write_text("id,name\n1,x\nseven,y\n")
    r = run_kepp("app", "--predictions", records, "--taxonomy", bad, "--port", 8651,
                 env={"KEPP_HOME": str(tmp_path / "home")})
    assert_one_line_error(r, str(bad), "line 3", "expected a whole number")
    assert not (tmp_path / "home" / "demo-world").exists()
