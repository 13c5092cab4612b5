"""Client side of in-transit queries: plan SQL, send it to the device holding the data,
finish pushed-back or split work on the host, and measure every term.

Works on any colony-like object with ``call(device, service, method, ...)`` and
``devices()`` (colony.connect's Colony or LocalColony; both pace calls on their links).
"""

from __future__ import annotations

import functools
import threading
import time
import uuid
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from colony import codec
from colony.decide import total_as_priced, worker_start
from colony.query import plan as qplan
from colony.query.plan import TableSpec
from colony.query.worker import CancelledIds
from colony.errors import ColonyError, QueryCancelled, QueryError, UnknownDevice, UnknownTable
from colony.services.query import PROBE_POOL


@dataclass
class QueryResult:
    table: pa.Table | None
    placement: str
    decision: dict
    actual: dict                                  # measured seconds per term, and "total"
    device: str
    sql: str = ""
    est_rows: float = 0.0
    explain_only: bool = False
    extra: dict = field(default_factory=dict)

    @property
    def predicted_total(self) -> float | None:
        p = self.decision.get("predicted", {}).get(self.placement)
        return p["total"] if p else None

    @property
    def job(self) -> dict:
        """The job's size for schedulers: op vector, predicted device-seconds, bytes read."""
        est = self.decision.get("estimate", {})
        down = self.decision.get("predicted", {}).get("down") or {}
        return {"ops": est.get("ops"), "device_s": down.get("exec"), "input_bytes": est.get("input_bytes"),
                "result_bytes": down.get("bytes"), "input_rows": est.get("input_rows")}

    def to_dict(self) -> dict:
        return {"sql": self.sql, "device": self.device, "placement": self.placement,
                "reason": self.decision.get("reason"), "est_rows": self.est_rows,
                "rows": None if self.table is None else self.table.num_rows,
                "predicted": self.decision.get("predicted"), "actual": self.actual,
                "supported": self.decision.get("estimate", {}).get("supported", True),
                "job": self.job,
                "estimate_reason": self.decision.get("estimate", {}).get("reason", ""),
                "ops": self.decision.get("estimate", {}).get("ops")}


class Cancels:
    """Queries in flight (id -> the devices working on them) and the ids cancelled. Shared by
    the clients of one catalog, so a cancel finds its query whichever client runs it; a
    cancel that overtakes its query is remembered and refuses it."""

    def __init__(self, keep: int = 4096) -> None:
        self._lock = threading.Lock()
        self._active: dict[str, set[str]] = {}
        self._cancelled = CancelledIds(keep)

    def enter(self, query_id: str, devices) -> None:
        with self._lock:
            if query_id in self._cancelled:
                raise QueryCancelled(f"query {query_id} was cancelled by its client")
            self._active.setdefault(query_id, set()).update(devices)

    def leave(self, query_id: str) -> None:
        with self._lock:
            self._active.pop(query_id, None)

    def cancel(self, query_id: str) -> set[str]:
        """Mark it cancelled; the devices it is running on now."""
        with self._lock:
            self._cancelled.add(query_id)
            return set(self._active.get(query_id, ()))


def _hosted_legs(act: dict, hosted: dict, back_leg: float) -> dict:
    """The measured legs of a placement the host ran for the device, under the names of the
    predicted terms they compare with: ``transfer`` is the device -> host handover (the push of
    the objects or cut results over the device's link, with the relay's call and the host's
    answer coming back to the device: what the device waited beyond the host's own run);
    ``result`` is the answer's way on from the device to the client. Before, ``transfer`` was
    that last leg, and a term table set it beside the predicted push."""
    handover = act.get("to_host", 0.0) - float(hosted.get("host_total", 0.0))
    return {"transfer": max(0.0, handover), "result": back_leg}


def _add_host_terms(act: dict, hosted: dict) -> None:
    """The host's measured terms of a placement it ran, and its wait for a freshly started
    query worker (``worker_start_host``, beside the device's ``worker_start``: measured apart
    from the executions, learnt by no correction)."""
    act.update(deser_host=hosted["deser_host"], exec_host=hosted["exec_host"], host_threads=hosted["threads"],
               wait=max(0.0, hosted.get("queued_s", 0.0)))
    if hosted.get("worker_start"):
        act["worker_start_host"] = float(hosted["worker_start"])


class QueryClient:
    """Runs SQL over tables bound to pool/key patterns in a colony."""

    def __init__(self, colony, host: str, tables: dict[str, TableSpec] | None = None, storm: dict | None = None,
                 send_load: bool = True, devices: list[str] | None = None, cancels: Cancels | None = None):
        """``send_load=False`` leaves the host's load report out of requests (the naive engine,
        for measuring push-back storms); ``devices`` limits where tables are looked for
        (default: every device but the host); ``cancels``: a registry shared with other clients."""
        self.cancels = cancels or Cancels()
        self.send_load = send_load
        self.colony = colony
        self.host = host
        self.tables = tables or {"particles": TableSpec("particles", "particles", "*")}
        self.storm = storm
        self._where: dict | None = None
        self._plans: dict[str, tuple] = {}     # sql -> (the locate() it was planned against, plan, devices, tables)
        self._plans_lock = threading.Lock()
        self._feedback: dict = {}          # device -> the last query's predicted and measured total
        self._warmed: set[str] = set()     # devices whose query workers this client has had started
        self._devices = devices

    def _specs(self) -> dict:
        return {n: (t.pool, t.pattern) for n, t in self.tables.items()}

    def locate(self, refresh: bool = False) -> dict:
        """Which devices hold objects of each table, and the tables' schemas."""
        if self._where is not None and not refresh:
            return self._where
        where: dict = {n: [] for n in self.tables}
        schemas: dict = {}
        for dev in self._devices or [d.name for d in self.colony.devices()]:
            if dev == self.host:
                continue
            info = self.colony.call(dev, "query", "describe", self._specs())
            for name, d in info.items():
                if d.get("objects"):
                    where[name].append(dev)
                    schemas.setdefault(name, pa.ipc.read_schema(pa.py_buffer(d["schema"])))
        self._where = {"devices": where, "schemas": schemas}
        return self._where

    def warm_workers(self, sql: str) -> dict[str, float]:
        """Have a query worker ready on each device ``sql`` reads and on the host, started now
        where none is idle (once per device for this client): runs measured after this are
        warm, and a prediction made after it prices no worker's start. The seconds each device
        newly asked took (a worker's start, ~1 s here, where one had to start)."""
        _, devs, _ = self._plan_used(sql)
        out = {}
        for d in dict.fromkeys([*devs, self.host]):
            if d not in self._warmed:
                out[d] = float(self.colony.call(d, "query", "warm_workers"))
                self._warmed.add(d)
        return out

    def plan(self, sql: str) -> tuple[bytes, str]:
        plan_bytes, devs = self.plan_multi(sql)
        if len(devs) != 1:
            raise QueryError(f"query spans devices {devs}; use query(), which combines them on the host")
        return plan_bytes, devs[0]

    def plan_multi(self, sql: str) -> tuple[bytes, list[str]]:
        plan_bytes, devs, _ = self._plan_used(sql)
        return plan_bytes, devs

    def _plan_used(self, sql: str) -> tuple[bytes, list[str], list[str]]:
        """Substrait plan, devices holding its tables, and the tables it reads; kept per SQL
        text while the tables' locations and schemas stay the same (dashboards, tools and
        the gateway's clients repeat statements; planning is DataFusion's CPU each time)."""
        loc = self.locate()
        with self._plans_lock:
            hit = self._plans.get(sql)
        if hit is not None and hit[0] is loc:
            return hit[1], hit[2], hit[3]
        plan_bytes, devs, used = self._plan_fresh(sql, loc)
        with self._plans_lock:
            if len(self._plans) >= 1024:
                self._plans.pop(next(iter(self._plans)))
            self._plans[sql] = (loc, plan_bytes, devs, used)
        return plan_bytes, devs, used

    def _plan_fresh(self, sql: str, loc: dict) -> tuple[bytes, list[str], list[str]]:
        plan_bytes = qplan.to_substrait(sql, loc["schemas"] or {})
        from colony.query.estimate import plan_json
        pj = plan_json(plan_bytes)
        used = _tables_in(pj)
        devs = sorted({d for t in used for d in loc["devices"].get(t, [])})
        missing = [t for t in used if not loc["devices"].get(t)]
        if missing:
            raise UnknownTable(f"no device holds objects for table(s) {missing}; load data first")
        return plan_bytes, devs, used

    def _bound(self, used: list[str]) -> dict:
        """The table bindings a device needs: only the tables the plan reads (a device need
        not hold every table of the catalog)."""
        return {n: list(s) for n, s in self._specs().items() if n in used}

    def cancel(self, query_id: str) -> dict[str, list[int]]:
        """Cancel a query started with ``query_id``: every device working on it kills the
        worker process running it (and refuses it from then on); the query raises
        QueryCancelled. Returns the worker pids killed per device."""
        out: dict[str, list[int]] = {}
        for d in sorted(self.cancels.cancel(query_id)):
            try:
                out[d] = self.colony.call(d, "query", "cancel", query_id)["killed"]
            except ColonyError:          # a device that is gone has stopped the work too
                out[d] = []
        return out

    def query(self, sql: str, placement: str = "auto", explain: bool = False,
              query_id: str | None = None) -> QueryResult:
        """Plan, decide and run (or only explain). ``query_id`` names it for :meth:`cancel`;
        interrupted (Ctrl-C), it is cancelled on the devices working on it."""
        qid = query_id or uuid.uuid4().hex
        try:
            return self._query(sql, placement, explain, qid)
        except KeyboardInterrupt:
            self.cancel(qid)
            raise
        finally:
            self.cancels.leave(qid)

    def _query(self, sql: str, placement: str, explain: bool, qid: str) -> QueryResult:
        t_start = time.perf_counter()
        plan_bytes, devs, used = self._plan_used(sql)
        self.cancels.enter(qid, [*devs, self.host])
        if not devs:                               # reads no table (select 1): the host answers
            h = self.colony.call(self.host, "query", "run_pushed", plan_bytes, {}, query_id=qid)
            return QueryResult(qplan.with_plan_names(h["result"], plan_bytes), "host",
                               {"placement": "host", "reason": "reads no table", "predicted": {},
                                "estimate": {"supported": True}},
                               {"exec_host": h["exec_host"], "total": time.perf_counter() - t_start},
                               self.host, sql, float(h["result"].num_rows))
        if len(devs) > 1:
            return self._query_multi(sql, plan_bytes, devs, placement, explain, t_start, used, qid)
        dev = devs[0]
        load = self.colony.call(self.host, "query", "load") if self.send_load else None
        tables = self._bound(used)
        storm = dict(self.storm, host=self.host) if self.storm else None
        if explain:
            r = self.colony.call(dev, "query", "explain", plan_bytes, tables, placement, load, storm)
            extra = {"estimate_cpu_s": r["estimate_cpu_s"], "estimate_cpu_parts_s": r.get("estimate_cpu_parts_s")}
            return QueryResult(None, r["decision"]["placement"], r["decision"], {}, dev, sql,
                               r["decision"]["estimate"]["rows"], True, extra)
        t0 = time.perf_counter()
        r = self.colony.call(dev, "query", "execute", plan_bytes, tables, placement, load, storm, self.host,
                             feedback=self._feedback.pop(dev, None), query_id=qid)
        call_s = time.perf_counter() - t0
        act = dict(r["actual"])
        act["transfer"] = max(0.0, call_s - act.get("device_total", 0.0))    # device -> client, and the call
        pl = r["decision"]["placement"]
        if "hosted" in r:                          # the device handed its objects to the host itself
            h = r["hosted"]
            table = h["result"]
            _add_host_terms(act, h)
            act.update(_hosted_legs(act, h, act["transfer"]))
        elif pl == "down":
            t0 = time.perf_counter()
            table = codec.unpack(r["result"], verify=False)[0]
            act["deser_host"] = time.perf_counter() - t0
        else:
            inputs = r["objects"] if pl == "back" else qplan.split_inputs(r["result"])
            h = self.colony.call(self.host, "query", "run_pushed", r["plan"], inputs, r.get("reserved", False),
                                 query_id=qid)
            table = h["result"]
            _add_host_terms(act, h)
        act["total"] = time.perf_counter() - t_start
        pred = (r["decision"].get("predicted") or {}).get(pl)
        if pred:       # travels with the next request: the device corrects its end-to-end prediction
            # (of everything but the executions, which the device and host correct per shape)
            self._feedback[dev] = {"placement": pl, "predicted": pred["total"] - worker_start(pred),
                                   "actual": total_as_priced(pred, act),
                                   "key": (r["decision"].get("total_keys") or {}).get(pl)}
        return QueryResult(qplan.with_plan_names(table, plan_bytes), pl, r["decision"], act, dev, sql, r["est_rows"],
                           extra={"estimate_cpu_s": r["estimate_cpu_s"]})


    @staticmethod
    def _collect(r: dict, pieces: list, raw: dict) -> None:
        """A device's answer: a result, objects it handed back, or nothing here (it went to the host)."""
        if "hosted" in r:
            pieces.append(codec.pack([r["hosted"]["result"]]))
        elif "staged" in r:
            return
        elif r["decision"]["placement"] == "back":
            for name, bufs in r["objects"].items():
                raw.setdefault(name, []).extend(bufs)
        else:
            pieces.append(r["result"])

    def _query_multi(self, sql, plan_bytes, devs, placement, explain, t_start, used, qid) -> QueryResult:
        """A table spread over several devices: each device runs (or hands back) the
        filter/projection part over its own objects; the host combines.

        - all-filter/projection plan: each device decides down/back for the whole plan and
          the results concatenate;
        - plan with a cut point: each device decides for the lower part, the host runs the
          upper part over the union of the lower results;
        - anything else (e.g. a union of tables at the top): every device hands back and the
          host runs the whole plan over the union of the objects.
        """
        from colony.query.estimate import is_pure, plan_json
        pj = plan_json(plan_bytes)
        root = pj["relations"][0]["root"]["input"]
        tables = self._bound(used)
        load = self.colony.call(self.host, "query", "load")
        storm = dict(self.storm, host=self.host) if self.storm else None
        if is_pure(root):
            lower, template = plan_bytes, None
        else:
            cut = qplan.split_plans(plan_bytes)      # one cut per device is combined here
            lower, template = (cut[0][0], cut[1]) if cut and len(cut[0]) == 1 else (None, None)
        per_dev = "back" if lower is None else ("down" if placement in ("down", "split") else placement)
        if explain:
            decs = {d: self.colony.call(d, "query", "explain", lower or plan_bytes, tables, per_dev, load, storm)
                    for d in devs}
            first = next(iter(decs.values()))["decision"]
            return QueryResult(None, "multi", {**first, "per_device": {d: v["decision"] for d, v in decs.items()},
                                               "reason": "table spans devices " + ", ".join(devs)},
                               {}, ",".join(devs), sql, sum(v["decision"]["estimate"]["rows"] for v in decs.values()),
                               True)
        pieces, raw, decisions, act = [], {}, {}, {"per_device": {}}
        # with a lower (filter/projection) part, a device that pushes back hands its objects to the
        # host itself and gets the lower part's answer; the whole plan over every device's objects
        # together (no lower part) gathers them on the host: each device stages its own there
        stage = None if lower is not None else f"multi-{uuid.uuid4().hex}"
        staged = False
        try:
            for d in devs:
                t0 = time.perf_counter()
                r = self.colony.call(d, "query", "execute", lower or plan_bytes, tables, per_dev, load, storm,
                                     self.host, stage=stage, query_id=qid)
                a = dict(r["actual"], call_s=time.perf_counter() - t0)
                act["per_device"][d] = a
                decisions[d] = r["decision"]
                staged = staged or "staged" in r
                self._collect(r, pieces, raw)
            if staged:
                h = self.colony.call(self.host, "query", "run_staged", plan_bytes, stage, query_id=qid)
                stage = None                       # run_staged forgot them
        finally:
            if stage is not None:
                self.colony.call(self.host, "query", "drop_staged", stage)
        if staged:
            table, pieces = h["result"], []
            act["exec_host"] = h["exec_host"]
        if raw:
            if lower is None:                      # host runs everything over all objects
                h = self.colony.call(self.host, "query", "run_pushed", plan_bytes, raw, query_id=qid)
                table = h["result"]
                act["exec_host"] = h["exec_host"]
                pieces = []
            else:
                h = self.colony.call(self.host, "query", "run_pushed", lower, raw, query_id=qid)
                pieces.append(codec.pack([h["result"]]))
                act["exec_host_lower"] = h["exec_host"]
        if lower is not None:
            tabs = [codec.unpack(b, verify=False)[0] for b in pieces]
            if template is None:
                table = pa.concat_tables(tabs) if tabs else None
            else:
                up = qplan.upper_plan(template, [tabs[0].schema])
                h = self.colony.call(self.host, "query", "run_pushed", up, {qplan.split_table(0): pieces},
                                     query_id=qid)
                table = h["result"]
                act["exec_host"] = h["exec_host"]
        act["total"] = time.perf_counter() - t_start
        placements = sorted({v["placement"] for v in decisions.values()})
        dec = {"placement": "multi", "reason": f"table spans {len(devs)} devices; per device: "
               + ", ".join(f"{d}={v['placement']}" for d, v in decisions.items()),
               "predicted": {}, "per_device": decisions, "estimate": {"supported": True}}
        return QueryResult(qplan.with_plan_names(table, plan_bytes), "+".join(placements), dec, act, ",".join(devs), sql,
                           sum(v["estimate"]["rows"] for v in decisions.values()))


def _tables_in(pj: dict) -> list[str]:
    out: list[str] = []

    def walk(o):
        if isinstance(o, dict):
            if "namedTable" in o:
                out.extend(o["namedTable"].get("names", [])[-1:])
            for v in o.values():
                walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)
    walk(pj.get("relations", []))
    return sorted(set(out))


def ensure_calibrated(colony, host: str, n_runs: int, max_rows: int, recalibrate: bool = False,
                      on_calibrate=None, progress=None, cover: bool = False,
                      devices: list[str] | None = None) -> bool:
    """Calibrate the devices (every one, or the host and ``devices``) unless all have models
    (each device's calibration record, valid for its fingerprint); otherwise just hand the
    host's models to the devices. Returns whether it calibrated. ``on_calibrate(reason)`` is
    called before calibrating, ``progress(device)`` as each device finishes. A recalibration
    for drift alone repeats the sizes the records covered (the largest of them), not
    ``n_runs``/``max_rows``: those are what a first calibration should cover, and a drifted
    record already said what fits.

    ``cover``: the sizes are a requirement, not a first calibration's default (a benchmark
    whose JSON reports them; the demo, whose table they cover): a record calibrated on smaller
    tables or fewer runs (under 90 % of ``max_rows`` or half of ``n_runs``) is recalibrated at
    the asked sizes. A record the test suite made on 30k-row tables once priced a 1M-row
    benchmark's push-backs 3x high. Without ``cover`` (``colony query``, ``colony load``,
    the gateway) a valid record is kept whatever sizes it was made on.

    Devices with no record or one that falls short are calibrated alone, on the host's record,
    when the host's is valid (and covers): a colony that adds SmartNICs, or gets new ones (the
    demo's unpaced-link fingerprints), keeps a larger host record it shares.

    ``devices``: the devices the caller's queries run on (the host is always one; default
    every device). Only their records are checked and made: a benchmark whose tables sit on
    one SmartNIC spent three fifths of its calibration on three SmartNICs it never queried.
    Another device is calibrated, alone, when a query first needs it."""
    why, bare, sizes, drifted, old_path = (["asked to"] if recalibrate else []), [], [], [], []
    short: dict[str, str] = {}          # devices whose record falls short of the sizes asked -> what it covers
    devs = colony.devices()
    if devices is not None:
        unknown = sorted(set(devices) - {d.name for d in devs})
        if unknown:
            raise UnknownDevice(f"no device {', '.join(unknown)} in this colony "
                                f"(it has {', '.join(d.name for d in devs)})")
        keep = set(devices) | {host}
        devs = [d for d in devs if d.name in keep]
    for d in devs:
        h = colony.call(d.name, "query", "health")
        if not h["calibrated"] or not h.get("links_calibrated", True):
            bare.append(d.name)
            continue
        sz = h.get("sizes")
        if isinstance(sz, dict):
            sizes.append(sz)
            runs, rows = int(sz.get("runs", n_runs)), int(sz.get("max_rows", max_rows))
            if cover and (rows < 0.9 * max_rows or runs < 0.5 * n_runs):
                short[d.name] = f"{d.name}'s record covers {runs} runs to {rows:,} rows"
        if h.get("drift"):      # its online correction drifted past its bound: the record no longer fits
            drifted.append(d.name)
            why.append(f"{d.name} drifted ({', '.join(h['drift'])})")
        if d.role != "host" and int(h.get("call_path_revision") or 0) < CALL_PATH_REVISION:
            old_path.append(d.name)
    if bare:
        why.append("no device calibrated yet" if len(bare) == len(devs) else f"{', '.join(bare)} not calibrated")
    if short:
        why.append(f"{'; '.join(short.values())} (asked for {n_runs} to {max_rows:,})")
    if why:
        if sizes and not bare and not short and not recalibrate:
            n_runs = max(int(s.get("runs", n_runs)) for s in sizes)
            max_rows = max(int(s.get("max_rows", max_rows)) for s in sizes)
            why.append(f"{n_runs} runs to {max_rows:,} rows, as recorded")
        # records missing or too small, the host's not among them: do just those devices on the
        # host's record (the demo, whose SmartNICs had no record, redid the host at its smaller
        # size too and so replaced a benchmark's host record; the next benchmark redid them all)
        need = [d.name for d in devs if d.name in bare or d.name in short]
        only = need if need and host not in need and not recalibrate and not drifted else None
        if only:
            why[-1] += f"; the host's record covers it: calibrating {', '.join(only)} only"
        if on_calibrate:
            on_calibrate("; ".join(why))
        calibrate_colony(colony, host, n_runs=n_runs, max_rows=max_rows, progress=progress,
                         devices=only or [d.name for d in devs], keep_host=bool(only))
        return True
    hm = colony.call(host, "query", "models_json")
    for d in colony.devices():
        if d.name != host:
            colony.call(d.name, "query", "set_host_models", hm)
    if old_path:
        # only the call-path fit's rule changed since these records: refit it (a minute or
        # two of probe queries), not the models (most of an hour on a benchmark's sizes)
        if on_calibrate:
            on_calibrate(f"{', '.join(old_path)}: call-path fit of an older revision, refitting it "
                         f"(revision {CALL_PATH_REVISION})")
        rows = max([int(s.get("max_rows", max_rows)) for s in sizes] or [max_rows])
        runs = max([int(s.get("runs", n_runs)) for s in sizes] or [n_runs])
        for d in old_path:
            calibrate_call_path(colony, host, [d], sizes=call_path_sizes(rows), probes=runs)
            if progress:
                progress(d)
        return True
    return False


def calibrate_colony(colony, host: str, n_runs: int = 120, max_rows: int = 400_000, seed: int = 0,
                     devices: list[str] | None = None, progress=None, keep_host: bool = False) -> dict:
    """Calibrate every device on itself, measure each link from the host, install host models on devices.
    ``keep_host``: the host keeps its record (models and link); only ``devices`` are calibrated."""
    from colony.cost.calibrate import calibrate_link
    every = [host] + [d.name for d in colony.devices() if d.name != host]
    devices = devices or every
    out = {}
    for d in [host] + [x for x in devices if x != host]:
        if d == host and keep_host:
            continue
        # each device's seed by its place in the whole colony, whichever devices are redone
        out[d] = colony.call(d, "query", "calibrate", n_runs=n_runs, max_rows=max_rows,
                             seed=seed + (every.index(d) if d in every else len(every)))
        if progress:
            progress(d)

    def fetch(n, d):
        t0 = time.perf_counter()
        colony.call(d, "query", "blob", n)
        return time.perf_counter() - t0
    # every leg a result or pushed-back object takes: device -> client, device -> host, and
    # host -> client (the runtime relays a push-back's result from the host to the client)
    if not keep_host:
        link, rep = calibrate_link(lambda n: fetch(n, host), seed=seed)
        colony.call(host, "query", "set_link", link.to_json(), rep)
    host_models = out[host] = colony.call(host, "query", "models_json")
    for d in devices:
        if d == host:
            continue
        link, rep = calibrate_link(lambda n, d=d: fetch(n, d), seed=seed)
        colony.call(d, "query", "set_link", link.to_json(), rep)
        link, rep = calibrate_link(lambda n, d=d: colony.call(d, "query", "push_probe", host, n), seed=seed)
        colony.call(d, "query", "set_link", link.to_json(), rep, "host")
    # every device prices push-back with the host's models, the ones that kept their records
    # too: when only a device without a record was calibrated, the others (their models loaded
    # from their records at start) had none, and decided every query "down" unpriced
    for d in every:
        if d != host:
            colony.call(d, "query", "set_host_models", host_models)
    calibrate_call_path(colony, host, [d for d in devices if d != host], sizes=call_path_sizes(max_rows), seed=seed,
                        probes=n_runs)
    for d in devices:
        if d != host:
            out[d] = colony.call(d, "query", "models_json")
    return out


# the call-path fit's rule (recorded in its report): a device whose record holds an older
# fit refits the call path alone (ensure_calibrated). 2: the device -> host link refitted
# on the probes' handovers (_link_fit)
CALL_PATH_REVISION = 2


def call_path_sizes(max_rows: int) -> tuple[int, int, int]:
    """The particle tables' rows the call-path probes run on, for a calibration to ``max_rows``."""
    return max(5_000, max_rows // 20), max(10_000, max_rows // 4), max(20_000, max_rows)


PROBES = ("select * from particles where x < {p}",
          "select particle_id & 15 as g, count(*), avg(vx) from particles where y < {p} group by g",
          "select id, x * 2, vy from particles where z < {p}",
          "select id, x from particles where y < {p} order by x limit 100",
          "select particle_id & 4095 as g, max(x) from particles where z < {p} group by g",
          "select count(*) from particles where abs(vx) < {va}")


def _probe_sets(sizes, seed: int):
    """(tables, probe templates) per probe size: the particle probes at every size, and the
    calibration's own TPC-H templates (colony.cost.calibrate.LTEMPLATES: dates,
    decimals, strings, a join, wide filter results) on TPC-H-shaped tables at the two
    largest, so the call-path fit sees the shapes and sizes a multi-table schema brings."""
    from colony.cost.calibrate import LTEMPLATES, TPCH_TABLES
    from colony.data import tpch, uniform
    for i, n in enumerate(sizes):
        yield {"particles": uniform(n, seed=seed + i, n_particles=max(1, n // 4))}, PROBES
    for i, n in enumerate(sorted(sizes)[-2:]):
        t = tpch.tables(sf=max(n / 6_000_000, 0.001), seed=seed + 100 + i)
        yield {name: t[name] for name in TPCH_TABLES}, tuple(LTEMPLATES.values())


def _probe_budget(sets: list, budget: int | None, rng) -> list:
    """``sets`` with at most about ``budget`` probe templates in all (None: every one): each
    set keeps its share of the budget by its number of templates, at least 2, drawn at random.
    A calibration asked for a few runs (a first `colony load` on a new colony, the tests'
    small colonies) stays a few seconds per device: every probe under four placements each was
    some 200 queries a device whatever the runs asked."""
    total = sum(len(p) for _t, p in sets)
    if budget is None or budget >= total:
        return sets
    out = []
    for tables, probes in sets:
        k = min(len(probes), max(2, round(budget * len(probes) / total)))
        out.append((tables, tuple(probes[i] for i in sorted(rng.choice(len(probes), k, replace=False)))))
    return out


def calibrate_call_path(colony, host: str, devices: list[str], sizes=(40_000, 300_000), seed: int = 0,
                        probes: int | None = None) -> dict:
    """Send probe queries through the path real queries take (this client, the runtime's
    calls and links, the device's queue, the host's engine) under every placement, and fit
    measured = a + b * predicted per placement, each measured total with its executions as
    priced (:func:`colony.decide.total_as_priced`); the device adds it to its predictions. Before
    that fit, the legs the probes measured are refitted where that predicts them better: the
    device -> client link on the down probes, the device -> host link on the back and split
    probes' handovers (:func:`_link_fit`, each), and an offset for the host's legs that the
    refitted links do not price (:func:`_leg_offset`). The fits are recorded with
    :data:`CALL_PATH_REVISION`. ``probes``: at most about that many probe templates a device
    (:func:`_probe_budget`; None, all 50)."""
    from colony.cost.calibrate import fill
    from colony.cost.models import DeviceModels, ape, leg_offset
    rng = np.random.Generator(np.random.SFC64(seed + 17))
    sets = _probe_budget(list(_probe_sets(sizes, seed)), probes, rng)
    out = {}
    for d in devices:
        # per placement, each probe's (raw total as priced, measured total, predicted terms)
        pts: dict = {pl: [] for pl in ("down", "back", "split")}
        legs: list[tuple[float, float, float, float]] = []     # down: the device -> client leg (_leg_row)
        pushes: list[tuple[float, float, float, float]] = []   # back, split: the device -> host handover
        # the host's legs (back, split): (predicted without the installed offset, measured)
        installed = (colony.call(d, "query", "models_json") or {}).get("call_path") or {}
        old = functools.partial(leg_offset, installed)    # the offset the probes' prices carry now
        hosted: dict = {name: [] for name in DeviceModels.LEGS}
        unpriced = 0
        for i, (tables, probes) in enumerate(sets):
            keys = []
            for name, t in tables.items():
                for j in range(2):
                    keys.append(f"probe-{i}-{name}-{j}")
                    n = t.num_rows
                    colony.call(d, "query", "probe_table", PROBE_POOL, keys[-1], t.slice(j * n // 2, (n + j) // 2))
            client = QueryClient(colony, host, {name: TableSpec(name, PROBE_POOL, f"probe-{i}-{name}-*")
                                                for name in tables}, devices=[d])
            try:
                for tpl in probes:
                    sql = fill(tpl, rng)
                    client.query(sql, "down")                      # warm the engine and caches
                    for pl in pts:
                        r = client.query(sql, pl)
                        if r.placement != pl:
                            continue
                        p = (r.decision.get("predicted") or {}).get(pl)
                        if p is None:             # a plan the models cannot price says nothing about the call path
                            unpriced += 1
                            continue
                        # measured with its executions as priced: execution misses have their
                        # own per-shape corrections (as the online end-to-end correction learns)
                        pts[pl].append((p["total"] - p.get("call", 0.0) - worker_start(p),
                                        total_as_priced(p, r.actual), p))
                        if pl != "down" and "to_host" in r.actual:     # the device handed it to the host
                            for name, term in zip(DeviceModels.LEGS, ("transfer", "result")):
                                if term in p and isinstance(r.actual.get(term), (int, float)):
                                    hosted[name].append((p[term] - old(name), float(r.actual[term])))
                            pushes.append(_leg_row(r.actual, p))
                        if pl == "down":
                            legs.append(_leg_row(r.actual, p))
            finally:
                for k in keys:
                    colony.call(d, "query", "probe_table", PROBE_POOL, k, None)
        fits, report = {}, {"revision": CALL_PATH_REVISION}
        raw = {pl: [x[0] for x in v] for pl, v in pts.items()}
        link = _link_fit(legs, "down probes through the query path")
        if link is not None:
            model, report["link"] = link
            colony.call(d, "query", "set_link", model.to_json(), report["link"])
            # the down probes' raw totals, re-priced with the link now installed
            raw["down"] = [r - p.get("transfer", 0.0) + model.predict(p.get("bytes", 0.0)) for r, _a, p in pts["down"]]
        push = _link_fit(pushes, "back and split probes' handover through the query path")
        if push is not None:
            model, report["link_host"] = push
            colony.call(d, "query", "set_link", model.to_json(), report["link_host"], "host")
            for pl in ("back", "split"):        # the whole handover re-priced: no offset on top
                raw[pl] = [r - p.get("transfer", 0.0) + max(0.0, model.predict(p.get("bytes", 0.0)))
                           for r, _a, p in pts[pl]]
        shift = 0.0                  # what the host's legs now add to a back or split probe's raw total
        for name in DeviceModels.LEGS:
            if name == "handover" and push is not None:
                continue
            fit = _leg_offset(hosted[name])
            if fit is not None:
                fits[name], report[name] = {"a": fit[0], "b": 1.0}, fit[1]
            shift += (fit[0] if fit is not None else 0.0) - old(name)
        for pl in ("back", "split"):
            raw[pl] = [x + shift for x in raw[pl]]
        for pl, v in pts.items():
            if len(v) < 3:
                continue
            x, y = np.asarray(raw[pl], float), np.asarray([a for _r, a, _p in v], float)
            form, m, loo = _call_path_fit(x, y)
            fits[pl] = m.to_json()
            report[pl] = {"n": len(v), "ape_before_median": float(np.median(ape(x, y))),
                          "ape_after_median": float(np.median(ape(m.predict(x), y))),
                          "form": form, "loo_ape_median": loo}
        if unpriced:
            report["unpriced_probes"] = unpriced
        colony.call(d, "query", "set_call_path", fits, report)
        out[d] = report
    return out


def _leg_row(actual: dict, predicted: dict) -> tuple[float, float, float, float]:
    """One probe's leg for :func:`_link_fit`: (bytes sent, the leg's measured seconds, bytes
    predicted, the leg's predicted seconds); nan where the leg was not measured."""
    return (float(actual.get("bytes", np.nan)), float(actual.get("transfer", np.nan)),
            float(predicted.get("bytes", 0.0)), float(predicted.get("transfer", 0.0)))


def _loo_ape(fit, x: np.ndarray, y: np.ndarray) -> float:
    """Leave-one-out median percentage error of ``fit(x, y)`` (a model with ``predict``) on
    the points themselves: how the probe fits below choose a form."""
    from colony.cost.models import ape
    return float(np.median([ape(fit(np.delete(x, i), np.delete(y, i)).predict(x[i:i + 1]), y[i:i + 1])[0]
                            for i in range(len(x))]))


def _link_fit(legs: list[tuple[float, float, float, float]], source: str):
    """A link fitted on probe queries' own legs (:func:`_leg_row`: bytes sent against the leg's
    measured seconds), or None to keep the link as priced now. The bare-buffer calls that fit
    the links first carry no plan, no table binding and no answer, and send one buffer, not a
    table's objects: the device -> client fit priced a small query's leg ~1 ms low (runs
    18-20: 2.1 ms predicted, 3.0-3.4 ms measured), the device -> host fit priced a push-back of
    whole tables 1.4-1.8x high (run 124: 1.4 ns/B against 0.4-0.8 measured), and the call-path
    fit made up for each by scaling every term of the total (a push-back slope of 0.4-0.7,
    which priced a push-back that its host's execution dominates 30-40 % low). Kept only when
    its leave-one-out median error on the probes beats the present price's error on them."""
    from colony.cost.models import LinearModel, ape
    rows = np.array(legs, float).reshape(-1, 4)
    rows = rows[np.isfinite(rows).all(axis=1) & (rows[:, 1] > 0)]
    if len(rows) < 6:
        return None
    x, y, before = rows[:, 0], rows[:, 1], rows[:, 3]
    loo = _loo_ape(LinearModel.fit, x, y)
    priced = float(np.median(ape(before, y)))
    if loo >= priced:
        return None
    m = LinearModel.fit(x, y)
    return m, {"n": len(rows), "source": source, "loo_ape_median": loo,
               "ape_before_median": priced, "a": m.a, "b": m.b}


def _leg_offset(pts: list[tuple[float, float]]):
    """A leg of the placements the host runs, measured on the probes beyond what its link model
    prices: (offset seconds, report), or None where the offset does not lower the probes'
    leave-one-out median error. The push-probe and blob fits time one bare call; a query's
    handover also carries the host's answer back to the device, and its result is relayed on to
    the client: on the families benchmark (run 47) the handover of a split took 11.3 ms against
    3.8 ms priced, the result 6.1 ms against 2.0 ms, and the call-path fit scaled every split
    term by 1.6-1.9 to make up for it."""
    from colony.cost.models import ape
    rows = np.array(pts, float).reshape(-1, 2)
    rows = rows[np.isfinite(rows).all(axis=1) & (rows[:, 1] > 0)]
    if len(rows) < 6:
        return None
    x, y = np.maximum(rows[:, 0], 0.0), rows[:, 1]
    before = float(np.median(ape(x, y)))
    loo = _loo_ape(_offset_fit, x, y)
    if loo >= before:
        return None
    off = _offset_fit(x, y).a
    return off, {"n": len(rows), "offset_s": off, "ape_before_median": before, "loo_ape_median": loo,
                 "ape_after_median": float(np.median(ape(x + off, y)))}


def _offset_fit(x: np.ndarray, y: np.ndarray):
    """measured = a + predicted, a the median difference: a fixed cost the prices leave out."""
    from colony.cost.models import LinearModel
    return LinearModel(a=float(np.median(y - x)), b=1.0)


def _call_path_fit(raw: np.ndarray, act: np.ndarray):
    """No correction, measured = a + predicted (a per-call overhead on top of models that
    already time the execution path), or measured = a + b * predicted: the form with the
    lowest leave-one-out median error on the probes is kept (the simpler one on a tie). A
    slope fitted on a dozen probes of similar size can flatten every prediction to a
    constant; the offset form cannot, and no correction is kept where the probes show none."""
    from colony.cost.models import LinearModel
    forms = {"none": lambda x, y: LinearModel(a=0.0, b=1.0),
             "offset": _offset_fit}
    if raw.min() > 0 and raw.max() / raw.min() >= 3.0:
        # a slope is identifiable only over probes of different sizes (a split fit on six
        # similar probes came out flat, b = 0, and priced TPC-H splits of 50-160 ms at ~40 ms)
        forms["slope"] = lambda x, y: LinearModel.fit(x, y)
    scores = {name: _loo_ape(fit, raw, act) for name, fit in forms.items()}
    form = min(scores, key=scores.get)          # dict order: simpler first on a tie
    return form, forms[form](raw, act), scores[form]
