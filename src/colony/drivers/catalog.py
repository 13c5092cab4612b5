"""What a running colony holds, as SQL tables: the catalog behind `colony tables`,
`colony query --address` and the Flight SQL gateway.

A table is the set of objects of one pool whose keys start with ``<table>/`` (what
`colony load` writes); a pool whose keys carry no ``/`` is one table named after the pool
(the demo's ``particles``). Devices report their objects (``objects.entries``) and the
query service describes each table (schema, rows, bytes); statements then go through the
ordinary :class:`QueryClient` path (plan, estimate, decide, execute).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import pyarrow as pa

from colony.drivers.query import Cancels, QueryClient, ensure_calibrated
from colony.errors import ColonyError, ServiceError, UnknownTable
from colony.query.plan import TableSpec

INTERNAL_POOLS = ("__stats__",)
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TableInfo:
    name: str
    pool: str
    pattern: str
    devices: tuple[str, ...]
    objects: int
    rows: int
    bytes: int
    schema: pa.Schema
    lost: int = 0                         # objects devices report lost (a restart of a memory-only pool)
    lost_on: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        return {"table": self.name, "pool": self.pool, "devices": list(self.devices), "objects": self.objects,
                "rows": self.rows, "bytes": self.bytes, "lost": self.lost, "lost_on": list(self.lost_on),
                "schema": [{"name": f.name, "type": str(f.type), "nullable": f.nullable} for f in self.schema]}


def host_of(colony) -> str:
    """The colony's host device (where pushed-back work runs)."""
    for d in colony.devices():
        if d.role == "host":
            return d.name
    raise ServiceError("the colony has no host device; queries need one (role = \"host\")")


def place_query_service(colony, models_dir: str | None = None) -> list[str]:
    """Place the query service on every device that lacks it (run-time placement), its
    calibration records cached under ``models_dir``; returns the devices it was placed on."""
    missing = []
    for d in colony.devices():
        try:
            colony.call(d.name, "query", "health")
        except ServiceError:
            missing.append(d.name)
    if missing:
        opts = {"models_dir": models_dir} if models_dir else {}
        colony.place("query", missing, **opts)
    return missing


def ensure_query_service(colony, models_dir: str | None = None, calib_runs: int = 100, max_rows: int = 1_000_000,
                         on_calibrate=None, devices: list[str] | None = None, progress=None) -> bool:
    """Place the query service where it is missing (:func:`place_query_service`), then make
    sure the host and ``devices`` (default every device) have calibrated cost models
    (:func:`~colony.drivers.query.ensure_calibrated`). Returns whether it calibrated."""
    place_query_service(colony, models_dir)
    return ensure_calibrated(colony, host_of(colony), calib_runs, max_rows, on_calibrate=on_calibrate,
                             progress=progress, devices=devices)


def default_models_dir(colony_name: str) -> str:
    """Where a colony's calibrated query models are cached (``COLONY_MODELS_DIR`` overrides the root)."""
    root = os.environ.get("COLONY_MODELS_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "colony")
    return os.path.join(root, f"query-models-{colony_name}")


def _table_of(pool: str, key: str) -> tuple[str, str]:
    """(table, pattern) of one key: ``<table>/...`` keys are table ``<table>``, bare keys the pool's."""
    return (key.split("/", 1)[0], key.split("/", 1)[0] + "/*") if "/" in key else (pool, "*")


def scan(colony, host: str | None = None) -> list[TableInfo]:
    """Every table the colony's devices hold (the host's own pools excluded: queries read
    data where it is in transit), with the objects devices report lost: a table whose
    objects are all lost is still listed (no rows, no columns), since queries on it fail."""
    host = host or host_of(colony)
    devs = [d for d in colony.devices() if d.name != host]
    calls, where = [], []
    for d in devs:
        for pool in d.pools:
            if pool not in INTERNAL_POOLS:
                calls.append(colony.call_async(d.name, "objects", "entries", pool, ""))
                calls.append(colony.call_async(d.name, "objects", "lost", pool, ""))
                where.append((d.name, pool))
    names: dict[tuple[str, str], str] = {}           # (pool, table) -> pattern
    lost: dict[tuple[str, str], dict[str, int]] = {}  # (pool, table) -> device -> objects lost
    got = colony.wait(calls) if calls else []
    for (dev, pool), ents, gone in zip(where, got[0::2], got[1::2]):
        keys = [e.key for e in ents]
        if keys and not any("/" in k for k in keys):
            names[(pool, pool)] = "*"
        for k in keys:
            if "/" in k:
                t, pat = _table_of(pool, k)
                names[(pool, t)] = pat
        for k in gone:
            t, pat = _table_of(pool, k)
            names.setdefault((pool, t), pat)
            lost.setdefault((pool, t), {}).setdefault(dev, 0)
            lost[(pool, t)][dev] += 1
    if not names:
        return []
    specs = {f"{pool}\x00{t}": [pool, pat] for (pool, t), pat in names.items()}
    per: dict[str, list[tuple[str, dict]]] = {}
    described = colony.wait([colony.call_async(d.name, "query", "describe", specs, False) for d in devs])
    for d, info in zip(devs, described):
        for k, v in info.items():
            if v.get("objects"):
                per.setdefault(k, []).append((d.name, v))
    out = []
    for (pool, t), pat in names.items():
        parts = per.get(f"{pool}\x00{t}", [])
        gone = lost.get((pool, t), {})
        if not parts and not gone:
            continue
        out.append(TableInfo(name=t, pool=pool, pattern=pat, devices=tuple(sorted(p[0] for p in parts)),
                             objects=sum(p[1]["objects"] for p in parts), rows=sum(p[1]["rows"] for p in parts),
                             bytes=sum(p[1]["bytes"] for p in parts),
                             schema=(pa.ipc.read_schema(pa.py_buffer(parts[0][1]["schema"])) if parts
                                     else pa.schema([])),
                             lost=sum(gone.values()), lost_on=tuple(sorted(gone))))
    return sorted(out, key=lambda t: (t.pool, t.name))


class Catalog:
    """The colony's tables and a :class:`QueryClient` over them, rescanned when older than
    ``ttl_s`` or when a statement names a table the last scan did not see.

    ``calibrate(devices)``: called by a scan with the devices that hold a table and were not
    handed to it before (the host is calibrated with them), so a device is calibrated when
    data first sits on it, not every device of the colony up front: a five-device colony
    took minutes to calibrate before its first query read one SmartNIC's table. A scan that
    calibrates holds the statements that wait for it (a table it has not seen yet)."""

    def __init__(self, colony, host: str | None = None, ttl_s: float = 2.0, storm: dict | None = None,
                 calibrate: Callable[[list[str]], object] | None = None) -> None:
        self.colony = colony
        self.calibrate = calibrate
        self._calibrated: set[str] = set()
        self.host = host or host_of(colony)
        self.ttl_s = ttl_s
        self.storm = storm
        self._lock = threading.Lock()
        self._scan_lock = threading.Lock()
        self._rescanning = False
        self._at = -1e18
        self._tables: list[TableInfo] = []
        self._client: QueryClient | None = None
        self.cancels = Cancels()                      # shared by every client a rescan makes

    def tables(self, refresh: bool = False, wait: bool = True) -> list[TableInfo]:
        """The tables, rescanned when older than ``ttl_s`` (or ``refresh``). ``wait=False``
        (statements): a stale list is returned at once and rescanned in the background, so
        statements never queue behind a scan (Ray calls to every device) on their path."""
        with self._lock:
            stale = time.monotonic() - self._at > self.ttl_s
            if self._client is not None and not refresh and (not stale or not wait):
                if stale and not self._rescanning:
                    self._rescanning = True
                    threading.Thread(target=self._rescan_quietly, daemon=True, name="colony-catalog-scan").start()
                return self._tables
        self._rescan(time.monotonic())
        return self._tables

    def _rescan(self, asked: float) -> None:
        """Scan once; a caller that waited for another's scan started after it asked uses that one."""
        with self._scan_lock:
            if self._at >= asked and self._client is not None:
                return
            started = time.monotonic()
            tabs = scan(self.colony, self.host)
            held = sorted({d for t in tabs for d in t.devices} - self._calibrated)
            if held and self.calibrate is not None:
                self.calibrate(held)
            self._calibrated.update(held)
            with self._lock:
                if tabs != self._tables or self._client is None:
                    specs: dict[str, TableSpec] = {}
                    for t in tabs:
                        specs.setdefault(t.name, TableSpec(t.name, t.pool, t.pattern))   # first pool wins a name
                    self._client = QueryClient(self.colony, self.host, specs, storm=self.storm,
                                               cancels=self.cancels)
                self._tables, self._at = tabs, started

    def _rescan_quietly(self) -> None:
        try:
            self._rescan(time.monotonic())
        except ColonyError as e:              # the next statement tries again; this list stays
            log.warning("catalog rescan failed: %s", e)
        finally:
            with self._lock:
                self._rescanning = False

    def client(self, refresh: bool = False, wait: bool = True) -> QueryClient:
        self.tables(refresh, wait)
        assert self._client is not None
        return self._client

    def pool_of(self, table: str) -> str | None:
        return next((t.pool for t in self.tables(refresh=True) if t.name == table), None)

    def query(self, sql: str, placement: str = "auto", explain: bool = False, query_id: str | None = None):
        """Run SQL through the query client; a table unknown to the last scan triggers one rescan.
        ``query_id`` names it for :meth:`cancel`."""
        try:
            return self.client(wait=False).query(sql, placement, explain=explain, query_id=query_id)
        except UnknownTable:
            return self.client(refresh=True).query(sql, placement, explain=explain, query_id=query_id)

    def cancel(self, query_id: str) -> dict[str, list[int]]:
        """Stop a running query on every device working on it (worker pids killed per device)."""
        return self.client(wait=False).cancel(query_id)
