"""The app treats dataset strings and dataset folders as data, never as markup or code, and
keeps uploads in a private per-session folder (real AppTest sessions, no mocks)."""

from __future__ import annotations

import json
import shutil
import stat
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from tests.helpers.app_session import dataset, open_page, texts


pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("app")]

HOSTILE = "![x](http://127.0.0.1:9/leak.png)"
HOSTILE_TASK = "[click](javascript:alert(1)) <img src=x onerror=alert(1)>"  # a task id holds no "/"


def rendered(markdown: str) -> str:
    return MarkdownIt("commonmark").render(markdown)


def test_markdown_escape_shows_text_and_loads_nothing():
    from components.ui.text import md  # the app's components: on the path from tests/conftest.py

    paragraphs = []
    for text in [HOSTILE, HOSTILE_TASK, ":red[x] :material/home:", "`a` **b** _c_ <http://x.y>", "a\n# heading"]:
        html = rendered(md(text))
        assert "<img" not in html and "<a " not in html and "<em>" not in html and "<h1>" not in html
        assert "<code>" not in html and "<strong>" not in html
        paragraphs.append(html.count("<p>"))
    assert paragraphs == [1] * 5  # each text shows as one paragraph of text


def test_hostile_step_and_task_names_are_plain_text_on_the_graph_page(monkeypatch, app_env, tmp_path):
    plans = tmp_path / "plans.jsonl"
    steps = ["boil", HOSTILE, "pour", "[/red]"]
    plans.write_text("".join(json.dumps({"video": f"v{k}", "task": HOSTILE_TASK, "steps": steps, "split": "train"})
                             + "\n" for k in range(4)))
    at = open_page(monkeypatch, app_env, "views/2_Graph.py", KEPP_APP_DATASET="plans", KEPP_APP_ROOT=plans,
                   KEPP_APP_CHECKPOINTS=None, KEPP_APP_PREDICTIONS=None)
    assert not at.exception, texts(at.exception)
    at.selectbox(key="graph_step").select(HOSTILE).run()
    assert not at.exception and not at.error, texts(at.error)
    markdown = [*texts(at.caption), *texts(at.markdown), *texts(at.error), *texts(at.warning)]
    assert any("leak.png" in t for t in markdown)  # the label is shown ...
    for t in markdown:
        html = rendered(t)
        assert "<img" not in html and 'href="javascript' not in html and "<a href" not in html, t  # ... as text
    assert any(HOSTILE in MarkdownIt("commonmark").render(t) for t in texts(at.caption))


def test_a_dataset_cannot_make_the_app_import_its_encoder(monkeypatch, app_env, tmp_path):
    """features.json names a module that would write a marker file when imported: the app refuses
    to load it, until the person running the app allows it (KEPP_APP_ENCODERS / kepp app --encoder)."""
    marker = tmp_path / "imported"
    (tmp_path / "probe").mkdir()
    (tmp_path / "probe" / "kepp_probe_encoder.py").write_text(
        "from pathlib import Path\n"
        f"Path({str(marker)!r}).write_text('imported')\n"
        "from kepp_core.video.encoders import BuiltinEncoder\n"
        "enc = BuiltinEncoder()\n")
    monkeypatch.syspath_prepend(str(tmp_path / "probe"))
    features = tmp_path / "features"
    shutil.copytree(app_env.world / "features", features)
    (features / "features.json").write_text(json.dumps({"encoder": "callable:kepp_probe_encoder:enc", "dim": 256}))
    video = next(v for v in dataset(app_env).split("test") if v.video_file is not None)

    def upload_and_plan(**env):
        at = open_page(monkeypatch, app_env, "views/1_Plan.py", KEPP_APP_FEATURES=features, **env)
        at.radio(key="plan_source").set_value("Upload a video").run()
        at.file_uploader(key="plan_upload").set_value(("clip.mp4", video.video_file.read_bytes(), "video/mp4")).run()
        at.button(key="plan_go").click().run()
        assert not at.exception, texts(at.exception)
        return at

    refused = open_page(monkeypatch, app_env, "views/1_Plan.py", KEPP_APP_FEATURES=features, KEPP_APP_ENCODERS=None)
    assert not refused.exception and not [r for r in refused.radio if r.key == "plan_source"]  # no upload offered
    said = [t for t in texts(refused.caption) if t.startswith("No upload: the dataset's features were made by")]
    assert len(said) == 1 and "not loaded unless the person running the app names it" in said[0]
    assert not marker.exists()
    at = upload_and_plan(KEPP_APP_ENCODERS="kepp_probe_encoder:enc")
    assert marker.exists() and not at.error, texts(at.error)


def test_uploads_go_to_a_private_session_folder_that_is_removed_with_the_session(monkeypatch, app_env):
    import gc

    video = next(v for v in dataset(app_env).split("test") if v.video_file is not None)
    at = open_page(monkeypatch, app_env, "views/1_Plan.py")
    at.radio(key="plan_source").set_value("Upload a video").run()
    at.file_uploader(key="plan_upload").set_value(("clip.mp4", video.video_file.read_bytes(), "video/mp4")).run()
    assert not at.exception and not at.error, texts(at.error)
    folder = at.session_state["kepp_upload_folder"].path
    assert folder.name.startswith("kepp-upload-") and folder.parent != Path("/tmp/kepp-uploads")
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert [p.suffix for p in folder.iterdir()] == [".mp4"]
    other = open_page(monkeypatch, app_env, "views/1_Plan.py")
    other.radio(key="plan_source").set_value("Upload a video").run()
    other.file_uploader(key="plan_upload").set_value(("clip.mp4", video.video_file.read_bytes(), "video/mp4")).run()
    assert other.session_state["kepp_upload_folder"].path != folder  # sessions never share uploads
    del at
    gc.collect()
    assert not folder.exists()  # the session is gone, and so is its folder
