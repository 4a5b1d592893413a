"""The Plan page with the S3D encoder: chosen in the sidebar, it draws the step timeline
under the video (the text tower's best step per second, its top 3 on hover) and plans with models
imported from the official code; with no model at all it plans with graph + text endpoints.

The network is the reference fixture's (random weights, a 32-px crop): the page's plumbing is
under test, not what the steps mean."""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from tests.helpers.app_session import no_problems, open_page, texts
from tests.helpers.s3d import SMALL

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("app")]


@dataclass(frozen=True)
class S3DEnv:
    """The app started on the S3D world with an S3D encoder allowed."""

    world: Path
    models: Path
    encoder: str

    def environ(self) -> dict[str, str]:
        return {"KEPP_APP_DATASET": "demo", "KEPP_APP_ROOT": str(self.world), "KEPP_APP_CHECKPOINTS": str(self.models),
                "KEPP_APP_ENCODERS": self.encoder, "KEPP_APP_PREDICTIONS": None}


def _timeline_seconds(at) -> list[str]:
    """The hover texts of the step timeline's seconds."""
    html = "".join(texts(at.markdown))
    return re.findall(r'class="kepp-st-second" title="([^"]*)"', html)


def _choose_s3d_and_plan(at):
    label = next(o for o in at.selectbox(key="plan_encoder").options if o.startswith("S3D"))
    at.selectbox(key="plan_encoder").set_value(label).run()
    no_problems(at)
    seconds = _timeline_seconds(at)
    at.button(key="plan_go").click().run()
    return no_problems(at), seconds


def test_the_plan_page_with_the_s3d_encoder_shows_the_step_timeline_and_plans(monkeypatch, s3d_world, s3d_official):
    from kepp_core.data import load_dataset

    world, weights = s3d_world
    env = S3DEnv(world, s3d_official, f"s3d:{weights},{SMALL}")
    at = no_problems(open_page(monkeypatch, env, "views/1_Plan.py"))
    assert at.selectbox(key="plan_encoder").value == "the dataset's features"
    at, seconds = _choose_s3d_and_plan(at)
    ds = load_dataset("demo", world)
    # one cell per second of the chosen video (its S3D features: the dataset's own, made by this
    # encoder), each naming its top 3 steps with their scores
    video = ds.video(at.selectbox(key="plan_video").value)
    assert len(seconds) == len(np.load(video.feature_file)) and all(len(s.split(" · ")) == 3 for s in seconds)
    assert any("Step timeline" in c for c in texts(at.caption))
    # the imported official models planned: their plan's steps are shown
    assert any(x.startswith("Planned by") for x in texts(at.caption))
    assert any('class="kepp-card"' in m for m in texts(at.markdown))
    assert at.query_params.get("encoder") == ["s3d1"] or at.query_params.get("encoder") == "s3d1"


def test_with_no_model_the_plan_page_plans_with_graph_and_text_endpoints(monkeypatch, s3d_world, tmp_path):
    world, weights = s3d_world
    (tmp_path / "no-models").mkdir()
    env = S3DEnv(world, tmp_path / "no-models", f"s3d:{weights},{SMALL}")
    at = no_problems(open_page(monkeypatch, env, "views/1_Plan.py"))
    assert at.selectbox(key="plan_variant").value == "graph + text endpoints (S3D, no model)"
    assert _timeline_seconds(at)
    at.button(key="plan_go").click().run()
    no_problems(at)
    assert any(html.unescape(m).startswith('Text tower (S3D): â₁ <a class="kepp-step-link"') and 'class="kepp-step"' in m
               for m in texts(at.markdown))  # what predicted the endpoints (each a link to its graph)
    assert any('class="kepp-card"' in m for m in texts(at.markdown))
    # where the graph has no path between the text tower's two steps (this fixture's random network grounds
    # both clips in one step), the page says so instead of showing the graph's fallback as a plan
    result = at.session_state["plan_result"]["result"]
    said = [w for w in texts(at.warning) if w.startswith("No plan: the graph has no path of this length")]
    shown = any("plan (planned now)" in m for m in texts(at.markdown))
    planned = any(x.startswith("Planned with graph + text endpoints") for x in texts(at.caption))
    assert (bool(said), shown, planned) == ((True, False, False) if result.fallback else (False, True, True))


def test_typed_steps_for_the_step_timeline_are_capped_with_a_message(monkeypatch, s3d_world, tmp_path):
    """20,000 step names typed into the sidebar (once 0.8 -> 3.7 GB and a traceback): the timeline grounds
    the first 200, and says so."""
    world, weights = s3d_world
    (tmp_path / "no-models").mkdir()
    env = S3DEnv(world, tmp_path / "no-models", f"s3d:{weights},{SMALL}")
    at = no_problems(open_page(monkeypatch, env, "views/1_Plan.py"))
    at.text_area(key="plan_steps").set_value("\n".join(f"step number {k}" for k in range(20_000))).run()
    no_problems(at)
    (said,) = [w for w in texts(at.warning) if "steps typed" in w]  # (the field itself stops at 40,200 characters)
    assert re.fullmatch(r"The step timeline grounds the first 200 of the [\d,]+ steps typed: at most 200\.", said), said
    assert any(c.startswith("Step timeline: the step each second most resembles among 200 typed steps")
               for c in texts(at.caption))
    seconds = _timeline_seconds(at)
    assert seconds and all(e.startswith("step number ") for s in seconds for e in s.split(": ", 1)[1].split(" · "))


def test_open_in_plan_of_a_graph_text_row_plans_with_graph_and_text_endpoints(monkeypatch, s3d_world, s3d_official):
    """A graph-text row's Open in Plan link (the Results and Failure pages' plan_query) names
    model=graph-text and no encoder: with trained models there too, the page takes the first allowed S3D
    encoder and plans at once with graph + text endpoints, as the row did (the record it names is not in
    this world's records, so the live plan is the page's one view)."""
    from components.records.urls import plan_query
    from kepp_core.data import load_dataset

    world, weights = s3d_world
    ds = load_dataset("demo", world)
    video = next(v for v in ds.split("test") if v.video_file is not None and len(v.steps) >= 3)
    query = plan_query({"episode": f"{video.task}/{video.id}/0:3", "video": video.id, "horizon": 3,
                        "method": "graph-text"})
    assert query["model"] == "graph-text" and query["R"] == "1" and "encoder" not in query
    env = S3DEnv(world, s3d_official, f"s3d:{weights},{SMALL}")
    at = no_problems(open_page(monkeypatch, env, "views/1_Plan.py", query))
    assert at.selectbox(key="plan_variant").value == "graph + text endpoints (S3D, no model)"
    assert at.selectbox(key="plan_encoder").value.startswith("S3D")
    result = at.session_state["plan_result"]["result"]  # planned on opening (no records here to show first)
    assert result.step_endpoints is None and result.text_endpoints == (result.plan[0], result.plan[-1])
    assert any(html.unescape(m).startswith("Text tower (S3D): ") for m in texts(at.markdown))
    assert at.query_params["model"] in ("graph-text", ["graph-text"])


def test_a_graph_text_link_where_no_s3d_encoder_is_allowed_says_so(monkeypatch, app_env):
    at = no_problems(open_page(monkeypatch, app_env, "views/1_Plan.py", {"model": "graph-text", "T": "3"}))
    assert any("needs an S3D encoder" in x for x in texts(at.info))
    assert at.selectbox(key="plan_variant").value != "graph + text endpoints (S3D, no model)"


def test_models_of_another_width_refuse_the_s3d_encoder_before_planning(monkeypatch, app_env, s3d_world):
    _, weights = s3d_world
    at = no_problems(open_page(monkeypatch, app_env, "views/1_Plan.py",
                               KEPP_APP_ENCODERS=f"s3d:{weights},{SMALL}"))
    label = next(o for o in at.selectbox(key="plan_encoder").options if o.startswith("S3D"))
    at.selectbox(key="plan_encoder").set_value(label).run()
    assert not at.exception
    errors = texts(at.error)
    assert len(errors) == 1 and "768 values" in errors[0] and "512-d" in errors[0], errors
    assert at.button(key="plan_go").disabled and _timeline_seconds(at)  # the timeline still shows
