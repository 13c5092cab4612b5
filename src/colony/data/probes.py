"""Probe schemas: the column types and data shapes real users' Parquet files have and the
benchmark schemas (particles, TPC-H, nycflights13) do not.

Each found estimator or planner failures the benchmark sets could not (the thirty-fourth
stop, ``docs/query.md``): a pandas categorical (dictionary-encoded strings), nanosecond
timestamps, struct, list and map columns, binary columns, a Zipf-distributed string key, a
time series with a window table for range joins. Generated here, deterministically, so the
probe runs (``bench/results/query_probe_*``) can be repeated; the query files are
``colony/bench/queries/probes/<schema>.sql``.

    colony.data.probes.write("/tmp/colony-probe-events", "events")
"""

from __future__ import annotations

import decimal

import numpy as np
import pyarrow as pa

from colony.data.layout import write_tables
from colony.errors import InvalidArgument

SCHEMAS = ("events", "sensors", "nested", "jobs")


def _masked(rng, values, frac: float, type_=None) -> pa.Array:
    return pa.array(values, type=type_, mask=rng.random(len(values)) < frac)


def events(n: int = 300_000, seed: int = 7) -> dict[str, pa.Table]:
    """Web-shop style events and their users: a dictionary-encoded city, a Zipf-distributed
    large-string tag, decimals, a zoned timestamp in seconds, dates, nulls, int8, uint64,
    float32 and binary columns."""
    rng = np.random.default_rng(seed)
    cities = np.array(["Berlin", "Lyon", "Osaka", "Lima", "Oslo", "Quito", "Accra", "Perth", "Hanoi", "Cusco"])
    ts = np.datetime64("2024-01-01T00:00:00") + rng.integers(0, 365 * 86_400, n).astype("timedelta64[s]")
    ev = pa.table({
        "event_id": pa.array(np.arange(n, dtype=np.uint64)),
        "user_id": pa.array(rng.integers(0, 20_000, n).astype(np.int32)),
        "city": pa.array(cities[rng.integers(0, len(cities), n)]).dictionary_encode(),
        "tag": pa.array([f"t{v:04d}" for v in rng.zipf(1.5, n) % 5000], pa.large_string()),
        "amount": _masked(rng, np.round(rng.lognormal(3, 1, n), 2), 0.1),
        "price": pa.array([decimal.Decimal(int(v)) / 100 for v in rng.integers(100, 100_000, n)],
                          pa.decimal128(10, 2)),
        "at": pa.array(ts, pa.timestamp("s", tz="UTC")),
        "day": pa.array(ts.astype("datetime64[D]"), pa.date32()),
        "ok": _masked(rng, rng.random(n) < 0.7, 0.05),
        "score": pa.array(rng.normal(0, 1, n).astype(np.float32)),
        "small": pa.array(rng.integers(-100, 100, n).astype(np.int8)),
        "payload": pa.array([bytes([v % 256]) * (v % 7) for v in rng.integers(0, 1000, n)], pa.binary()),
    })
    users = pa.table({
        "user_id": pa.array(np.arange(20_000, dtype=np.int32)),
        "tier": pa.array(rng.choice(["free", "pro", "team"], 20_000)),
        "joined": pa.array(np.datetime64("2020-01-01") + rng.integers(0, 1500, 20_000).astype("timedelta64[D]"),
                           pa.date32()),
        "credit": pa.array(rng.integers(0, 5000, 20_000).astype(np.int64)),
    })
    return {"events": ev, "users": users}


def sensors(n: int = 400_000, seed: int = 11) -> dict[str, pa.Table]:
    """A month of readings from 200 sensors (millisecond timestamps in stored order, 3 %
    missing temperatures), the sensors, and 30 daily windows for range joins."""
    rng = np.random.default_rng(seed)
    t0 = np.datetime64("2025-03-01T00:00:00", "ms")
    ts = t0 + np.sort(rng.integers(0, 30 * 86_400_000, n)).astype("timedelta64[ms]")
    temp = 20 + 5 * np.sin(np.arange(n) / 5000) + rng.normal(0, 1, n)
    readings = pa.table({
        "ts": pa.array(ts, pa.timestamp("ms")), "sensor": pa.array(rng.integers(0, 200, n).astype(np.int16)),
        "temp": _masked(rng, temp, 0.03), "hum": pa.array(rng.uniform(10, 90, n).astype(np.float32)),
        "status": pa.array(rng.choice(["ok", "warn", "fail"], n, p=[0.95, 0.04, 0.01])),
        "seq": pa.array(np.arange(n, dtype=np.int64))})
    sens = pa.table({
        "sensor": pa.array(np.arange(200, dtype=np.int16)),
        "site": pa.array(rng.choice(["north", "south", "east", "west", "lab"], 200)),
        "installed": pa.array(t0.astype("datetime64[D]") - rng.integers(0, 900, 200).astype("timedelta64[D]"),
                              pa.date32()),
        "lo": pa.array(rng.uniform(15, 20, 200)), "hi": pa.array(rng.uniform(22, 28, 200))})
    days = np.arange(30).astype("timedelta64[D]")
    windows = pa.table({"w": pa.array(np.arange(30, dtype=np.int32)),
                        "start": pa.array(t0 + days, pa.timestamp("ms")),
                        "stop": pa.array(t0 + days + np.timedelta64(1, "D"), pa.timestamp("ms"))})
    return {"readings": readings, "sensors": sens, "windows": windows}


def nested(n: int = 200_000, seed: int = 5) -> dict[str, pa.Table]:
    """Observations as pandas writes them: a categorical, nanosecond timestamps with
    sub-microsecond digits, then a struct and a list column after the primitive ones."""
    import pandas as pd
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"id": np.arange(n), "kind": pd.Categorical(rng.choice(["a", "b", "c", "d"], n)),
                       "at": pd.Timestamp("2025-01-01") + pd.to_timedelta(rng.integers(0, 10**15, n), unit="ns"),
                       "v": rng.normal(0, 1, n)})
    t = pa.Table.from_pandas(df, preserve_index=False)
    t = t.append_column("pt", pa.array([{"x": float(a), "y": float(b)} for a, b in rng.random((n, 2))]))
    t = t.append_column("hits", pa.array([list(range(k)) for k in rng.integers(0, 4, n)], pa.list_(pa.int32())))
    return {"obs": t}


def jobs(n_jobs: int = 20_000, n_samples: int = 600_000, seed: int = 7) -> dict[str, pa.Table]:
    """An HPC job table and its nodes' telemetry: dictionary-encoded queue and state, a Zipf
    user key, uint32/uint16/int16 columns, float32, a zoned microsecond timestamp beside an
    unzoned millisecond one, date32, a nullable decimal and boolean, NaN temperatures, and a
    heavy-tailed byte count. Written for the forty-first stop; its per-node percentile query
    found t-digest aggregates priced as sums (``docs/query.md``)."""
    rng = np.random.default_rng(seed)
    users = np.array([f"user{i:03d}" for i in range(300)])
    submit = np.datetime64("2026-01-01T00:00:00") + rng.integers(0, 300 * 86_400, n_jobs).astype("timedelta64[s]")
    job = pa.table({
        "job_id": pa.array(np.arange(n_jobs, dtype=np.uint32)),
        "user": pa.array(users[rng.zipf(1.3, n_jobs) % 300]).cast(pa.large_string()),
        "queue": pa.DictionaryArray.from_arrays(
            pa.array(rng.choice(5, n_jobs, p=[.1, .5, .2, .15, .05]).astype(np.int8)),
            pa.array(["debug", "regular", "long", "gpu", "bigmem"])),
        "submit": pa.array(submit.astype("datetime64[us]"), pa.timestamp("us", tz="UTC")),
        "day": pa.array(submit.astype("datetime64[D]"), pa.date32()),
        "nodes": pa.array(np.minimum(rng.geometric(0.08, n_jobs), 2000).astype(np.uint16)),
        "walltime_s": pa.array(rng.lognormal(7, 1.2, n_jobs).astype(np.float32)),
        "cost": pa.array([None if i % 97 == 0 else decimal.Decimal(f"{v:.2f}")
                          for i, v in enumerate(rng.gamma(2, 40, n_jobs))], pa.decimal128(12, 2)),
        "ok": _masked(rng, rng.random(n_jobs) < 0.9, 0.02),
        "tags": pa.array([None if v < 0.4 else ("mpi,omp" if v < 0.7 else "mpi") for v in rng.random(n_jobs)]),
    })
    jid = rng.integers(0, n_jobs, n_samples).astype(np.uint32)
    t = submit[jid].astype("datetime64[ms]") + rng.integers(0, 7_200_000, n_samples).astype("timedelta64[ms]")
    temp = rng.normal(55, 8, n_samples).astype(np.float32)
    temp[rng.random(n_samples) < 0.02] = np.nan
    samples = pa.table({
        "job_id": pa.array(jid),
        "t": pa.array(t, pa.timestamp("ms")),
        "node": pa.array(rng.integers(0, 4096, n_samples).astype(np.int16)),
        "power_w": pa.array(rng.normal(350, 60, n_samples)),
        "temp_c": pa.array(temp, from_pandas=True),
        "state": pa.DictionaryArray.from_arrays(
            pa.array(rng.choice(4, n_samples, p=[.7, .2, .07, .03]).astype(np.int8)),
            pa.array(["run", "io", "idle", "fail"])),
        "bytes_rw": pa.array(rng.pareto(1.5, n_samples).astype(np.int64) * 4096),
    })
    return {"jobs": job, "samples": samples}


def tables(schema: str) -> dict[str, pa.Table]:
    if schema not in SCHEMAS:
        raise InvalidArgument(f"unknown probe schema {schema!r}; one of {', '.join(SCHEMAS)}")
    return {"events": events, "sensors": sensors, "nested": nested, "jobs": jobs}[schema]()


def write(directory: str, schema: str) -> dict[str, str]:
    """The probe schema's tables as ``<directory>/<table>.parquet`` (the ``--data`` layout)."""
    return write_tables(directory, tables(schema))
