"""A protocol's records file as the units of its paired tests, read from the store's columns."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kepp_core.errors import KeppError
from kepp_core.evaluation.records import OUTCOMES
from kepp_core.evaluation.store.cache import records_columns

__all__ = ["ProtocolUnits", "protocol_units"]


@dataclass(frozen=True)
class ProtocolUnits:
    """A protocol's records file (``kepp protocol``'s ``records.jsonl``) as the units of its paired tests, read
    from the records store: per ``(fraction, T)`` the ``seed`` and ``episode`` of every unit (a record) and, per
    method with plans, its recorded ``success`` and ``acc`` (NaN where a unit has none): what
    :meth:`kepp_core.evaluation.records.Records.units` gives for the same records, made from columns."""

    path: str
    groups: dict

    def units(self) -> dict[tuple[float, int], dict]:
        return self.groups

    def methods(self, fraction: float, horizon: int) -> list[str]:
        """The methods recorded at ``(fraction, T)``."""
        g = self.groups.get((float(fraction), int(horizon)))
        return sorted(g["success"]) if g else []


def protocol_units(path: str | Path) -> ProtocolUnits:
    """The paired-test units of the protocol records file ``path`` (:class:`ProtocolUnits`); KeppError unless every
    record names its fraction and seed (a protocol's records), as :meth:`~kepp_core.evaluation.records.Records.units`."""
    t = records_columns(path)
    if not t.num_rows:
        return ProtocolUnits(str(path), {})
    record = t.column("record").to_numpy()
    missing = t.column("fraction").is_null().to_numpy(zero_copy_only=False) | \
        t.column("seed").is_null().to_numpy(zero_copy_only=False)
    if missing.any() or t.column("fraction").type not in (pa.float64(), pa.int64()) or \
            t.column("seed").type != pa.int64():
        n = int(record[np.flatnonzero(missing)[0]]) + 1 if missing.any() else 1
        raise KeppError(f"{path}: record {n}: expected a protocol record (fraction, T, seed, episode, success, acc)")
    fraction = t.column("fraction").to_numpy().astype(np.float64)
    horizon, seed = t.column("horizon").to_numpy(), t.column("seed").to_numpy()
    method_codes, names = _codes(t.column("method"))
    outcomes = {o: t.column(f"recorded_{o}").to_numpy(zero_copy_only=False).astype(np.float64) for o in OUTCOMES}
    episode = t.column("episode")
    groups = {}
    keys = np.stack([fraction, horizon.astype(np.float64)], axis=1)
    for f, h in sorted({(float(a), int(b)) for a, b in np.unique(keys, axis=0)}):
        rows = np.flatnonzero((fraction == f) & (horizon == h))
        firsts, unit = np.unique(record[rows], return_index=True, return_inverse=True)[1:]
        unit = unit.ravel()
        g = {"seed": seed[rows[firsts]], "episode": [str(e) for e in episode.take(pa.array(rows[firsts])).to_pylist()]}
        for o in OUTCOMES:
            g[o] = {}
            for code in np.unique(method_codes[rows]):
                mine = method_codes[rows] == code
                values = np.full(len(firsts), np.nan)
                values[unit[mine]] = outcomes[o][rows[mine]]
                if not np.isnan(values).all():
                    g[o][names[code]] = values
        groups[(f, h)] = g
    return ProtocolUnits(str(path), groups)


def _codes(column) -> tuple[np.ndarray, list[str]]:
    """A string column's codes (one per row) and the values they stand for."""
    codes = pc.dictionary_encode(column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column)
    return codes.indices.to_numpy(zero_copy_only=False).astype(np.int64), codes.dictionary.to_pylist()


