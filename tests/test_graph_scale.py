"""The graph at scale: sparse counts, the streamed build equal to the in-memory build, the
compact file, and the bounded per-task statistics (small corpora here; sizes in the benchmark); the
loader and the streamed build refuse a bad plans line with the same error."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

from kepp_core.data import load_plans
from kepp_core.errors import KeppError
from kepp_core.graph import (ProcedureGraph, TaskStats, build_graph, expert_trajectories, fit_prior, load_graph,
                             make_scorer, retrieve, task_transition_matrix)
from kepp_core.graph.sparse import EdgeCounts
from kepp_core.graph.stream import stream_graph
from kepp_core.paths import REPO_ROOT
from tests.helpers.cli import assert_one_line_error, run_kepp
from tests.helpers.data import write_small_plans

ROOT = REPO_ROOT


def _corpus(path: Path, plans: int = 3000, seed: int = 0, numeric: bool = False) -> Path:
    """A plans-JSONL corpus with repeated plans, lines without split, segments that reorder
    steps and blank lines: everything the streamed build must read like ``load_plans``."""
    rng = random.Random(seed)
    label = (lambda a: str(a)) if numeric else (lambda a: f"step {a:03d}")
    procs = {f"task{t}": [rng.sample(range(60), rng.randint(3, 8)) for _ in range(6)] for t in range(7)}
    lines = []
    for i in range(plans):
        task = rng.choice(sorted(procs))
        steps = [label(a) for a in rng.choice(procs[task])]
        rec = {"video": f"vid{i:05d}", "task": task, "steps": steps}
        if i % 3:
            rec["split"] = "test" if i % 10 == 7 else "train"
        if i % 11 == 0 and len(steps) > 1:  # segments listed out of order: the loader sorts by them
            rec["segments"] = [[float(len(steps) - k), float(len(steps) - k) + 0.5] for k in range(len(steps))]
        lines.append(json.dumps(rec))
        if i % 500 == 0:
            lines.append("")
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("numeric", [False, True])
def test_streamed_build_equals_the_in_memory_build(tmp_path, numeric):
    path = _corpus(tmp_path / "plans.jsonl", numeric=numeric)
    ref = build_graph(load_plans(path))
    g = stream_graph(path)
    assert g.actions == ref.actions and g.counts == ref.counts
    assert np.array_equal(g.start_counts, ref.start_counts) and np.array_equal(g.end_counts, ref.end_counts)
    assert g.train_plans() == ref.train_plans()
    assert g.to_json() == ref.to_json()
    ref.save(tmp_path / "ref.json")
    g.save(tmp_path / "streamed.json")
    assert (tmp_path / "ref.json").read_bytes() == (tmp_path / "streamed.json").read_bytes()
    rng = random.Random(1)
    for method in ("p2kg", "pkg"):
        a, b = make_scorer(ref, method), make_scorer(g, method)
        for _ in range(40):
            s, e, t = rng.randrange(g.num_actions), rng.randrange(g.num_actions), rng.randint(3, 6)
            assert retrieve(g, s, e, t, 5, b) == retrieve(ref, s, e, t, 5, a)


def test_streamed_build_with_its_seed_follows_the_loaders_split(tmp_path):
    path = _corpus(tmp_path / "plans.jsonl", plans=400)
    assert stream_graph(path, seed=3).to_json() == build_graph(load_plans(path, seed=3)).to_json()


def test_streamed_build_rejects_what_the_loader_rejects(tmp_path):
    path = tmp_path / "plans.jsonl"
    path.write_text('{"video": "a", "task": "t", "steps": ["x", "y"]}\n{"video": "a", "task": "t", "steps": ["y"]}\n')
    with pytest.raises(KeppError, match=r"plans.jsonl:2: duplicate video id 'a'"):
        stream_graph(path)
    path.write_text('{"video": "a", "task": "t", "steps": "x"}\n')
    with pytest.raises(KeppError, match=r"plans.jsonl:1: 'steps' must be a list"):
        stream_graph(path)
    path.write_text('{"video": "a", "task": "t", "split": "test", "steps": ["x"]}\n')
    with pytest.raises(KeppError, match="no train plans"):
        stream_graph(path)


def test_compact_file_round_trips_and_loads_like_the_json(tmp_path, niv_plans):
    g = build_graph(load_plans(niv_plans))
    g.params["history_prior"] = 5
    g.save(tmp_path / "graph.safetensors")
    back = load_graph(tmp_path / "graph.safetensors", load_plans(niv_plans))
    assert back.to_json() == g.to_json()
    assert {t: s for t, s in back.tasks.items()} == g.tasks
    assert [p.name for p in tmp_path.iterdir()] == ["graph.safetensors"]  # no temp leftovers
    assert retrieve(back, 0, 3, 4, 5, "history") == retrieve(g, 0, 3, 4, 5, "history")


def test_corrupt_compact_file_is_a_clear_error(tmp_path):
    bad = tmp_path / "graph.safetensors"
    bad.write_bytes(b"not a safetensors file")
    with pytest.raises(KeppError, match="graph.safetensors"):
        load_graph(bad)


def test_existing_json_graphs_load_unchanged():
    files = sorted(ROOT.glob("assets/demo/T*/plan-*/graph.json"))
    assert len(files) >= 3  # the shipped demo (in the repository): every plan-* model keeps a graph.json
    for f in files[:3]:
        obj = json.loads(f.read_text())
        assert load_graph(f).to_json() == obj


def test_sparse_counts_answer_like_the_dense_matrix():
    rng = np.random.default_rng(0)
    dense = rng.integers(0, 3, (7, 7)) * (rng.random((7, 7)) < 0.4)
    c = EdgeCounts.from_dense(dense)
    assert c.tolist() == dense.tolist() and np.array_equal(np.asarray(c), dense)
    assert all(int(c[u, v]) == dense[u, v] for u in range(7) for v in range(7))
    assert c[:, 3].tolist() == dense[:, 3].tolist() and c[2].tolist() == dense[2].tolist()
    assert c.sum() == dense.sum() and c.sum(axis=1).tolist() == dense.sum(axis=1).tolist()
    assert c.sum(axis=0).tolist() == dense.sum(axis=0).tolist() and c.nnz == int((dense > 0).sum())


def test_task_statistics_keep_distinct_plans_not_every_plan():
    plans = [(0, 1, 2)] * 5000 + [(0, 2)] * 3000 + [(1, 2)]
    g = ProcedureGraph.from_plans(list("abc"), plans)
    stats = g.tasks[""]
    assert stats.distinct == [(0, 1, 2), (0, 2), (1, 2)] and stats.counts == [5000, 3000, 1]
    assert stats.videos == 8001 and stats.order.itemsize == 4 and g.train_plans() == plans
    assert g.counts.tolist() == [[0, 5000, 3000], [0, 0, 5001], [0, 0, 0]]
    df = expert_trajectories(g, "")
    assert df["count"].tolist() == [5001, 5000, 3000]
    assert task_transition_matrix(g, "", normalize=False).values.tolist() == [[0, 5000, 3000], [0, 0, 5001],
                                                                                 [0, 0, 0]]
    assert make_scorer(g, "history", ).windows(0, 2, 3)[(0, 1, 2)] == 5000


def test_views_from_counted_plans_equal_views_from_every_plan(niv_plans):
    g = build_graph(load_plans(niv_plans))
    assert len(g.tasks) == 5  # NIV's five tasks
    for task, stats in g.tasks.items():
        plans = stats.plans
        every = task_transition_matrix(g, task, plans=plans)
        assert task_transition_matrix(g, task).equals(every)
        assert TaskStats.from_plans(stats.name, plans) == stats


def test_cross_validation_of_a_huge_graph_uses_a_deterministic_sample():
    plans = [(0, 1, 2)] * 60 + [(0, 2, 2)] * 20
    g = ProcedureGraph.from_plans(list("abc"), plans)
    small = fit_prior(g, priors=(1, 10), horizons=(3,), max_plans=40)
    assert small == fit_prior(ProcedureGraph.from_plans(list("abc"), plans[::2]), priors=(1, 10), horizons=(3,))


def test_benchmark_corpus_is_deterministic(tmp_path):
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_graph_scale", ROOT / "benchmarks" / "bench_graph_scale.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    bench.write_corpus(a, 2000, progress=False)
    bench.write_corpus(b, 2000, progress=False)
    assert a.read_bytes() == b.read_bytes()
    g = stream_graph(a)
    assert g.num_actions <= bench.ACTIONS and g.to_json() == build_graph(load_plans(a)).to_json()


# --- one set of per-line checks for the loader and the streamed build -----------------
BAD_PLAN_LINES = {
    "invalid-utf8": (b'{"video":"\xff\xfe","task":"t","steps":["a"]}\n', "UTF-8"),
    "binary-garbage": (bytes(range(256)) + b"\n", ":7:"),
    "empty-steps": (b'{"video":"x","task":"t","steps":[]}\n', "'steps'"),
    "empty-label": (b'{"video":"x","task":"t","steps":["a","  "]}\n', "empty step label"),
    "nan-segment": (b'{"video":"x","task":"t","steps":["a","b"],"segments":[[NaN,1],[1,2]]}\n', "NaN (not a JSON number)"),
    "overlapping-segments": (b'{"video":"x","task":"t","steps":["a","b"],"segments":[[0,3],[1,2]]}\n', "overlap"),
    "text-duration": (b'{"video":"x","task":"t","steps":["a"],"duration":"long"}\n', "'duration'"),
    "duration-of-1e8-seconds": (b'{"video":"x","task":"t","steps":["a"],"duration":1e8}\n', "too long"),
    "segment-ending-after-1e8-seconds": (b'{"video":"x","task":"t","steps":["a"],"segments":[[0,1e8]]}\n', "1e+08"),
    "not-an-object": (b'[1, 2]\n', "JSON object"),
    "duplicate-video": (b'{"video":"v0","task":"t","steps":["a"]}\n', "'v0'"),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(BAD_PLAN_LINES))
def test_stats_and_the_streamed_build_refuse_a_bad_plans_line_with_the_same_error(tmp_path, case):
    last, needle = BAD_PLAN_LINES[case]
    write_small_plans(tmp_path / "plans.jsonl", last)
    stats = run_kepp("data", "stats", "--dataset", "plans", "--root", "plans.jsonl", cwd=tmp_path)
    build = run_kepp("graph", "build", "--dataset", "plans", "--root", "plans.jsonl", "--out", "g.json", cwd=tmp_path)
    line = assert_one_line_error(stats, "plans.jsonl:7", needle)
    assert assert_one_line_error(build) == line
    assert not (tmp_path / "g.json").exists()


@pytest.mark.slow
@pytest.mark.parametrize("labels", [["²", "1"], ["--5", "1"], ["-3", "2", "10"], ["٣", "1"], ["1", "a"]])
def test_labels_that_look_numeric_index_alike_in_the_loader_and_the_streamed_build(tmp_path, labels):
    rows = [{"video": f"v{i}", "task": "t", "split": "train", "steps": labels} for i in range(3)]
    (tmp_path / "plans.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    r = run_kepp("graph", "build", "--dataset", "plans", "--root", "plans.jsonl", "--out", "g.json", "--no-fit",
                 cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert json.loads((tmp_path / "g.json").read_text())["actions"] == load_plans(tmp_path / "plans.jsonl").actions
