"""The Results page's protocol section (``kepp protocol`` output folders): mean ± CI over seeds
per method and horizon as error bars (metric picker), the paired test of a chosen pair of
methods (p-value, mean difference and its interval, significant or not), and the
data-efficiency curves when the protocol trained on several fractions of the training videos.
The numbers come from ``kepp_core.api`` (protocols); this module only lays them out."""

from __future__ import annotations

import streamlit as st

from components.records import ab, backend
from components.ui.charts import efficiency_chart, interval_chart, show_figure, show_table
from components.ui.config import missing, presenting
from components.records.metric_codes import code_caption
from components.ui.text import md, md_code
from kepp_core.api import pair_verdict
from kepp_core.catalog import DEFAULT_FAMILY, METRIC_KEYS, METRIC_NAMES, PAIR_METRICS, SIGNIFICANCE, p_text
from components.ui.names import method_name
from kepp_core.errors import KeppError

__all__ = ["show_protocol"]

NO_PROTOCOL = ("No protocol results found: intervals over seeds, paired tests and data-efficiency curves show "
               "here when the app is given a protocol run.")
PROTOCOL_HOW = ("Run `kepp protocol SPEC.toml` (specs in `protocols/`) and start the app with "
                "`kepp app --protocol OUT` (or set **Protocol** in the sidebar, or `protocol = \"OUT\"` in the config "
                "file); output folders under `runs/` are found by themselves.")


def _cell(mean: float, ci) -> str:
    return f"{mean:.1f}" + ("" if ci is None or ci != ci else f" ± {ci:.1f}")


def show_protocol(cfg, ds=None) -> None:
    """The whole protocol section for the configuration ``cfg`` (a message instead when there
    are no results or they cannot be read); ``ds``: the app's dataset, whose step names the pair's
    episodes take when the protocol ran on it."""
    st.subheader("Protocol: seeds, intervals, significance")
    try:
        folders = backend.protocol_folders(cfg)
    except KeppError as e:
        st.error(md(str(e)), icon=":material/warning:")
        return
    if not folders:
        missing(NO_PROTOCOL, PROTOCOL_HOW)
        return
    folder = folders[0] if len(folders) == 1 else st.selectbox("Protocol run", folders, key="proto_run")
    try:
        run = backend.protocol_run(folder)
    except KeppError as e:
        st.error(md(str(e)), icon=":material/warning:")
        return
    if not presenting():
        st.caption(f"{md_code(folder)}: {md(run.describe())}")
        st.caption(code_caption(DEFAULT_FAMILY) + " The charts and tables of this section "
                   "show that code's numbers only (results.md holds the other codes' where the spec asks for them).")
    metric, fraction = show_intervals(run)
    show_decomposition(run, fraction)
    show_pair_test(cfg, ds, run, fraction)
    show_efficiency(run, metric)


def show_intervals(run) -> tuple[str, float]:
    """Mean ± CI per method and horizon (bars with error bars, and the table); returns the
    chosen metric and fraction."""
    c1, c2 = st.columns(2)
    metric = c1.selectbox("Metric", list(METRIC_KEYS), key="proto_metric", format_func=METRIC_NAMES.get)
    fractions = run.fractions
    fraction = fractions[-1]
    if len(fractions) > 1:
        fraction = c2.selectbox("Training videos", fractions, index=len(fractions) - 1, key="proto_fraction",
                                format_func=lambda f: f"{f:.0%}")
    df = run.intervals(metric, fraction)
    name = METRIC_NAMES[metric]
    show_figure(interval_chart(df, name, run.confidence), "kepp_protocol_intervals", key="proto_intervals")
    cells = df.assign(cell=[_cell(m, c) for m, c in zip(df["mean"], df["ci"])])
    grid = cells.pivot(index="label", columns="T", values="cell").reindex(list(dict.fromkeys(df["label"])))
    grid.columns = [f"T={t} {name}" for t in grid.columns]
    show_table(grid.reset_index().rename(columns={"label": "method"}), "kepp_protocol_table", key="proto_table",
               hide_index=True)
    return metric, fraction


DECOMPOSITION = ("ends", "SR_ends", "SR")  # SR = ends right × (SR if ends right) / 100


def show_decomposition(run, fraction: float) -> None:
    """Where each method's plans fail: both endpoints right, the success rate among those episodes,
    and SR (their product), per method and horizon (means over seeds)."""
    st.markdown("**Where plans fail**: at the endpoints (*ends right*: first and last step both right) or in "
                "the middle (*SR if ends right*); SR = ends right × SR if ends right.")
    try:
        tables = {m: run.intervals(m, fraction) for m in DECOMPOSITION}
    except KeppError:
        st.caption("These results predate the decomposition: run the same `kepp protocol` spec again (it reuses "
                   "the trained models and their evaluations) to add it.")
        return
    merged = tables["SR"][["label", "T"]].copy()
    for m, df in tables.items():
        merged[METRIC_NAMES[m]] = [f"{v:.1f}" for v in df["mean"]]
    grid = merged.pivot(index="label", columns="T", values=[METRIC_NAMES[m] for m in DECOMPOSITION])
    grid = grid.reindex(list(dict.fromkeys(merged["label"])))
    grid.columns = [f"T={t} {name}" for name, t in grid.columns]
    grid = grid[sorted(grid.columns, key=lambda c: (int(c.split()[0][2:]), list(grid.columns).index(c)))]
    show_table(grid.reset_index().rename(columns={"label": "method"}), "kepp_protocol_decomposition",
               key="proto_decomposition", hide_index=True)


def _pair_pickers(run) -> tuple[str, str, str]:
    """Method A, method B and the compared metric (the spec's first pair by default)."""
    methods = run.methods
    first = run.pairs[0] if run.pairs else {"a": methods[-1], "b": methods[0]}
    a0 = methods.index(first["a"]) if first.get("a") in methods else 0
    b0 = methods.index(first["b"]) if first.get("b") in methods else min(1, len(methods) - 1)
    c1, c2, c3 = st.columns([3, 3, 1])
    a = c1.selectbox("Method A", methods, index=a0, key="proto_a", format_func=method_name)
    b = c2.selectbox("Method B", methods, index=b0, key="proto_b", format_func=method_name)
    metric = c3.selectbox("Compare", list(PAIR_METRICS), key="proto_pair_metric")
    return a, b, metric


def show_pair_test(cfg, ds, run, fraction: float) -> None:
    """Compare two methods: the paired sign-flip permutation test at a chosen horizon, in words
    and numbers, plus the same test at every horizon; then the two episode by episode (the 2×2
    table, McNemar's test, the paired bootstrap: :func:`components.records.ab.protocol_comparison`)."""
    st.markdown("**Compare two methods** (paired test)")
    a, b, metric = _pair_pickers(run)
    if a == b:
        st.info("Pick two different methods to compare.")
        return
    try:
        table = backend.pair_table(run.folder, a, b, fraction, metric, run.confidence)
    except KeppError as e:
        st.error(md(str(e)), icon=":material/warning:")
        return
    if table.empty:
        st.info(f"{md(method_name(a))} and {md(method_name(b))} were not evaluated on the same episodes here.")
        return
    horizons = [int(t) for t in table["T"]]
    horizon = st.selectbox("T", horizons, key="proto_pair_T") if len(horizons) > 1 else horizons[0]
    result = table[table["T"] == horizon].iloc[0].to_dict()
    (st.success if result["significant"] else st.warning)(md(pair_verdict(result)))
    m1, m2, m3 = st.columns(3)
    ci = result["delta_ci"]
    m1.metric(f"Δ {metric} (A − B), points", f"{result['delta']:+.1f}" + ("" if ci is None or ci != ci
                                                                         else f" ± {ci:.1f}"))
    m2.metric("p-value", p_text(result["p"]))
    m3.metric("units (seed × episode)", f"{result['units']}")
    shown = table.rename(columns={"delta": f"Δ {metric}", "delta_ci": "± CI (seeds)"})
    shown = shown.assign(**{f"p < {SIGNIFICANCE}": shown["significant"]}).drop(columns=["significant"])
    show_table(shown, "kepp_protocol_pair", key="proto_pair", hide_index=True)
    if not presenting():
        st.caption(f"Two-sided paired sign-flip permutation test of the mean per-episode {metric} difference over "
                   f"every (seed, test episode) unit ({run.fractions and f'{fraction:.0%}'} of the training videos; "
                   "exact up to 16 non-zero differences, else 20,000 random sign patterns). The ± is the "
                   f"{round(run.confidence * 100)}% interval of the difference over seeds (Student t); the p-value "
                   "treats each seed's episodes as units, so it is more optimistic than a test over seeds alone.")
    ab.protocol_comparison(cfg, ds, run, a, b, horizon, fraction)


def show_efficiency(run, metric: str) -> None:
    """Data-efficiency curves (the metric against the share of training videos, per method),
    when the protocol has several fractions."""
    if len(run.fractions) < 2:
        return
    st.markdown("**Data efficiency**")
    horizons = run.horizons
    horizon = st.selectbox("T", horizons, key="proto_eff_T") if len(horizons) > 1 else horizons[0]
    df = run.efficiency(horizon, metric)
    name = METRIC_NAMES[metric]
    show_figure(efficiency_chart(df, name, horizon, run.confidence), "kepp_protocol_efficiency", key="proto_eff")
    cells = df.assign(cell=[_cell(m, c) for m, c in zip(df["mean"], df["ci"])])
    grid = cells.pivot(index="label", columns="percent", values="cell").reindex(list(dict.fromkeys(df["label"])))
    grid.columns = [f"{p:g}%" for p in grid.columns]
    show_table(grid.reset_index().rename(columns={"label": "method"}), "kepp_protocol_efficiency",
               key="proto_eff_table", hide_index=True)
