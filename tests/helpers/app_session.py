"""App sessions through ``streamlit.testing.v1.AppTest`` (a fresh session is a new browser tab
or a reload) and what the tests read from them."""

from __future__ import annotations

import json

from streamlit.testing.v1 import AppTest

from components.talk import curation
from kepp_core.models.folders import trained_horizons
from kepp_core import api
from kepp_core.paths import DEMO_ASSETS
from tests.helpers.app_env import APP


def open_page(monkeypatch, env, page: str | None = None, query: dict | None = None, *, timeout: float = 180,
              **overrides) -> AppTest:
    """Start a fresh app session (new session state) on ``page`` with the test environment
    (``overrides``: more environment variables; ``query``: the URL's query parameters): a new
    browser tab, or a reload."""
    for k, v in {"KEPP_THREADS": "1", **env.environ(), **overrides}.items():
        if v is None:
            monkeypatch.delenv(k, raising=False)
        else:
            monkeypatch.setenv(k, str(v))
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    at = AppTest.from_file(str(APP), default_timeout=timeout)
    at.query_params.update(query or {})
    if page:
        at.switch_page(page)
    return at.run()


def open_settings(at: AppTest) -> AppTest:
    """Open the sidebar's "Data and models" panel (its widgets are drawn only while it is open)."""
    assert not [t for t in at.text_input if str(t.key).startswith("cfg_")], "settings drawn while the panel is closed"
    at.session_state["kepp_panel_open"] = True
    at.run()
    assert at.text_input(key="cfg_root") is not None
    return at


def texts(elements) -> list[str]:
    return [str(e.value) for e in elements]


def no_problems(at: AppTest) -> AppTest:
    """``at`` after checking that it shows no exception and no error."""
    assert not at.exception, texts(at.exception)
    assert not at.error, texts(at.error)
    return at


def prediction_table(env):
    """The records of ``env`` as the app reads them (one row per episode and method)."""
    return api.read_predictions([env.records])


def dataset(env):
    from kepp_core.data import load_dataset

    return load_dataset("demo", env.world)


def cards(at: AppTest) -> int:
    return sum(t.count('class="kepp-card"') for t in texts(at.markdown))


def page_scenes(env) -> dict[str, dict]:
    """The scenes the Plan page offers (trained horizons, playable videos), by kind."""
    from kepp_core.data import load_dataset

    ds, hs = load_dataset("demo", env.world), trained_horizons(env.models)
    videos = {v.id for h in hs for v in api.playable_videos(ds, h)}
    return {s["kind"]: s for s in curation.choose_scenes(prediction_table(env), horizons=hs, videos=videos)}


def write_run(folder, losses: list[float], scores: list[float]) -> None:
    """A run folder as ``kepp train`` writes it: one JSON line per logged step, the kept step in config.json."""
    folder.mkdir(parents=True)
    lines = [{"step": 10 * (k + 1), "epoch": float(k + 1), "loss": x, "lr": 1e-3, "time": 0.1 * k,
              "val": {"score": s, "first_acc": s, "last_acc": s, "episodes": 8}} for k, (x, s) in enumerate(zip(losses, scores))]
    (folder / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    best = max(range(len(scores)), key=scores.__getitem__)
    config = json.loads((DEMO_ASSETS / "T3" / "step" / "config.json").read_text())  # a real config, its summary replaced
    config["training"] = {"steps": 10 * len(scores), "best": {"step": 10 * (best + 1), "score": scores[best]}}
    (folder / "config.json").write_text(json.dumps(config))


def with_a_second_seed(env, path):
    """``env``'s records with a second seed beside them, written to ``path``: seed 1 repeats seed 0
    with every third KEPP R=2 plan replaced by KEPP without the graph condition's (so the seeds differ)."""
    lines = env.records.read_text().splitlines()
    more = []
    for k, line in enumerate(lines):
        rec = json.loads(line)
        rec["seed"] = 1
        if k % 3 == 0 and "kepp-R2" in rec["plans"]:
            rec["plans"]["kepp-R2"] = rec["plans"]["kepp-nograph"]
        more.append(json.dumps(rec))
    path.write_text("\n".join(lines + more) + "\n")
    return path
