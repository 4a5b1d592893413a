"""Graph: the P²KG (or frequency graph) around a step, and a task's expert trajectories.

The drawings place the steps left to right by their typical place in the training plans, the chosen
step in the middle (:mod:`components.graph.layout`), with the controls beside them: on the first screen.
Its state lives in the URL (restored on load and reload): ``w`` (p2kg/pkg), ``tab``
(around/expert), ``q`` (the step search), ``step``, ``depth``, ``min``, ``task``, ``max`` (the
node cap), and for expert trajectories ``etask`` and ``emin``.

Around a step, at most ``max`` steps are drawn (default :data:`MAX_NODES`): on a graph of hundreds
of steps a neighbourhood of depth 2 or 3 holds most of them, so the strongest arrows are kept
(:func:`kepp_core.api.capped_subgraph`) and the page says how many steps it left out."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from components.ui import links
from components.graph import drawing as drawings, network
from components.records import backend, through
from components.ui.charts import table_on_demand
from components.ui.config import page_setup
from components.ui.text import dataset_caption, md, md_code
from kepp_core import api
from kepp_core.errors import closest_names

cfg = page_setup("Graph")
backend.needs_dataset(cfg, "The Graph page")  # records by themselves: one line, no world built
title_col, link_col = st.columns([5, 1], vertical_alignment="bottom")
title_col.title("Procedure knowledge graph")

with backend.guarded():
    ds = backend.dataset(cfg)
    graph = backend.graph(cfg)
if not cfg.presentation:  # paths stay out of talks
    st.caption(dataset_caption(cfg, ds) + f" · graph: {graph.num_actions} actions, {graph.num_edges} edges"
               + (f" from {md_code(cfg.graph)}: {md(api.graph_source(graph))}" if cfg.graph
                  else " built from the training plans"))

link = links.PageLink("graph")


def through_choice(centre: int, edges: list) -> tuple[int, int] | None:
    """The transition whose episodes are listed (None: the step's): a link's ``edge`` (two action ids of the
    graph), else the one chosen before while it is still drawn or leaves the step in the middle."""
    wanted, now = link.new("edge"), st.session_state.pop("graph_through_of", None)
    if wanted is not None:
        a, b = link.keys["edge"].parse(wanted)
        if max(a, b) < graph.num_actions:
            return a, b
        link.ignore("edge", wanted, f"not two action ids of this graph (0 to {graph.num_actions - 1})")
    elif link.foreign and "edge" not in link.url:
        return None  # a link without a transition: the step's episodes
    return now if now is not None and (tuple(now) in edges or now[0] == centre) else None

TABS = {"around": "Around a step", "expert": "Expert trajectories of a task"}
MAX_NODES = 40  # a drawing stays legible up to about this many steps
HEIGHT = 600  # px of canvas asked for (in presentation mode: what one screen holds)
tasks = sorted(ds.tasks)
task_names = {t: ds.tasks[t].name for t in tasks}
link.seed("graph_tab", "tab", list(TABS.values()), TABS.__getitem__, absent="around")
# the open tab is tracked (a rerun on a switch) so that it goes into the URL; both tabs' controls run (their state
# is kept), the open tab alone draws its graph and table
around, expert = st.tabs(list(TABS.values()), key="graph_tab", on_change="rerun")
tab = {v: k for k, v in TABS.items()}.get(st.session_state.get("graph_tab"), "around")
link.keep(tab=None if tab == "around" else tab)


with around:
    # the controls beside the drawing: the drawing is on the first screen
    controls, shown = st.columns([1, 3], gap="medium")
    link.seed("graph_weighting", "w", ["p2kg", "pkg"], absent="p2kg")
    scorer = controls.radio("Weights", ["p2kg", "pkg"], key="graph_weighting",
                            format_func={"p2kg": "P²KG (probability of the next step)",
                                         "pkg": "frequency graph (min-max normalised counts)"}.get)
    graph_name = "P²KG" if scorer == "p2kg" else "Frequency graph"
    link.keep(w=None if scorer == "p2kg" else scorer)
    link.seed("graph_query", "q", absent="")
    query = controls.text_input("Search a step", key="graph_query", placeholder="e.g. pour water")
    names = list(graph.actions)
    if query.strip():
        hits = [a for a in names if query.strip().lower() in a.lower()] or closest_names(query.strip(), names)
        if not hits:
            controls.warning(f"No step matches {md(repr(query))}.")
            hits = names
    else:
        hits = names
    centred = link.new("node")  # a step link (components.ui.step_links): the step by its action id
    if centred is not None:
        node = link.keys["node"].parse(centred)
        if node < graph.num_actions and graph.actions[node] in hits:
            st.session_state["graph_step"] = graph.actions[node]
        else:
            link.ignore("node", centred, f"not an action id of this graph (0 to {graph.num_actions - 1})")
    link.seed("graph_step", "step", hits)
    step = controls.selectbox("Step", hits, key="graph_step")
    link.seed("graph_depth", "depth", [1, 2, 3], absent="1")
    depth = controls.slider("Depth", 1, 3, key="graph_depth", **links.default_kwargs("graph_depth", value=1))
    weight_name = drawings.WEIGHTS[scorer]
    link.seed("graph_min_p", "min", parse=lambda t: round(link.keys["min"].parse(t), 2), absent="0")
    min_p = controls.slider(f"Minimum {weight_name}", 0.0, 1.0, step=0.01, key="graph_min_p",
                            help=f"hide arrows whose {weight_name} (the weights shown) is below this",
                            **links.default_kwargs("graph_min_p", value=0.0))
    link.seed("graph_task", "task", ["(all tasks)", *tasks], absent="(all tasks)")
    task = controls.selectbox("Task filter", ["(all tasks)", *tasks], key="graph_task",
                              format_func=lambda t: task_names.get(t, t))
    link.seed("graph_max", "max", range(2, 501), absent=str(MAX_NODES))
    cap = controls.number_input("Max steps", 2, 500, key="graph_max", step=10,
                                help="at most this many steps are drawn: those the strongest arrows reach from the "
                                     "chosen step (which is always drawn)",
                                **links.default_kwargs("graph_max", value=MAX_NODES))
    link.keep(q=query.strip() or None, step=step, depth=None if depth == 1 else depth,
              min=None if min_p == 0 else f"{min_p:g}", task=None if task == "(all tasks)" else task,
              max=None if cap == MAX_NODES else int(cap))
    with shown, backend.guarded(stop=False):
        centre = graph.action_index(step)
        readable = network.readable_steps(HEIGHT)  # presentation mode: what a screen holds at the room's type size
        nodes, edges, total = api.capped_subgraph(graph, centre, depth, min_p, None if task == "(all tasks)" else task,
                                                  scorer, int(min(cap, readable or cap)))
        settings = (f"depth {depth} · minimum {weight_name} {min_p:.2f} · task: {task_names.get(task, task)} · "
                    f"{len(nodes)} steps, {len(edges)} transitions" + (f" (of {total} steps)" if total > len(nodes) else ""))
        if tab == "around":  # drawn on the open tab only (a switch reruns the page): a hidden drawing costs a tab
            drawing = drawings.edges_drawing(graph, nodes, edges, scorer, focus=[centre],
                                             title=f"{graph_name} around '{step}'", settings=settings,
                                             positions=backend.typical_positions(cfg, ds),
                                             max_rows=network.readable_rows(HEIGHT))
            network.show_graph(drawing, height=HEIGHT, download_name=f"kepp_graph_{step.replace(' ', '_')}.html",
                               key="graph_dl", screen=True)
            st.caption(f"{len(drawing.nodes)} steps, {len(drawing.edges)} transitions within {depth} "
                       f"step{'s' if depth > 1 else ''} of **{md(step)}**, left to right by their typical place in "
                       "the training plans. Hover an arrow for its count and probabilities.")
            if total > len(nodes):
                st.info(f"Showing {len(nodes)} of {total} nodes (strongest edges kept; "
                        + ("a screen holds no more at a room's type size: lower the depth or raise the minimum)."
                           if readable is not None and readable < cap else "raise the cap to see more)."),
                        icon=":material/filter_alt:")
    if tab == "around":
        # (its values bound now: a fragment's later run would read the page's names as the expert tab left them)
        table_on_demand("The drawing's transitions (table, CSV)", lambda edges=edges: pd.DataFrame(
            [{"from": graph.actions[u], "to": graph.actions[v], "count": int(graph.counts[u, v]),
              "P²KG probability": round(float(graph.probability(u, v)), 4),
              "frequency weight": round(float(graph.frequency(u, v)), 4)} for u, v in edges],
            columns=["from", "to", "count", "P²KG probability", "frequency weight"]),
            "kepp_subgraph_edges", key="graph_edges", guard=lambda: backend.guarded(stop=False))
    with backend.guarded(stop=False):
        st.subheader("Episodes through it")
        chosen = through_choice(centre, edges)
        options = [None, *edges] + ([chosen] if chosen is not None and chosen not in edges else [])
        picked = st.selectbox("Through", options, key="graph_through_of", index=options.index(chosen),
                              format_func=lambda e: f"the step {step}" if e is None
                              else f"the transition {graph.actions[e[0]]} → {graph.actions[e[1]]}",
                              help="the records whose plan or ground truth passes through the step (it appears) or "
                                   "the transition (one step right after the other)")
        link.keep(edge=None if picked is None else link.keys["edge"].text(picked))
        through.show_through(link, cfg, ds, centre, picked)

with expert:
    controls, shown = st.columns([1, 3], gap="medium")
    link.seed("graph_expert_task", "etask", tasks)
    t = controls.selectbox("Task", tasks, key="graph_expert_task", format_func=lambda t: task_names.get(t, t))
    link.keep(etask=t if tab == "expert" else None)
    with backend.guarded(stop=False):
        nodes, edges, freq = api.expert_view(graph, t)
        top = max(freq.values(), default=1)
        link.seed("graph_expert_min", "emin", range(1, top + 1), absent="1")
        min_count = controls.slider("Minimum count", 1, top, key="graph_expert_min",
                                    **links.default_kwargs("graph_expert_min", value=1)) if top > 1 else 1
        link.keep(emin=min_count if tab == "expert" and min_count > 1 else None)
        kept = [(u, v) for u, v in edges if freq[(u, v)] >= min_count]
        if tab == "expert":  # drawn on the open tab only, as the other tab's drawing is
            drawing = drawings.expert_drawing(graph, nodes, kept, freq, title=f"Expert trajectories of {task_names[t]}",
                                             settings=f"minimum count {min_count} · {len(kept)} transitions",
                                             positions=backend.typical_positions(cfg, ds, t),
                                             max_rows=network.readable_rows(HEIGHT))
            with shown:
                network.show_graph(drawing, height=HEIGHT, download_name=f"kepp_expert_{t}.html", key="graph_expert_dl",
                                   screen=True)
                st.caption(f"Transitions the training videos of **{md(task_names[t])}** perform, left to right by their "
                           "typical place: thicker = more frequent. Hover an arrow for its count in the task and its "
                           "probability in the whole graph.")
            table_on_demand("The drawing's transitions (table, CSV)", lambda kept=kept, freq=freq: pd.DataFrame(
                [{"from": graph.actions[u], "to": graph.actions[v], "count in task": freq[(u, v)],
                  "P²KG probability": round(float(graph.probability(u, v)), 4)} for u, v in kept],
                columns=["from", "to", "count in task", "P²KG probability"]),
                f"kepp_expert_{t}", key="graph_expert_edges")

link.publish()
with link_col:
    links.copy_link(link, "graph_link")
