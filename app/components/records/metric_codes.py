"""Which evaluation code a number comes from, in the app. Three codes compute "SR, mAcc, mIoU" and do
not agree (:mod:`kepp_core.catalog.benchmark`: this package's, PDPP's and ViterbiPlanNet's metric families), so a
number is shown with its code named: the Results page picks the code (``code=``, :func:`pick_code`) and
its headers are that family's; a page that shows this package's metrics only says so once
(:func:`code_caption`); and the published numbers of the benchmark the dataset is (the app's
``benchmark`` key) are shown apart from the measured ones, in their code's headers (:func:`published`)."""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd
import streamlit as st

from components.ui import links
from components.ui.text import md
from kepp_core import api
from kepp_core.catalog import BENCHMARK_DATASETS, DEFAULT_FAMILY, FAMILIES, LITERATURE_UNCONFIRMED, codes_named

__all__ = ["PUBLISHED", "code_caption", "code_help", "code_label", "column_kind", "pick_code", "published", "sr_words"]

PUBLISHED = "published: read from the papers, not measured here"  # the published table's caption starts so


def code_help() -> str:
    """The help of the code picker: every code the registry holds (:data:`kepp_core.catalog.benchmark.FAMILIES`, read
    when the page runs: a code registered there is named here), with where it lives.

    >>> code_help().startswith("which code computes SR, mAcc and mIoU (their mIoUs differ): KEPP (this package): ")
    True
    """
    return f"which code computes SR, mAcc and mIoU (their mIoUs differ): {codes_named('{label}: {source}')}"


def code_label(name: str) -> str:
    """The readable name of the evaluation code ``name`` (the picker's, the captions').

    >>> code_label("vpn")
    'ViterbiPlanNet'
    """
    return FAMILIES[name].label


def pick_code(link, key: str) -> str:
    """The evaluation code whose metrics the page's tables show (``code=`` in the URL; this package's
    when left out): the picker offers every code of the registry, each by its label."""
    names = list(FAMILIES)
    link.seed(key, "code", names, absent=DEFAULT_FAMILY)
    code = st.segmented_control("Evaluation code", names, key=key, format_func=code_label,
                                **links.default_kwargs(key, default=DEFAULT_FAMILY),
                                help=code_help()) \
        or DEFAULT_FAMILY
    link.keep(code=None if code == DEFAULT_FAMILY else code)
    return code


def code_caption(code: str = DEFAULT_FAMILY, shown: Iterable[str] | None = None) -> str:
    """One line naming the code the page's metrics come from and what each of them (``shown``: headers;
    default every one of the family's) measures.

    >>> code_caption("kepp", ["SR", "mIoU"])
    "Metrics computed by KEPP (this package)'s code (kepp_core/metrics.py): SR: whole plan right (%); mIoU: IoU of each episode's predicted and true action sets, averaged over episodes (%)."
    """
    fam = FAMILIES[code]
    wanted = None if shown is None else set(shown)
    parts = [f"{m.header}: {m.description}" for m in fam.metrics if wanted is None or m.header in wanted]
    return f"Metrics computed by {fam.label}'s code ({fam.source}): " + "; ".join(parts) + "."


def sr_words(code: str = DEFAULT_FAMILY) -> str:
    """The SR of a paired comparison in the words of the code the page shows (a caption's part): every code's
    SR is the share of episodes whose whole plan is right, which the per-episode successes paired give (a code
    that reports no SR: this package's words).

    >>> sr_words("vpn")
    "ViterbiPlanNet's code: success_rate per batch, batches weighted by their episodes, on the paired episodes"
    """
    fam = FAMILIES[code]
    sr = next((m for m in fam.metrics if m.key == "sr"), None)
    if sr is None:
        return sr_words(DEFAULT_FAMILY)
    return f"{fam.label}'s code: {sr.description.removesuffix(' (%)')}, on the paired episodes"


def column_kind(column: str) -> str:
    """The metric a method × T column shows (``SR``, ``mAcc``, ``mIoU``), whatever code names it.

    >>> column_kind("T=3 SR"), column_kind("T=4 mIoU (PDPP, per batch)")
    ('SR', 'mIoU')
    """
    return column.split(" ", 1)[1].split()[0]


def published(cfg, horizons: Iterable[int], code: str) -> None:
    """Under a measured table: the published numbers of the benchmark the app's dataset is (``benchmark``
    in the app's config) at ``horizons``, computed with ``code``, as a table of their own (never averaged
    or ranked with the measured rows), each row citing its paper and table; with no such row, which codes
    have published numbers to show. Nothing where the app names no benchmark."""
    bench = getattr(cfg, "benchmark", None)
    if not bench:
        return
    hs = sorted({int(h) for h in horizons})
    rows = [r for h in hs for r in api.literature_rows(bench, h, code, table=True)]
    where = f"{BENCHMARK_DATASETS[bench]} ({bench}), T={', '.join(map(str, hs))}"
    if rows:
        cited = [r for h in hs for r in api.literature_rows(bench, h, code)]
        st.markdown(f"**Published numbers** · {md(where)} · {md(code_label(code))}'s code")
        st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", key="published_rows")
        st.caption(f"{PUBLISHED}: each row as its paper reports it, computed with {md(code_label(code))}'s code "
                   "on the paper's own split or the unified benchmark's lists (the split column); never averaged "
                   "with the measured rows above, and not ranked with them."
                   + ("" if all(r.confirmed for r in cited) else f" {md(LITERATURE_UNCONFIRMED)}."))
        return
    codes = sorted({r.code for h in hs for r in api.literature_rows(bench, h)})
    if codes:
        st.caption(f"Published numbers of {md(where)} were computed with "
                   + ", ".join(f"{md(code_label(c))}'s code (`{c}`)" for c in codes)
                   + ": choose that code above to see them, apart from these measured ones.")
