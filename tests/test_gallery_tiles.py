"""The Gallery's grid without a browser: its filters and sorts agree with pandas on the same table, and a tile holds
hostile dataset text as text (every label escaped for HTML in Markdown, in elements and attributes alike)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from components.records.gallery import Browse, Tile, tile_html
from components.records.views import Ends, PlanView
from tests.helpers.markup import HOSTILE, assert_markdown_inert


def _table(n: int = 500, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    preds = pd.DataFrame({"method": rng.choice(["kepp-R2", "random", "pdpp"], n), "horizon": rng.integers(3, 7, n),
                          "seed": rng.choice([0.0, 1.0, np.nan], n), "task": rng.choice(["tea", "<b>x"], n),
                          "pattern": rng.choice(["", "other", "wrong_endpoint"], n),
                          "source": rng.choice(["a.jsonl", "b.jsonl"], n), "imported": [None] * n})
    preds["success"] = preds["pattern"] == ""
    extra = pd.DataFrame({"steps right": rng.integers(0, 6, n), "first right": rng.random(n) < 0.5,
                          "last right": rng.random(n) < 0.5})
    extra["ends right"] = extra["first right"] & extra["last right"]
    return preds, extra


def test_a_filter_keeps_the_rows_pandas_keeps_in_the_sort_pandas_makes():
    preds, extra = _table()
    b = Browse.of(preds, extra)
    got = b.rows({"method": ["kepp-R2", "pdpp"], "T": ["4", "6"], "first": ["wrong"], "seed": ["none", "1"]},
                 "steps", True)
    keep = (preds["method"].isin(["kepp-R2", "pdpp"]) & preds["horizon"].isin([4, 6]) & ~extra["first right"]
            & (preds["seed"].isna() | (preds["seed"] == 1)))
    want = extra["steps right"][keep].sort_values(ascending=False, kind="stable")
    assert len(got) == keep.sum() > 0
    assert got.tolist() == list(want.index)  # ties keep the records' order
    assert b.rows({"task": ["<b>x"], "outcome": ["success"]}).tolist() == \
        list(preds.index[(preds["task"] == "<b>x") & preds["success"]])


def test_a_tile_holds_hostile_labels_as_text():
    assert len(HOSTILE) >= 3
    for label in HOSTILE:  # the episode, the method, a step of the plan and of the truth, the imported file
        view = PlanView(view="Recorded", label=label, success=False, verdict="failure: other", episode=label,
                        ends=Ends(steps=None), plan=(label, "stir"), truth=("stir", label), plan_right=(False, False),
                        plan_ids=(1, 2), truth_ids=(2, 1), imported=label)
        html = tile_html(Tile(view=view, method=label, episode=label, horizon=2, seed=None, query={}))
        assert_markdown_inert(html, label, "gallery tile")
        assert 'data-success="false"' in html and "no video file" in html
