"""Planning with graph decoding outside evaluation (docs, Models and training: planning from a video):
``kepp plan`` on a real mp4 of the demo world plans as the Plan page does, its bad inputs are one-line
errors, its per-step numbers are the planner's, and a read-only models folder plans and evaluates with
nothing written into it (the decoding choice goes to KEPP's cache home)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from tests.helpers.app_session import no_problems, open_page
from tests.helpers.cli import assert_one_line_error, run_kepp
from tests.helpers.cli import in_process, one_error

ASSETS = Path(__file__).resolve().parent.parent / "assets" / "demo"


def _snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``folder`` with its size and modification time."""
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*"))}


@pytest.fixture(scope="module")
def demo_world():
    from kepp_core.data import load_dataset
    from kepp_core.data.synth import ensure_world

    if not (ASSETS / "T3" / "step" / "config.json").is_file():
        pytest.skip("no shipped demo checkpoints in assets/demo")
    root = ensure_world(progress=False)
    return root, load_dataset("demo", root)


@pytest.fixture()
def home(tmp_path) -> dict[str, str]:
    """A private cache home for the command (the demo world itself is passed with --root)."""
    return {"KEPP_HOME": str(tmp_path / "home"), "KEPP_THREADS": "1"}


def _episode(ds, horizon: int = 3):
    """A test video of the demo world and its first episode's start and goal clips (seconds)."""
    from kepp_core import api

    video = next(v for v in ds.split("test") if v.video_file is not None and len(v.steps) >= horizon)
    start, goal = api.episode_clips(video, 0, horizon, "conventional", 3)
    return video, start, goal


@pytest.mark.slow
def test_kepp_plan_on_a_demo_mp4_plans_as_the_plan_page(monkeypatch, demo_env, demo_world, home):
    root, ds = demo_world
    video, start, goal = _episode(ds)
    r = run_kepp("plan", video.video_file, "--start", *start, "--goal", *goal, "-T", 3, "-R", 1, "--models", ASSETS,
                 "--root", root, "--json", env=home)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    # the Plan page on the same file, loaded as an upload (encoded from its pixels), same clips, the model's
    # own R (the only one the page offers a model trained with R = 1)
    query = {"T": "3", "R": "1", "source": "upload", "upload": video.id, "ep": "0", "model": "graph-R1",
             "start": f"{start[0]:g}-{start[1]:g}", "goal": f"{goal[0]:g}-{goal[1]:g}", "plan": "1"}
    at = no_problems(open_page(monkeypatch, demo_env, "views/1_Plan.py", query, KEPP_HOME=home["KEPP_HOME"]))
    page = at.session_state["plan_result"]["result"]
    assert out["plan"] == list(page.plan) and out["raw_plan"] == list(page.raw_plan)
    assert out["endpoints"] == list(page.step_endpoints) and out["decoding"] == page.decoding
    assert out["decoding"] is not None and out["decoding"]["source"] == str(ASSETS / "T3" / "decoding.json")
    assert out["why"] == page.why and len(out["why"]) == 3
    assert [p["actions"] for p in out["paths"]] == [list(p) for p in page.paths]
    # the most probable first steps of the distribution the plan was decoded with: the endpoint model's
    # under joint decoding (the shipped T=3 choice), the step model's otherwise
    assert out["endpoint_top"] == page.endpoint_top()
    joint = out["decoding"]["endpoints"] == "endpoint model"
    assert joint == (page.endpoint_model_probs is not None)
    probs = page.endpoint_model_probs if joint else page.step_probs
    top = out["endpoint_top"]["first"]
    best = int(np.argmax(probs[0]))
    assert top[0]["action"] == best and top[0]["label"] == ds.actions[best]
    assert top[0]["probability"] == pytest.approx(float(probs[0, best]), abs=1e-4)
    if not joint:
        assert best == out["endpoints"][0]
    assert [e["probability"] for e in top] == sorted((e["probability"] for e in top), reverse=True)


@pytest.mark.slow
def test_why_this_plan_shows_the_planners_numbers(monkeypatch, demo_env, demo_world):
    from kepp_core.graph import load_graph
    from kepp_core.graph.decoding import transition_log_probs

    _, ds = demo_world
    video, start, goal = _episode(ds)
    query = {"T": "3", "video": video.id, "ep": "0", "model": "graph-R1", "plan": "1",
             "start": f"{start[0]:g}-{start[1]:g}", "goal": f"{goal[0]:g}-{goal[1]:g}"}
    at = no_problems(open_page(monkeypatch, demo_env, "views/1_Plan.py", query))
    result = at.session_state["plan_result"]["result"]
    table = next(t.value for t in at.table if "planner score" in t.value.columns)
    assert table["plan"].tolist() == ds.labels(result.plan)
    assert table["before decoding"].tolist() == ds.labels(result.raw_plan)
    assert table["changed"].tolist() == ["changed" if c else "" for c in result.changed]
    assert table["planner score"].tolist() == [w["score"] for w in result.why]
    # and those are the planner's scores: the graph's P(b | a), the step model's endpoint probabilities
    p = np.exp(transition_log_probs(load_graph(ASSETS / "T3" / "plan-graph-R1" / "graph.json")))
    plan = result.plan
    assert table["graph transition"].tolist()[1:] == pytest.approx([p[a, b] for a, b in zip(plan, plan[1:])], abs=1e-4)
    ends = table["endpoint probability"].tolist()
    assert ends[0] == pytest.approx(result.decoded_ends_probs[0, plan[0]], abs=1e-4)
    assert ends[-1] == pytest.approx(result.decoded_ends_probs[1, plan[-1]], abs=1e-4)
    assert all(np.isnan(x) for x in ends[1:-1])
    assert any("Decoded with the graph" in c.value for c in at.caption)
    # the plan before and after decoding side by side, the changed steps marked
    at.toggle(key="plan_why_raw").set_value(True).run()
    html = "".join(m.value for m in at.markdown if "kepp-why-card" in m.value)
    assert html.count('class="kepp-why-card"') == 2 * len(plan)
    assert html.count('data-changed="true"') == 2 * sum(result.changed)


@pytest.mark.slow
@pytest.mark.parametrize("case", ["not a video", "missing", "outside", "start after goal", "short clip", "no horizon"])
def test_kepp_plan_bad_inputs_are_one_line_errors(case, demo_world, home, tmp_path):
    root, ds = demo_world
    video, start, goal = _episode(ds)
    path, s, g, T = video.video_file, list(start), list(goal), 3
    words = []
    if case == "not a video":
        path = tmp_path / "notes.mp4"
        path.write_text("these are not video frames\n")
        words = ["notes.mp4", "cannot decode video"]
    elif case == "missing":
        path, words = tmp_path / "gone.mp4", ["gone.mp4", "file not found"]
    elif case == "outside":
        g, words = [goal[0], 999], ["--goal", "outside the video", f"{video.duration:.1f} s long"]
    elif case == "start after goal":
        s, g, words = list(goal), list(start), ["--goal", "before --start"]
    elif case == "short clip":
        s, words = [start[0], start[0] + 1.5], ["start clip", "observation window of 3 s"]
    else:
        T, words = 9, ["T=9", "trained horizons: 3, 4, 5, 6"]
    r = run_kepp("plan", path, "--start", *s, "--goal", *g, "-T", T, "--models", ASSETS, "--root", root, env=home)
    assert_one_line_error(r, *words)


@pytest.mark.slow
def test_a_read_only_models_folder_plans_and_evaluates_with_nothing_written_into_it(demo_world, home, tmp_path):
    root, ds = demo_world
    models = tmp_path / "models"
    shutil.copytree(ASSETS / "T3", models / "T3")
    (models / "T3" / "decoding.json").unlink(missing_ok=True)  # no shipped choice: it must be chosen now
    for p in [*models.rglob("*"), models]:
        p.chmod(p.stat().st_mode & ~0o222)
    before = _snapshot(models)
    try:
        video, start, goal = _episode(ds)
        r = run_kepp("plan", video.video_file, "--start", *start, "--goal", *goal, "-T", 3, "--models", models,
                     "--root", root, "--json", env=home)
        assert r.returncode == 0, r.stderr
        out = json.loads(r.stdout)
        cached = Path(out["decoding"]["source"])
        assert cached.is_file() and cached.is_relative_to(home["KEPP_HOME"])
        r = run_kepp("eval", "--root", root, "--models", models, "-T", 3, "--methods", "kepp-R1", "kepp-R1+dec",
                     "--json", env=home)
        assert r.returncode == 0, r.stderr
        rows = {x["method"]: x for x in json.loads(r.stdout)["rows"]}
        assert set(rows) == {"kepp-R1", "kepp-R1+dec"}
        assert _snapshot(models) == before  # nothing written, renamed or touched in the models folder
        # evaluation read the planner's choices (one file, one entry per row: the graph decoding and,
        # the endpoint model being there, the joint decoding the planner weighed against it)
        assert sorted(json.loads(cached.read_text())) == ["kepp-R1", "kepp-R1+jdec"]
    finally:
        for p in [models, *models.rglob("*")]:
            p.chmod(p.stat().st_mode | 0o200)


@pytest.mark.slow
def test_save_decoding_stores_the_choice_with_the_models(demo_world, home, tmp_path):
    root, _ = demo_world
    models = tmp_path / "models"
    shutil.copytree(ASSETS / "T3", models / "T3")
    (models / "T3" / "decoding.json").unlink(missing_ok=True)
    r = run_kepp("eval", "--root", root, "--models", models, "-T", 3, "--methods", "kepp-nograph+dec", "--json",
                 env=home)
    assert r.returncode == 0, r.stderr
    assert not (models / "T3" / "decoding.json").exists()
    r = run_kepp("eval", "--root", root, "--models", models, "-T", 3, "--methods", "kepp-nograph+dec", "--json",
                 "--save-decoding", env=home)
    assert r.returncode == 0, r.stderr
    stored = json.loads((models / "T3" / "decoding.json").read_text())
    assert list(stored) == ["kepp-nograph"] and stored["kepp-nograph"]["choice"]["mode"] in ("free", "pinned", "topk")


def test_why_cards_and_decoding_text_show_hostile_strings_as_text():
    from components.plan import why

    hostile = "</script><script>window.__kepp_pwned=1</script><img src=x onerror=alert(1)>"
    html = why.plan_cards([hostile, "b"], [True, False], hostile, "#fff")
    assert "<script>" not in html and "<img" not in html and "&lt;script&gt;" in html
    assert html.count('data-changed="true"') == 1 and html.count('class="kepp-why-card"') == 2
    from kepp_core.planner import describe_decoding

    text = why.decoding_text(describe_decoding({"mode": hostile, "lam": hostile, "k": 3}))
    assert "<script>" not in text and "](" not in text.replace("\\]", "").replace("\\(", "")


@pytest.mark.parametrize("model", ["graph-R1", "graph-R1-struct"])
def test_the_planner_decodes_as_its_rows_choice_and_owns_its_endpoint_model(demo_world, model):
    """The shipped T=3 folder holds the endpoint model: the planner takes the +jdec row's choice when
    its validation SR beats the +dec row's, then loads the endpoint model itself and decodes with its
    distributions; the result keeps the step model's and the endpoint model's probabilities apart."""
    from kepp_core import api, catalog
    from kepp_core.api.planning import observation
    from kepp_core.errors import KeppError
    from kepp_core.graph.decoding import DecodeChoice, decode_block
    from kepp_core.models.endpoints import EndpointModel
    from kepp_core.planner import PlannerDecoding

    _, ds = demo_world
    role = catalog.parse_plan_model_id(model)
    base = catalog.planner_method(role).name
    stored = json.loads((ASSETS / "T3" / "decoding.json").read_text())
    dec, jdec = stored[base], stored[base + catalog.JOINT_DECODING.suffix]
    planner = api.load_planner(ASSETS, 3, role)
    joint = jdec["val_SR"] > dec["val_SR"]
    assert planner.decoding.method == base + (catalog.JOINT_DECODING if joint else catalog.GRAPH_DECODING).suffix
    assert planner.decoding.choice == DecodeChoice(**(jdec if joint else dec)["choice"])
    assert isinstance(planner.endpoint_model, EndpointModel) == joint
    video, start, goal = _episode(ds)
    feats = api.video_features(video)
    s, g = (observation(feats, *clip, 3, which).reshape(-1) for clip, which in ((start, "start"), (goal, "goal")))
    result = planner.plan(s, g)
    assert result.decoding["endpoints"] == ("endpoint model" if joint else "step model")
    b = planner.plan_batch(s, g)
    assert np.allclose(result.step_probs, b.endpoint_probs[0]) and list(result.step_endpoints) == b.endpoints[0].tolist()
    probs = b.endpoint_probs
    if joint:
        probs = np.exp(planner.endpoint_model.endpoint_log_probs(*(planner.clips.tensor(x) for x in (s, g))))
        assert np.allclose(result.endpoint_model_probs, probs[0]) and np.allclose(probs.sum(-1), 1.0)
    else:
        assert result.endpoint_model_probs is None
    assert np.allclose(result.decoded_ends_probs, probs[0])
    assert list(result.plan) == decode_block(b.action_block, planner.ends.transitions(), planner.decoding.choice, probs)[0].tolist()
    # the +dec row's choice: the step model's scores, and no endpoint model kept
    planner.use_decoding(PlannerDecoding(choice=DecodeChoice(**dec["choice"]), method=base + "+dec", kept_in="here"))
    plain = planner.plan(s, g)
    assert planner.endpoint_model is None and plain.endpoint_model_probs is None
    assert plain.decoding["endpoints"] == "step model" and np.allclose(plain.decoded_ends_probs, b.endpoint_probs[0])
    # a joint choice goes with an endpoint model, and only it
    with pytest.raises(KeppError, match="go together"):
        PlannerDecoding(choice=DecodeChoice("dist", 0.3), method=base + "+jdec", kept_in="here")


def test_the_plan_page_plans_with_the_structured_planner_and_open_in_plan_reaches_it(monkeypatch, demo_env, demo_world):
    """The demo ships KEPP R=1 trained with the structured loss: the Plan page offers it, plans with it
    (decoded), and a kepp-R1-struct row's Open in Plan link names it."""
    from components.records.urls import plan_query

    _, ds = demo_world
    video, start, goal = _episode(ds)
    row = {"episode": f"{video.task}/{video.id}/0:3", "video": video.id, "horizon": 3, "method": "kepp-R1-struct"}
    query = {**plan_query(row), "start": f"{start[0]:g}-{start[1]:g}", "goal": f"{goal[0]:g}-{goal[1]:g}",
             "live": "1"}  # the record first, and its live re-plan (the planner it names) beside it
    assert query["model"] == "graph-R1-struct" and query["rec"] == "kepp-R1-struct"
    at = no_problems(open_page(monkeypatch, demo_env, "views/1_Plan.py", query))
    assert "structured" in at.selectbox(key="plan_variant").value
    result = at.session_state["plan_result"]["result"]
    assert result.decoding is not None and len(result.plan) == 3
    assert result.decoding["source"] == str(ASSETS / "T3" / "decoding.json")


# --- numeric options -------------------------------------------------------------------------------
class TestNumericOptions:
    """Seeds, -R, --top, horizons and clip bounds: the same range rules in every command."""

    @pytest.mark.parametrize("argv, words", [
        (["data", "stats", "--split-seed", "-1"], "--split-seed -1"),
        (["plan", "{npy}", "--start", "0", "1", "--goal", "2", "3", "--seed", str(2**70)], "--seed"),
        (["plan", "{npy}", "--start", "0", "1", "--goal", "2", "3", "-R", "0"], "-R/--paths 0"),
        (["plan", "{npy}", "--start", "0", "1", "--goal", "2", "3", "-R", "100000"], "-R/--paths 100000"),
        (["plan", "{npy}", "--start", "0", "1", "--goal", "2", "3", "--top", "100000"], "--top 100000"),
        (["plan", "{npy}", "--start", "0", "5", "--goal", "3", "8"], "overlapping"),
    ])
    def test_out_of_range(self, capsys, tmp_path, argv, words):
        npy = tmp_path / "f.npy"
        np.save(npy, np.ones((10, 256), np.float32))
        one_error(*in_process(capsys, *[a.replace("{npy}", str(npy)) for a in argv]), words)
