"""Seed everywhere episodes are listed, in real app sessions (AppTest) on the demo's records with a second seed
beside them: every row of Failure cases' and Results' lists names its seed, no two rows' labels read alike where
seeds differ (the select box's names neither), every CSV holds the seed, the episode shown beside a row is that
seed's, and a link with a plain episode id still opens its first seed. A one-run method against a two-seed one
shows each seed's numbers beside the combined CMH p."""

from __future__ import annotations

import io
import json

import pandas as pd
import pytest

from components.records import ab, episodes
from kepp_core import api, catalog
from tests.helpers.app_session import dataset, no_problems, open_page, texts, with_a_second_seed

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("app")]
RESULTS, FAILURES = "views/5_Results.py", "views/4_Failure_cases.py"


@pytest.fixture(scope="module")
def two_seeds(demo_env, tmp_path_factory):
    return with_a_second_seed(demo_env, tmp_path_factory.mktemp("seeds") / "two-seeds.jsonl")


def _episode_table(at) -> pd.DataFrame:
    (table,) = [d.value for d in at.dataframe if {"episode", "seed", "plan"} <= set(d.value.columns)]
    return table


def test_failure_case_rows_name_their_seed_and_no_two_labels_read_alike(monkeypatch, demo_env, two_seeds):
    preds = api.read_predictions([two_seeds])
    run = preds[(preds["method"] == "kepp-R2") & (preds["horizon"] == 3) & (preds["pattern"] == "wrong_endpoint")]
    assert run["episode"].duplicated().any() and run["seed"].nunique() == 2  # the same episodes, once per seed
    at = no_problems(open_page(monkeypatch, demo_env, FAILURES, {"method": "kepp-R2", "T": "3",
                                                                 "pattern": "wrong_endpoint"},
                               KEPP_APP_PREDICTIONS=str(two_seeds)))
    table = _episode_table(at)
    assert len(table) == min(50, len(run)) and not table["episode"].duplicated().any()
    assert set(table["seed"]) <= {0, 1} and all(lab.endswith(f" · seed {s}") for lab, s in zip(table["episode"],
                                                                                               table["seed"]))
    box = at.selectbox(key="fail_episode")
    assert len(set(box.options)) == len(box.options) == len(table)
    # the CSV of every page: one row per record, a seed column, no label twice
    csv = pd.read_csv(io.BytesIO(episodes.episodes_csv(run.reset_index(drop=True), dataset(demo_env))))
    assert len(csv) == len(run) and not csv["episode"].duplicated().any()
    assert sorted(csv["seed"]) == sorted(run["seed"].astype(int))
    # a link to seed 1's row opens the page that holds it, that row picked (seed 0's row of the episode is another)
    ep = run["episode"].iloc[0]
    at = no_problems(open_page(monkeypatch, demo_env, FAILURES, {"method": "kepp-R2", "T": "3",
                                                                 "pattern": "wrong_endpoint", "episode": f"{ep} · seed 1"},
                               KEPP_APP_PREDICTIONS=str(two_seeds)))
    assert at.selectbox(key="fail_episode").value == f"{ep} · seed 1"
    assert f" · seed 1" in at.selectbox(key="fail_episode").format_func(f"{ep} · seed 1")
    assert not [t for t in texts(at.warning) if "Not taken from this link" in t]


def test_results_lists_distinct_rows_per_seed_and_an_old_plain_episode_link_opens_its_first_seed(
        monkeypatch, demo_env, two_seeds):
    preds = api.read_predictions([two_seeds])
    first = preds[(preds["method"] == "kepp-R2") & (preds["horizon"] == 3)].iloc[0]
    at = no_problems(open_page(monkeypatch, demo_env, RESULTS, {"method": "kepp-R2", "T": "3",
                                                                "episode": first["episode"]},
                               KEPP_APP_PREDICTIONS=str(two_seeds)))
    table = _episode_table(at)
    assert not table["episode"].duplicated().any() and set(table["seed"]) <= {0, 1}
    assert at.selectbox(key="res_episode").value == f"{first['episode']} · seed {int(first['seed'])}"
    assert not [t for t in texts(at.warning) if "Not taken from this link" in t]


def test_a_one_run_method_against_two_seeds_shows_each_seeds_numbers_beside_the_cmh_p(monkeypatch, demo_env,
                                                                                       tmp_path):
    """An imported-shaped method (no seed) beside kepp-R2's two seeds: the tile says CMH over seeds and the seed
    table holds each seed's b, c and McNemar p as the API computes them."""
    folder = tmp_path / "records"
    folder.mkdir()
    records = with_a_second_seed(demo_env, folder / "two-seeds.jsonl")
    kept = ("T", "episode", "video", "task", "start_time", "goal_time", "gt")
    one_run = [{k: r[k] for k in kept if k in r} | {"plans": {"vpn": r["plans"]["kepp-nograph"]}}
               for r in map(json.loads, records.read_text().splitlines()) if r["seed"] == 0 and r["T"] == 3]
    (folder / "vpn.jsonl").write_text("".join(json.dumps(r) + "\n" for r in one_run))
    preds = api.read_predictions(sorted(folder.glob("*.jsonl")))
    c = api.compare_methods(preds, "kepp-R2", "vpn", 3)
    assert c.stratified and c.one_run == "vpn" and [t.seed for t in c.per_seed] == [0, 1]
    at = no_problems(open_page(monkeypatch, demo_env, RESULTS, {"method": "kepp-R2", "T": "3", "a": "kepp-R2",
                                                                "b": "vpn"},
                               KEPP_APP_PREDICTIONS=str(folder)))
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["p (CMH over seeds)"] == catalog.p_text(c.p) and "p (McNemar)" not in metrics
    (seeds,) = [d.value for d in at.dataframe if "p (McNemar, this seed)" in d.value.columns]
    pd.testing.assert_frame_equal(seeds.reset_index(drop=True), ab.seed_table(c), check_dtype=False)
    assert any("Cochran–Mantel–Haenszel" in t for t in texts(at.caption))


def test_a_playlists_items_name_their_seed(monkeypatch, demo_env, tmp_path):
    """Two items of one episode, one per seed: the Playlists page's lines say which seed each plays."""
    from components.talk import playlists
    from kepp_core.evaluation.playlists import PlaylistStore

    records = with_a_second_seed(demo_env, tmp_path / "two-seeds.jsonl")
    preds = api.read_predictions([records])
    rows = preds[(preds["method"] == "kepp-R2") & (preds["episode"] == preds["episode"].iloc[0])]
    assert sorted(rows["seed"]) == [0, 1]
    PlaylistStore(tmp_path / "playlists").add("talk", [playlists.item_of_row(r) for r in rows.to_dict("records")])
    at = no_problems(open_page(monkeypatch, demo_env, "views/7_Playlists.py", {"playlist": "talk"},
                               KEPP_APP_PREDICTIONS=str(records)))
    lines = [str(m.value).split("  \n")[0] for m in at.markdown if " · T=" in str(m.value)]
    assert len(lines) == 2 and len(set(lines)) == 2
    assert [line.endswith(f" · seed {s}") for line, s in zip(lines, sorted(rows["seed"]))] == [True, True]
