"""Heatmaps: step transition matrices of one task (training plans, test plans, a method's
predictions) in the same action order, and their difference.

A click on a cell lists the test episodes whose predicted plan or ground truth has that transition;
one opens in Plan with its record.

Its state lives in the URL (restored on load and reload): ``task``, ``of`` (the method whose
predictions are shown) and ``T``, ``tables=1``, ``cell`` (the clicked transition, ``a-b`` action
ids), and the difference's panels ``a`` and ``b`` (train, test or pred)."""

from __future__ import annotations

import streamlit as st

from components.ui import links
from components.records import backend, episodes
from components.ui.colours import MD_WRONG, PLAN_TINT, TRUTH_TINT
from components.ui.charts import heatmap_chart, show_heatmap, show_table, step_cards
from components.ui.config import page_setup
from components.ui.pages import PAGES
from components.graph.heatmaps import episodes_with, heatmap_order, out_of_task
from components.ui.names import default_method, method_name
from components.ui.text import dataset_caption, md
from kepp_core import api

cfg = page_setup("Heatmaps")
backend.needs_dataset(cfg, "The Heatmaps page")  # records by themselves: one line, no world built
title_col, link_col = st.columns([5, 1], vertical_alignment="bottom")
title_col.title("Step transition heatmaps")
st.caption("Row *i*, column *j*: how often step *j* directly follows step *i*, normalised per row "
           "(each row sums to 1 where the step is followed by anything). Same action order in every heatmap.")

with backend.guarded():
    ds = backend.dataset(cfg)
    graph = backend.graph(cfg)
if not cfg.presentation:  # paths stay out of talks
    st.caption(dataset_caption(cfg, ds))

tasks = sorted(ds.tasks)
task_names = {t: ds.tasks[t].name for t in tasks}


def show_transition_episodes(cell: tuple[int, int], rows) -> None:
    """The episodes of ``rows`` (this method, T and task) whose plan or truth has the transition
    ``cell``, each marked predicted or true; one of them opens in Plan with its record."""
    a, b = cell
    hits = episodes_with(rows, a, b).reset_index(drop=True)
    st.subheader(f"Episodes with {md(ds.actions[a])} → {md(ds.actions[b])}")
    if not len(hits):
        st.info(f"No test episode of this task has {md(ds.actions[a])} → {md(ds.actions[b])} in the predicted plan "
                f"of {md(method_name(method))} or in its ground truth (T={horizon}).")
        return
    ids = episodes.unit_ids(hits)  # one id per row: the seed (and file) where an episode repeats
    table = episodes.episode_table(hits, ds, drop=("T", "method"), ids=ids).assign(
        **{"in the plan": hits["predicted"], "in the truth": hits["true"]})
    st.caption(f"{len(hits)} episode{'s' if len(hits) != 1 else ''}: in {md(method_name(method))}'s plan "
               f"{int(hits['predicted'].sum())}, in the truth {int(hits['true'].sum())}. Pick one to open its record.")
    show_table(table, f"transition_{a}_{b}", key="heat_episodes", hide_index=True, height=200)
    names = episodes.unit_names(hits, ds, ids)
    pick_col, open_col = st.columns([4, 2], vertical_alignment="bottom")
    unit = pick_col.selectbox("Episode", ids, key="heat_episode", format_func=names.get)
    row = hits.iloc[ids.index(unit)]
    open_col.page_link(PAGES["plan"].path, label="Open in Plan", icon=PAGES["plan"].icon,
                       query_params=episodes.plan_query(row))
    # its plan and truth as step cards: each step opens the graph around it
    step_cards(ds.labels(row["plan"]), [p == g for p, g in zip(row["plan"], row["truth"])], title="plan",
               colour=PLAN_TINT, ids=row["plan"])
    step_cards(ds.labels(row["truth"]), title="ground truth", colour=TRUTH_TINT, ids=row["truth"])
link = links.PageLink("heatmaps")
c1, c2, c3 = st.columns([2, 2, 1])
link.seed("heat_task", "task", tasks)
task = c1.selectbox("Task", tasks, key="heat_task", format_func=lambda t: task_names.get(t, t))

preds = None
with backend.guarded(stop=False):
    preds = backend.predictions(cfg)
if preds is not None and len(preds):
    index = backend.records_index(cfg)  # the filters' values and where rows lie, once per version of the records
    methods = index.methods
    link.seed("heat_method", "of", methods)
    method = c2.selectbox("Predictions of", methods, key="heat_method", format_func=method_name,
                          **links.default_kwargs("heat_method", index=default_method(methods)))
    hs = index.horizons_of(method)
    link.seed("heat_T", "T", hs)
    horizon = c3.selectbox("T", hs, key="heat_T")
    link.keep(of=method, T=horizon)
    run = backend.run_rows(cfg, method, horizon)
    sel = run[run["task"] == task]
    predicted = [tuple(p) for p in sel["plan"]]
else:
    method, horizon, predicted = None, None, []
    c2.info("No prediction records loaded: only training and test plans are shown.")

link.keep(task=task)
train_plans = [v.plan for v in ds.split("train") if v.task == task]
test_plans = [v.plan for v in ds.split("test") if v.task == task]
with backend.guarded():
    order = heatmap_order(ds, task, [*train_plans, *test_plans, *predicted])
    labels = [ds.actions[a] for a in order]
    mats = {"training plans": api.transitions(train_plans, order, labels),
            "test plans": api.transitions(test_plans, order, labels)}
    if predicted:
        mats[f"{method_name(method)} predictions (T={horizon}, test)"] = api.transitions(predicted, order, labels)
    marked = {ds.actions[a] for a in out_of_task(ds, task, order)}

st.caption(f"{len(train_plans)} training plans, {len(test_plans)} test plans"
           + (f", {len(predicted)} predicted plans" if predicted else "") + f" · {len(order)} actions "
           "(the task's own steps first, then others that occur)"
           + (f" · :{MD_WRONG}[✱ red: {len(marked)} action{'s' if len(marked) > 1 else ''} outside the task's step list]"
              if marked else ""))
clicked = show_heatmap(heatmap_chart(mats, marked=marked, selectable=True), key="heat_panels_chart")
if clicked is not None:  # (panel, from, to) as positions in the order: the transition's action ids
    clicked = (order[clicked[1]], order[clicked[2]])


def cell_of(text: str) -> tuple[int, int]:
    """A transition from the URL: ``a-b`` (action ids, as the page's table reads them) of this dataset."""
    a, b = link.keys["cell"].parse(text)
    if not (a < ds.num_actions and b < ds.num_actions):
        raise ValueError(text)
    return a, b


link.seed("heat_cell", "cell", parse=cell_of)
if clicked is not None:
    st.session_state["heat_cell"] = clicked
cell = st.session_state.get("heat_cell")
link.keep(cell=f"{cell[0]}-{cell[1]}" if cell else None)
if cell and preds is not None and len(preds) and method is not None:
    show_transition_episodes(cell, sel)
elif not cell:
    st.caption("Click a cell to list the test episodes whose plan or ground truth has that transition.")


@st.fragment
def matrices() -> None:
    """The matrices as tables, or their CSV downloads: the toggle redraws only these (a fragment)."""
    link.seed("heat_tables", "tables", [True, False], lambda v: v == "1", absent="0")
    as_tables = st.toggle("Show the matrices as tables", key="heat_tables")
    link.keep(tables="1" if as_tables else None)
    cols = st.columns(len(mats))
    for col, (name, df) in zip(cols, mats.items()):
        short = name.split()[0]
        with col:
            table = df.reset_index(names="from")
            if as_tables:
                st.caption(md(name))
                show_table(table, f"transitions_{task}_{short}", key=f"heat_tbl_{short}", height=200)
            else:
                st.download_button(f"{md(name.split(' (')[0])} (CSV)", table.to_csv(index=False).encode(),
                                   file_name=f"transitions_{task}_{short}.csv", mime="text/csv",
                                   key=f"heat_csv_{short}", on_click="ignore")
    link.publish_fragment()


matrices()

st.subheader("Difference")
names = list(mats)
panel_ids = dict(zip(names, ("train", "test", "pred")))  # the URL's short names of the panels
by_id = {v: k for k, v in panel_ids.items()}
d1, d2 = st.columns(2)
link.seed("heat_diff_a", "a", names, by_id.__getitem__)
link.seed("heat_diff_b", "b", names, by_id.__getitem__)
if st.session_state.get("heat_diff_a", names[0]) not in names:  # another method's or horizon's panel
    st.session_state["heat_diff_a"] = names[-1]
if st.session_state.get("heat_diff_b", names[0]) not in names:
    st.session_state["heat_diff_b"] = names[1 if len(names) > 1 else 0]
a = d1.selectbox("A", names, key="heat_diff_a", **links.default_kwargs("heat_diff_a", index=len(names) - 1))
b = d2.selectbox("minus B", names, key="heat_diff_b",
                 **links.default_kwargs("heat_diff_b", index=1 if len(names) > 1 else 0))
link.keep(a=panel_ids[a], b=panel_ids[b])
link.publish()
with link_col:
    links.copy_link(link, "heat_link")
diff = mats[a] - mats[b]
show_heatmap(heatmap_chart({f"{a} − {b}": diff}, marked=marked, diverging=True), key="heat_diff_chart")
st.caption(f"Mean absolute difference: {float(abs(diff.to_numpy()).mean()):.4f}")
