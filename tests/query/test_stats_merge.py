"""A table's merged statistics merge each column on first use, and give what merging every
column up front gave (the first query on a table paid for all its columns)."""

from __future__ import annotations

import threading

import numpy as np
import pyarrow as pa

from colony.query.stats import ColumnStats, MergedColumns, TableStats


def _parts(n=3, rows=20_000):
    rng = np.random.default_rng(0)
    out = []
    for i in range(n):
        t = pa.table({"k": rng.integers(0, 5_000, rows), "x": rng.normal(i, 1, rows),
                      "s": pa.array([f"v{v}" for v in rng.integers(0, 40, rows)])})
        out.append(TableStats.build([t]))
    return out


def test_columns_merge_on_first_use_and_equal_an_eager_merge():
    parts = _parts()
    merged = TableStats.merge(parts)
    cols = merged.columns
    assert isinstance(cols, MergedColumns) and list(cols) == ["k", "x", "s"] and len(cols) == 3
    assert cols._done == {}                                  # nothing merged yet
    assert merged.rows == 60_000 and merged.objects == 3
    x = cols["x"]
    assert set(cols._done) == {"x"} and cols["x"] is x       # merged once, kept
    for name in ("k", "x", "s"):
        eager = ColumnStats.merge_all([p.columns[name] for p in parts])
        lazy = cols[name]
        assert lazy.rows == eager.rows and lazy.ndv == eager.ndv
        if eager.kll is not None:
            assert lazy.lo == eager.lo and lazy.hi == eager.hi
            # a KLL merge draws its own compaction coins, so two merges agree within the sketch's
            # rank error, not bit for bit
            assert np.allclose(lazy.kll.get_quantiles([0.1, 0.5, 0.9]), eager.kll.get_quantiles([0.1, 0.5, 0.9]),
                               atol=0.02 * (eager.hi - eager.lo))
    assert cols.get("missing") is None and "missing" not in cols and "s" in cols


def test_threads_asking_for_one_column_share_one_merge():
    merged = TableStats.merge(_parts())
    got, start = [], threading.Barrier(8)

    def ask():
        start.wait()
        got.append(merged.columns["k"])

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 8 and all(g is got[0] for g in got)
