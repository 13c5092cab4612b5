"""TPC-DS: 24 tables and 99 queries Colony was never tuned on, made by the TPC's own generator.

DuckDB's ``tpcds`` extension (built into its wheel) runs ``dsdgen`` and ships the 99 queries.
The wheel is fetched with pip from the configured package index (nothing is installed;
:func:`colony.data.fetch.pinned`, checked against a pinned SHA-256), unpacked into the cache
and run in a child process, so Colony itself never imports DuckDB. At scale factor 0.1
``store_sales`` has 288k rows, ``catalog_sales`` 144k, ``inventory`` 235k, ``date_dim`` 73k.

    python -m colony.data.tpcds DIR [--sf 0.1] [--queries FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import zipfile

import pyarrow as pa

from colony.data.fetch import default_cache, pinned
from colony.data.layout import write_tables
from colony.errors import DataError

PACKAGE, VERSION = "duckdb", "1.1.3"
WHEEL = f"{PACKAGE}-{VERSION}-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"
SHA256 = "9d0767ada9f06faa5afcf63eb7ba1befaccfbcfdac5ff86f0168c673dd1f47aa"

_CHILD = r"""
import json, sys, duckdb, pyarrow as pa
out, sf = sys.argv[1], float(sys.argv[2])
c = duckdb.connect()
c.sql(f"CALL dsdgen(sf={sf})")
for (t,) in c.sql("show tables").fetchall():
    tab = c.sql(f"select * from {t}").arrow()
    with pa.OSFile(f"{out}/{t}.arrow", "wb") as f, pa.ipc.new_file(f, tab.schema) as w:
        w.write_table(tab)
with open(f"{out}/queries.json", "w") as f:
    json.dump([q for _, q in c.sql("select query_nr, query from tpcds_queries() order by 1").fetchall()], f)
"""


def _engine(cache: str) -> str:
    """The unpacked wheel's directory (for the child's PYTHONPATH)."""
    if sys.version_info[:2] != (3, 11) or sys.platform != "linux":
        raise DataError(f"the pinned {WHEEL} runs on CPython 3.11 on Linux x86_64 only")
    home = os.path.join(cache, f"{PACKAGE}-{VERSION}")
    if not os.path.isdir(os.path.join(home, PACKAGE)):
        wheel = pinned(cache, f"{PACKAGE}=={VERSION}", WHEEL, SHA256, binary=True)
        tmp = tempfile.mkdtemp(dir=cache)
        with zipfile.ZipFile(wheel) as z:
            z.extractall(tmp)
        os.replace(tmp, home)
    return home


def generate(sf: float = 0.1, cache: str | None = None) -> tuple[dict[str, pa.Table], list[str]]:
    """The 24 tables at scale factor ``sf`` and the 99 queries' texts (q1 first)."""
    if not 0 < sf <= 10:
        raise DataError(f"scale factor {sf} out of range (0, 10]")
    home = _engine(cache or default_cache())
    with tempfile.TemporaryDirectory() as out:
        r = subprocess.run([sys.executable, "-c", _CHILD, out, str(sf)], capture_output=True, text=True,
                           env={**os.environ, "PYTHONPATH": home})
        if r.returncode != 0:
            raise DataError(f"dsdgen (DuckDB {VERSION}) failed: {(r.stderr or r.stdout).strip()[-400:]}")
        tables = {}
        for name in sorted(os.listdir(out)):
            if name.endswith(".arrow"):
                with pa.memory_map(os.path.join(out, name)) as f:
                    tables[name[:-6]] = pa.ipc.open_file(f).read_all()
        with open(os.path.join(out, "queries.json")) as f:
            queries = json.load(f)
    return tables, queries


def query_file(queries: list[str]) -> str:
    """The queries in the format ``colony bench query --queries`` reads: one statement per
    line (comments dropped, whitespace folded), a ``-- family: qN`` header above each."""
    out = [f"-- TPC-DS q1-q{len(queries)} as DuckDB {VERSION}'s tpcds extension ships them, one statement per line",
           "-- (colony.data.tpcds; python -m colony.data.tpcds DIR --queries FILE). Texts unchanged otherwise."]
    for n, q in enumerate(queries, 1):
        text = " ".join(re.sub(r"--[^\n]*", "", q).split()).rstrip(";").strip()
        out += [f"-- family: q{n}", text]
    return "\n".join(out) + "\n"


def write(directory: str, sf: float = 0.1, cache: str | None = None) -> dict[str, str]:
    """The tables in the ``--data DIR`` layout (:func:`colony.data.layout.write_tables`)."""
    tables, _ = generate(sf, cache)
    return write_tables(directory, tables)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("directory")
    ap.add_argument("--sf", type=float, default=0.1)
    ap.add_argument("--queries", help="also write the 99 queries here (colony bench query --queries format)")
    a = ap.parse_args()
    tables, queries = generate(a.sf)
    for name, path in write_tables(a.directory, tables).items():
        print(name, tables[name].num_rows, path)
    if a.queries:
        with open(a.queries, "w") as f:
            f.write(query_file(queries))


if __name__ == "__main__":
    main()
