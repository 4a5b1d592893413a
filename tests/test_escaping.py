"""Every renderer of ``app/components`` shows a hostile label as text: the audit's step label
``"stir\\n\\n![x](http://HOST/img)\\n\\n"`` (it broke out of the step timeline: every visitor's
browser fetched the image) and two HTML ones, through each renderer's escaping helper
(``components.ui.text``: Markdown, HTML in Markdown, plotly, a standalone page). Each output is rendered
the way the browser gets it (Markdown as Streamlit renders it, plotly's text fields, the page's
elements) and must hold no image, link, script or handler, and show the label's words as text."""

from __future__ import annotations

import json

from types import SimpleNamespace as S

import pandas as pd
import pytest

from tests.helpers.markup import (HOST, HOSTILE, assert_inert, assert_markdown_inert, assert_plotly_inert,
                                  elements, render_markdown)

LABELS = pytest.mark.parametrize("label", HOSTILE, ids=["markdown-image", "html-link", "html-image"])


def _dataset(label: str):
    actions = [label, "whisk", "fry"]
    return S(name=label, actions=actions, labels=lambda seq: [actions[a] for a in seq], tasks={}, videos=[],
             num_actions=len(actions))


# --- HTML inside Streamlit's Markdown ---------------------------------------------------------------------
@LABELS
def test_the_step_timeline(label):
    from components.ui.charts import step_timeline

    rows = [{"second": s, "step": s % 2, "label": [label, "whisk"][s % 2], "score": 1.0,
             "top": [{"label": label, "score": 1.0}, {"label": "whisk", "score": 0.5}]} for s in range(4)]
    assert_markdown_inert(step_timeline(rows, {label: ((0.0, 2.0), "#2e7d32")}, 4.0), label, "step timeline")


@LABELS
def test_the_video_timeline(label):
    from components.ui.charts import video_timeline

    video = S(steps=[S(start=0.0, end=2.0, action=0), S(start=2.0, end=4.0, action=1)])
    html = video_timeline(video, [label, "whisk"], range(0, 1), {label: ((0.0, 1.0), "#2e7d32")}, 4.0)
    assert_markdown_inert(html, label, "video timeline")


@LABELS
def test_the_step_cards(label):
    from components.ui.charts import step_cards_html

    assert_markdown_inert(step_cards_html([label, "whisk"], [True, False], title=label), label, "step cards")


@LABELS
def test_the_step_links(label):
    """A step card or chip as a link to its graph: the label is its text and hover, never its address."""
    from components.ui.charts import step_cards_html
    from components.ui.step_links import step_chip_html

    assert_markdown_inert(step_cards_html([label, "whisk"], [True, False], title=label, ids=[0, 1]), label,
                          "step cards as links")
    assert_markdown_inert(step_chip_html(0, label, mark=False, present=True), label, "a step chip")


@LABELS
def test_the_list_of_records_through_a_step(label):
    import pandas as pd

    from components.records.through import _table_html

    ds = _dataset(label)
    page = pd.DataFrame([{"episode": f"{label}/v1/0:2", "task": label, "video": "v1", "horizon": 2, "seed": 0,
                          "method": label, "plan": (0, 1), "truth": (0, 2), "source": label, "imported": label,
                          "through": "both"}])
    assert_markdown_inert(_table_html(ds, page, {label: label}, False), label, "the list through a step")


@LABELS
def test_the_failure_pattern_bars(label):
    from components.ui.charts import pattern_bars

    assert_markdown_inert(pattern_bars([label, "other"], [3, 1]), label, "pattern bars")


@LABELS
def test_the_speakers_note(label):
    from components.talk.presenter import note_html

    visible = assert_inert(render_markdown(note_html(f"first line\n{label}\nlast line")), "speaker's note")
    lines = [line.strip() for line in label.splitlines() if line.strip()]  # each line of the note, as text
    assert lines and all(line in visible for line in lines), (lines, visible)


@LABELS
def test_the_plan_before_and_after_decoding(label):
    from components.plan.why import plan_cards

    assert_markdown_inert(plan_cards([label, "whisk"], [True, False], label, "#fff8e1"), label, "why cards")


@LABELS
def test_the_slide_head_and_verdicts(label):
    from components.plan.result import head_html, verdict_html

    for view in ("Recorded", "Live"):
        html = head_html(label, verdict_html(view, label, True, "success"))
        assert_markdown_inert(html, label, f"{view} head")
    assert_markdown_inert(verdict_html("Live", label, False, None), label, "live verdict without truth")


# --- Markdown --------------------------------------------------------------------------------------------
@LABELS
def test_the_why_table_whose_cells_are_markdown(label):
    from components.plan.why import why_table

    table = why_table([{"step": 1, "label": label, "score": 0.5, "transition": None, "endpoint": 0.4,
                        "raw_label": label, "changed": True}])
    assert len(table) == 1 and {"plan", "before decoding"} <= set(table.columns)
    for column in ("plan", "before decoding"):  # st.table renders each cell as Markdown
        assert_markdown_inert(str(table[column].iloc[0]), label, column)


@LABELS
def test_the_endpoints_line(label):
    from components.records.episodes import endpoints_line

    ds = _dataset(label)
    assert_markdown_inert(endpoints_line(ds, (0, 1), (0.9, 0.8), (1, 0)), label, "endpoints line")


@LABELS
def test_the_dataset_caption(label):
    from components.ui.text import dataset_caption
    from kepp_core.api import AppConfig

    assert_markdown_inert(dataset_caption(AppConfig(dataset="plans", root="/data"), _dataset(label)), label,
                          "dataset caption")


# --- plotly ----------------------------------------------------------------------------------------------
@LABELS
def test_the_transition_heatmaps_hold_labels_as_drawn_text(label):
    """ECharts draws axis labels as SVG text and, with ``richText``, its tooltip too: a label goes in as it is
    (escaped, it would show its escapes) and nothing of the chart is HTML or a template of ours."""
    from components.ui.charts import heatmap_chart

    df = pd.DataFrame([[0.5, 0.5], [0.1, 0.9]], index=[label, "whisk"], columns=[label, "whisk"])
    panels = heatmap_chart({label: df, "ground truth": df}, marked={label}, selectable=True).option
    difference = heatmap_chart({f"{label} − other": df}, marked={label}, diverging=True).option
    texts = [json.dumps(option, ensure_ascii=False) for option in (panels, difference)]
    assert panels["tooltip"]["renderMode"] == difference["tooltip"]["renderMode"] == "richText"
    marked = json.dumps(f"{label} ✱", ensure_ascii=False)[1:-1]  # as the JSON holds it (a newline escaped)
    assert all(marked in text for text in texts)
    # no template, no rich-text styles, nothing escaped for HTML (it would show its escapes)
    assert not any(bad in text for text in texts for bad in ('"formatter"', '"rich"', "&lt;", "&amp;"))
    assert panels["series"][0]["data"][0]["name"] == f"{label}: {label} → {label}"


@LABELS
def test_the_training_curves(label):
    from components.ui.charts import training_curves

    frames = {label: pd.DataFrame({"step": [1, 2], "val_score": [0.1, 0.2]})}
    assert_plotly_inert(training_curves(frames, "val_score", "step", {label: 2}), label, "training curves")


@LABELS
def test_the_protocol_charts(label):
    from components.ui.charts import efficiency_chart, interval_chart

    df = pd.DataFrame({"label": [label], "T": [3], "mean": [50.0], "ci": [2.0], "seeds": [3], "percent": [50]})
    assert_plotly_inert(interval_chart(df, "SR"), label, "interval chart")
    assert_plotly_inert(efficiency_chart(df, "SR", 3), label, "efficiency chart")


@LABELS
def test_the_episode_map(label):
    from components.records.episode_map import map_figure

    points = pd.DataFrame({"x": [0.0], "y": [1.0], "task": ["t"], "task_name": [label], "episode": ["t/v/0:3"],
                           "outcome": ["right"], "hover": [""]})
    from components.records.episode_map import _hover

    points["hover"] = [_hover(S(episode="t/v/0:3", outcome="right", right=1, seeds=1, truth=(0,)),
                              lambda seq: [label for _ in seq], {"t": label})]
    assert len(points) == 1 and points["hover"].iloc[0]
    figures = {colour_by: map_figure(points, colour_by, title=label) for colour_by in ("success", "task")}
    assert len(figures) == 2 and all(f.data for f in figures.values())
    for colour_by, figure in figures.items():
        assert_plotly_inert(figure, label, f"episode map by {colour_by}")


# --- a standalone page (the graph drawing's frame) -------------------------------------------------------
@LABELS
def test_the_graph_drawing(label):
    from components.graph.page import graph_html

    nodes = ((0, label, label, "#90caf9", 20, 0, 0), (1, "whisk", "", "#90caf9", 20, 1, 0))  # GraphNode's fields
    edges = ((0, 1, label, label),)  # GraphEdge's: source, target, label, title
    page = graph_html(nodes, edges, title=label, settings=label,
                      legend=(("node", "#90caf9", f"{label}: a → b", 0), ("line", "#333", label, -1)))
    visible = assert_inert(page, "graph page", page=True)
    assert " ".join(label.split()) in " ".join(visible.split())
    found, _ = elements(page)
    scripts = page.split("<script")[1:]
    assert all("<img" not in s.split("</script>")[0] and "<a " not in s.split("</script>")[0] for s in scripts)
    assert len([e for e in found if e[0] == "div" and e[1].get("class") == "kepp-legend-entry"]) == 2


FILE_NAMES = pytest.mark.parametrize("file", [f"![x](http://{HOST}/x).json", f'<img src="http://{HOST}/i">.json'],
                                     ids=["markdown-image", "html-image"])


@FILE_NAMES
def test_the_open_in_plan_link_of_an_imported_method_named_by_its_file(file):
    from components.records.ab import open_label
    from components.ui.names import method_name

    name = method_name("vpn-run", file)
    assert_markdown_inert(open_label(name), name, "Open in Plan link")
