"""Published numbers beside measured ones: the literature rows of ``literature.toml`` (beside this
module), each with the method, dataset, horizon, the evaluation code that computed it (a metric
family of :mod:`kepp_core.catalog.benchmark`), the split it was measured on, the paper and the table it
was read from. They are shown apart from measured rows and never averaged with them.

>>> [r.method for r in literature_rows("niv", 3)]
['PDPP', 'KEPP', 'ViterbiPlanNet']
>>> literature_rows("niv", 3)[1].metrics
{'sr': 24.44, 'macc': 43.46, 'miou_batch': 86.67}
"""

from __future__ import annotations

import tomllib
from functools import lru_cache
from pathlib import Path
from typing import Annotated

from kepp_core.catalog.benchmark import BENCHMARK_DATASETS, FAMILIES, LITERATURE_FILE, LITERATURE_SPLITS, family
from kepp_core.errors import KeppError, unknown_name_error
from kepp_core.schema import Meta, Struct, convert

LITERATURE = Path(__file__).with_name(LITERATURE_FILE)


class LiteratureRow(Struct, frozen=True, forbid_unknown_fields=True):
    """One published result: ``metrics`` under the keys of its ``code``'s family."""

    method: str
    dataset: str
    split: str
    T: Annotated[int, Meta(ge=2, le=64)]
    code: str
    metrics: dict[str, Annotated[float, Meta(ge=0, le=100)]]
    paper: str
    table: str
    confirmed: bool  # read here from a readable copy of its source; False: quoted second-hand (the note says where)
    setting: str | None = None
    note: str | None = None

    def source(self) -> str:
        """Where the numbers were read: the paper and its table."""
        return f"{self.paper}, {self.table}"

    @property
    def label(self) -> str:
        """The row's method as every table of published numbers names it: ``(published)``, and ``unconfirmed``
        where the number was not checked against a readable copy of its source
        (:data:`~kepp_core.catalog.benchmark.LITERATURE_UNCONFIRMED` says so under the table)."""
        return f"{self.method} (published{'' if self.confirmed else ', unconfirmed'})"


class _File(Struct, forbid_unknown_fields=True):
    row: list[LiteratureRow]


@lru_cache(maxsize=4)
def read_literature(path: str | Path = LITERATURE) -> tuple[LiteratureRow, ...]:
    """Every row of a literature file, checked: known datasets, splits and codes, and each metric
    one of its code's family."""
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise KeppError(f"{path}: not a readable literature file ({e})") from None
    rows = convert(data, _File, str(path)).row
    for k, r in enumerate(rows):
        where = f"{path}: row {k + 1} ({r.method}, {r.dataset}, T={r.T})"
        for value, known, what in ((r.dataset, BENCHMARK_DATASETS, "dataset"), (r.split, LITERATURE_SPLITS, "split"),
                                   (r.code, FAMILIES, "code")):
            if value not in known:
                raise KeppError(f"{where}: {unknown_name_error(what, value, known)}")
        keys = [m.key for m in family(r.code).metrics]
        bad = sorted(set(r.metrics) - set(keys))
        if bad or not r.metrics:
            raise KeppError(f"{where}: metrics {bad or '{}'}: expected some of {', '.join(keys)} (the {r.code} code's)")
    return tuple(rows)


def literature_rows(dataset: str | None = None, horizon: int | None = None, code: str | None = None,
                    path: str | Path = LITERATURE) -> list[LiteratureRow]:
    """The published rows of ``dataset`` (a :data:`~kepp_core.catalog.benchmark.BENCHMARK_DATASETS` name),
    ``horizon`` and evaluation ``code`` (each None: any), in the file's order."""
    if dataset is not None and dataset not in BENCHMARK_DATASETS:
        raise unknown_name_error("benchmark dataset", dataset, BENCHMARK_DATASETS)
    return [r for r in read_literature(path) if (dataset is None or r.dataset == dataset)
            and (horizon is None or r.T == horizon) and (code is None or r.code == code)]


def literature_table(rows, code: str) -> list[dict]:
    """Published rows as table rows under the ``code`` family's headers (the metrics some row gives;
    ``—`` where a paper gives no number), with ``method``, ``T``, the split (``paper`` or ``unified``:
    :data:`~kepp_core.catalog.benchmark.LITERATURE_SPLITS`) and the source."""
    rows = [r for r in rows if r.code == code]
    given = [m for m in family(code).metrics if any(m.key in r.metrics for r in rows)]
    return [{"method": r.label, "T": r.T, "split": r.split,
             **{m.header: r.metrics.get(m.key, "—") for m in given},
             "source": r.source() + (f"; {r.note}" if r.note else "")} for r in rows]


__all__ = ["LITERATURE", "LiteratureRow", "literature_rows", "literature_table", "read_literature"]
