"""The query service: runs Substrait plans where the data is, or hands the data back.

Placed on every device (SmartNICs and the host). On a device holding the objects,
``execute`` estimates the plan from the objects' statistics, decides a placement with the
host's load report that came with the request, and then
- down:  runs the plan here (DataFusion, this device's thread budget) and returns the result;
- back:  returns the raw stored objects and the plan, for the host to run;
- split: runs the filter/projection part here and returns its result plus the host's part.
On the host, ``run_pushed`` runs what devices handed back and tracks the host's load.
Every answer carries the decision, the estimates and the measured times. Bad plans,
unknown tables/columns, timeouts, memory and result caps raise typed errors; the device
keeps serving. A request carrying a ``query_id`` is stopped by ``cancel(query_id)``: its
worker process is killed (a fresh one replaces it) and the request raises QueryCancelled.
"""

from __future__ import annotations

import fnmatch
from collections import OrderedDict
import os
import threading
import time
from typing import Any

import numpy as np
import pyarrow as pa

from colony import codec
from colony.cost import suite
from colony.cost.models import FIT_REVISION, DeviceModels
from colony.decide import (Decision, DeviceLoad, HostLoad, StormPolicy, decide, device_work, host_slack, host_work,
                           loaded_exec)
from colony.errors import (BadPlan, DeviceBusy, InvalidArgument, ObjectLost, QueryCancelled, QueryError,
                           StaleCalibration, UnknownTable)
from colony.query import plan as qplan
from colony.query.estimate import estimate, plan_json
from colony.query.stats import StatsIndex
from colony.query.worker import CancelledIds, WorkerPool
from colony.services.backlog import Backlog
from colony.services.base import Service, endpoint, service
from colony.services.cpu import CoreLoad
from colony.store.routing import stable_hash


PROBE_POOL = "__colony_probe__"   # the call-path calibration's probe tables (QueryService.probe_table)


def _probe_only(tabs: dict[str, tuple[str, str]]) -> bool:
    return bool(tabs) and all(pool == PROBE_POOL for pool, _ in tabs.values())


def _total_key(feedback: dict) -> str | None:
    """The end-to-end correction entry a client's measurement updates: the key the decision
    gave that placement (its size class); None for a key that is not one."""
    key, pl = feedback.get("key"), str(feedback.get("placement"))
    return key if isinstance(key, str) and key.startswith(f"total:{pl}@") and len(key) <= 64 else None


def _gaps(support: dict | None) -> dict:
    """A calibration's coverage gaps from its report (``colony.cost.calibrate``): the features
    positive in fewer runs than ``MIN_SUPPORT`` and the per-value terms short of ``REACH``."""
    support = support or {}
    return {"thin": sorted(support.get("thin") or {}), "short_reach": sorted(support.get("short_reach") or {})}


def _tables_arg(tables: dict) -> dict[str, tuple[str, str]]:
    out = {}
    for name, spec in (tables or {}).items():
        if isinstance(spec, str):
            spec = (spec, "*")
        pool, pattern = spec[0], (spec[1] if len(spec) > 1 else "*")
        out[name] = (pool, pattern)
    return out


@service
class QueryService(Service):
    """Options: timeout_s (per query), memory_limit (bytes per query), max_result_bytes,
    admission_limit (host: concurrent push-backs admitted), models_dir (persist models),
    pull_back (the host pulls a push-back's objects from the device's read endpoint),
    measured_rate (default true: admitted backlogs in measured seconds, see services/backlog.py),
    isolate (default true: run each query in a worker process killed at its deadline, see
    :mod:`colony.query.worker`, at most max_workers at once, default the device's threads and
    at least 2; false runs it in the calling thread, where the deadline is only checked
    between output batches)."""

    name = "query"
    calls_stream = False        # a query's transfers are its own: none rides on another query's stream

    def __init__(self, ctx, **options: Any) -> None:
        super().__init__(ctx, **options)
        self.stats = StatsIndex(ctx.store)
        self.timeout_s = float(options.get("timeout_s", 60.0))
        self.memory_limit = int(options.get("memory_limit", 1 << 30))
        self.max_result_bytes = int(options.get("max_result_bytes", 1 << 30))
        self.admission_limit = int(options.get("admission_limit", 4))
        self.max_queue = int(options.get("max_queue", 64))          # queries admitted on this device at once
        self.policy = str(options.get("policy", "latency"))
        self._dev_inflight = 0
        self.isolate = bool(options.get("isolate", True))
        # push-back hands the host references and the host pulls the objects from this device's
        # read endpoint (emulated DMA on a pinned device: threads outside its cores), instead
        # of this device's process sending them inside the call
        self.pull_back = bool(options.get("pull_back", False))
        # at most max_workers queries execute here at once (default: the device's threads, at least 2);
        # more wait for a warm worker instead of each starting a process
        n_workers = int(options.get("max_workers", max(2, ctx.threads)))
        self._workers = WorkerPool(keep=n_workers, prestart=False, max_live=n_workers) if self.isolate else None
        # the device's calibration record (colony.cost.suite) lives in the directory this option
        # names, else where the runtime keeps it (beside the device suite), else in the workdir
        self.models_dir = options.get("models_dir") or ctx.record_dir or \
            (os.path.join(ctx.workdir, "models") if ctx.workdir else None)
        self.models: DeviceModels | None = None
        self.host_models: DeviceModels | None = None
        self._lock = threading.Lock()
        self._estimates: OrderedDict = OrderedDict()      # plan bytes -> (statistics read, plan JSON, estimate)
        self._listed: dict = {}       # (pool, pattern) -> (store generation, its keys): see _keys
        self._inflight = 0
        self._staged: dict[str, dict[str, list]] = {}   # objects devices handed over, per multi-device plan
        self._busy_threads = 0
        self._admitted = 0
        self._service_s = 0.0
        self._rng = np.random.Generator(np.random.SFC64(stable_hash(ctx.name)))  # same on every run
        self._cancel_ids = CancelledIds()            # cancelled query ids, refused from then on
        # admitted, unfinished work here (down/split) and, on the host, pushed-back work, in measured seconds
        # measured_rate false: backlogs stay in predicted seconds (the ablation in the storm benchmark)
        bounds = (0.25, 20.0) if options.get("measured_rate", True) else (1.0, 1.0)
        self._dev_jobs = Backlog(ctx.threads, bounds=bounds)
        self._host_jobs = Backlog(ctx.threads, bounds=bounds)
        self._running = 0                      # own queries executing now (device or host side)
        # in-process colonies share one process among all devices and the client: nothing to attribute
        self.cores = CoreLoad.shared() if ctx.own_process else None
        self._load_models()

    # -- models ----------------------------------------------------------------
    def _load_models(self) -> None:
        """This device's models from its calibration record for the current fingerprint (none:
        reported uncalibrated, or stale with why; the client recalibrates)."""
        ctx = self.ctx
        rec = ctx.calibration or {}
        if "query" not in rec and self.models_dir:
            rec = suite.record(ctx.name, ctx.fingerprint, self.models_dir)
        self.models, self.stale = None, str(rec.get("stale", ""))
        # how long a fresh worker took to start when this device calibrated (until its own pool measures one)
        self._record_start_s = float(rec.get("worker_start_s") or 0.0)
        try:
            if rec.get("query"):
                if rec.get("fingerprint") != ctx.fingerprint:
                    raise StaleCalibration(f"device {ctx.name!r} changed since its calibration (role, threads, "
                                           "link, runtime, software or layout); recalibrate")
                self.models = DeviceModels.from_json(rec["query"])
                if self.models.fit_revision < FIT_REVISION:   # fitted by an older rule: refit, no new timing
                    from colony.cost.calibrate import refit
                    refit(self.models, rec.get("query_runs"))  # no runs: StaleCalibration
                    try:
                        self._persist()
                    except OSError:          # kept in memory; the record is refitted again next load
                        pass
        except (StaleCalibration, InvalidArgument) as e:
            self.models, self.stale = None, str(e)
        except (KeyError, TypeError, ValueError) as e:       # stored runs that do not read back
            self.models, self.stale = None, f"device {ctx.name!r}: calibration record unreadable ({e}); recalibrate"

    def rekeyed(self) -> None:
        """A new link rate: the models (and their online corrections) of the old one no
        longer price this device; those of a record made at this rate do, if there is one."""
        with self._lock:
            self._load_models()

    def _persist(self, **parts) -> None:
        """Keep the models (and ``parts``, other record entries) in the device's one calibration
        record (with the suite, under the runtime's fingerprint), in memory and on disk."""
        if self.models is None:
            return
        parts["query"] = self.models.to_json()
        cal = self.ctx.calibration
        if cal.get("fingerprint") != self.ctx.fingerprint:
            cal.clear()                       # a stale record goes whole
        cal.pop("stale", None)
        cal.update(parts, fingerprint=self.ctx.fingerprint)
        if self.models_dir:
            suite.update(self.ctx.name, self.ctx.fingerprint, parts, self.models_dir)

    @endpoint
    def calibrate(self, n_runs: int = 120, min_rows: int = 20_000, max_rows: int = 400_000, seed: int = 0) -> dict:
        """Timed templated queries on random tables with this device's thread budget; keeps the models.

        Timed through the path this device's queries take: with ``isolate`` a worker process
        per query (objects cached in shared memory as a device's stored objects are; uncached
        on the host, which runs what devices hand back), else in process."""
        from colony.cost.calibrate import calibrate, runs_to_record
        links = (self.models.link, self.models.link_host) if self.models else (None, None)
        # a pool of its own (its objects, random tables, are cached apart and dropped with it),
        # with the service's idle worker lent to it and its worker given back at the end: a
        # calibration starts no process where one is idle, and what runs next finds one warm
        pool = WorkerPool(keep=1, prestart=False) if self.isolate else None
        runner = None
        if pool is not None:
            pool.adopt(self._workers)
            cache = self.ctx.role != "host"

            def runner(plan_bytes, objects, threads):
                return pool.run(plan_bytes, objects, threads=threads, memory_limit=self.memory_limit,
                                max_result_bytes=self.max_result_bytes, timeout_s=self.timeout_s, cache=cache)
        try:
            models, runs = calibrate(self.ctx.name, self.ctx.threads, n_runs=n_runs, min_rows=min_rows,
                                     max_rows=max_rows, seed=seed, runner=runner)
            started = (pool.start_s() or self._workers.start_s()) if pool is not None else None
        finally:
            if pool is not None:
                self._workers.adopt(pool)
                pool.close()
        models.report["path"] = ("worker process, objects cached" if runner and cache else
                                 "worker process, objects copied per query" if runner else "in process")
        models.link, models.link_host = links
        models.stretch = max(1.0, self._idle_stretch())          # the load it was calibrated under
        models.report["stretch"] = models.stretch
        self.models = models
        parts = {"query_runs": runs_to_record(runs)}
        if started:
            self._record_start_s = parts["worker_start_s"] = started
        self._persist(**parts)      # one write: the models, their runs, a worker's start
        return models.to_json()

    @endpoint
    def models_json(self) -> dict | None:
        return self.models.to_json() if self.models else None

    @endpoint
    def set_link(self, link: dict, report: dict | None = None, leg: str = "client") -> None:
        """Install a transfer model measured on one of this device's legs: ``client`` (results
        to the client, measured by the client) or ``host`` (push-back to the host, measured
        here by :meth:`push_probe`)."""
        from colony.cost.models import LinearModel
        if self.models is None:
            raise QueryError(f"calibrate device {self.ctx.name!r} before installing its link model")
        if leg not in ("client", "host"):
            raise InvalidArgument(f"link leg must be 'client' or 'host', got {leg!r}")
        setattr(self.models, "link" if leg == "client" else "link_host", LinearModel(**link))
        if report:
            self.models.report["link" if leg == "client" else "link_host"] = report
        self._persist()

    @endpoint
    def push_probe(self, host: str, nbytes: int) -> float:
        """Seconds to hand ``nbytes`` to ``host``'s query service the way a push-back does
        (a call from this device with the bytes as its argument): the link calibration's probe
        of the device -> host leg."""
        data = self.blob(nbytes)
        t0 = time.perf_counter()
        self.ctx.peers.call(host, "query", "sink", data)
        return time.perf_counter() - t0

    @endpoint
    def sink(self, data) -> int:
        """Take bytes a device sent (:meth:`push_probe`) and drop them."""
        return len(memoryview(data)) if data is not None else 0

    @endpoint
    def set_call_path(self, fits: dict, report: dict | None = None) -> None:
        """Install the per-placement call-path correction the client fitted on probe queries."""
        if self.models is None:
            raise QueryError(f"calibrate device {self.ctx.name!r} before installing its call-path model")
        self.models.call_path = dict(fits)
        for k in [k for k in self.models.residuals.state if k.startswith("total:")]:
            del self.models.residuals.state[k]     # end-to-end corrections were of the old fit
        # recorded even when empty: health() reads it as "the call path was fitted"
        self.models.report["call_path"] = report or {}
        self._persist()

    @endpoint
    def probe_table(self, pool: str, key: str, table: pa.Table | None) -> None:
        """Put (or, with None, drop) a probe object for call-path calibration in a pool of
        this device's own store (``PROBE_POOL``: queries over it never teach the online correction)."""
        if pool != PROBE_POOL:
            raise QueryError(f"probe objects go in pool {PROBE_POOL!r}, not {pool!r}")
        store = self.ctx.store
        if table is None:
            if pool in store.pools() and key in store.list(pool):
                store.drop(pool, key)
            return
        if pool not in store.pools():
            store.create_pool(pool)
        store.put(pool, key, table)

    @endpoint
    def set_host_models(self, models: dict) -> None:
        """The host's calibrated models, as data (JSON), used to price push-back and split."""
        self.host_models = DeviceModels.from_json(models)

    @endpoint
    def blob(self, nbytes: int) -> pa.Buffer:
        """n bytes to ship back: the link calibration's probe, capped like any result."""
        if isinstance(nbytes, bool) or not isinstance(nbytes, (int, np.integer)) \
                or not 0 <= nbytes <= self.max_result_bytes:
            raise InvalidArgument(f"blob size must be an integer in 0..{self.max_result_bytes} bytes (the device's "
                                  f"result cap), got {nbytes!r}")
        return pa.py_buffer(bytes(int(nbytes)))

    # -- catalogue --------------------------------------------------------------
    def _keys(self, pool: str, pattern: str, refuse_lost: bool = True) -> list[str]:
        """The table's objects here. A table with objects reported lost (a memory-only pool
        across a restart, a quarantined spill file) is refused: an answer over the objects
        that are left would be silently wrong. The catalogue (``refuse_lost=False``) lists
        what is left; it reports the lost objects itself."""
        store = self.ctx.store
        gen = store.generation           # read first: a change while listing makes the next call list again
        hit = self._listed.get((pool, pattern))
        if hit is not None and hit[0] == gen and (not hit[2] or not refuse_lost):
            return list(hit[1])          # a decision's keys: listing and matching cost ~5 % of its CPU
        if pool not in store.pools():
            return []
        lost = [k for k in store.lost_keys(pool) if fnmatch.fnmatchcase(k, pattern)]
        if lost and refuse_lost:
            raise ObjectLost(f"device {self.ctx.name!r} lost {len(lost)} object(s) of pool {pool!r} matching "
                             f"{pattern!r} ({', '.join(lost[:5])}{', ...' if len(lost) > 5 else ''}): "
                             f"{store.lost[(pool, lost[0])]}. Load the table again (colony load --replace) "
                             "or drop the lost keys")
        keys = [k for k in store.list(pool) if fnmatch.fnmatchcase(k, pattern)]
        if len(self._listed) > 256:
            self._listed.clear()
        self._listed[(pool, pattern)] = (gen, tuple(keys), bool(lost))
        return keys

    @endpoint
    def describe(self, tables: dict, refuse_lost: bool = True) -> dict:
        """Per table: schema (IPC bytes), rows, stored bytes and object count held here. A table
        with lost objects is refused (ObjectLost), unless the catalogue asks for what is left
        (``refuse_lost=False``): it reports the lost objects itself, from ``objects.lost``."""
        out = {}
        for name, (pool, pattern) in _tables_arg(tables).items():
            keys = self._keys(pool, pattern, refuse_lost)
            if not keys:
                out[name] = {"objects": 0}
                continue
            first = self.ctx.store.get_tables(pool, keys[0])[0]
            ents = [e for e in self.ctx.store.entries(pool) if e.key in set(keys)]
            out[name] = {"objects": len(keys), "rows": sum(e.rows for e in ents),
                         "bytes": sum(e.nbytes for e in ents), "schema": first.schema.serialize().to_pybytes()}
        return out

    def _stats(self, tables: dict[str, tuple[str, str]]):
        out = {}
        for name, (pool, pattern) in tables.items():
            keys = self._keys(pool, pattern)
            if not keys:
                raise UnknownTable(f"table {name!r}: device {self.ctx.name!r} holds no objects in pool "
                                   f"{pool!r} matching {pattern!r}")
            out[name] = self.stats.table(pool, keys)
        return out

    # -- load and admission (host side) ----------------------------------------
    def _stretch(self) -> float:
        """Contention now, relative to what the models were calibrated under (their
        ``stretch``): a machine as busy as during calibration is already in the models."""
        if self.cores is None:
            return 1.0
        base = self.models.stretch if self.models is not None else 1.0
        return max(1.0, self.cores.slowdown(self._running) / base)

    def _start_s(self) -> float:
        """Seconds a query run here now would wait for a worker process to start: none while a
        worker is idle or all are taken; else the median this device's pool measured, or
        before its first start the one its calibration measured (0 if neither did)."""
        if self._workers is None or not self._workers.cold():
            return 0.0
        return self._workers.start_s() or self._record_start_s

    def _idle_stretch(self) -> float:
        """The measured stretch over a fresh window with none of this device's own work in it."""
        return self.cores.settled(self._running) if self.cores is not None else 1.0

    def _host_load(self) -> HostLoad:
        slow = self._stretch()
        with self._lock:
            return self._host_load_locked(slow)

    def _host_load_locked(self, slow: float) -> HostLoad:
        """The host's load now; call with the lock held (an admission decides on it atomically)."""
        return HostLoad(queue_depth=self._inflight, free_threads=max(0, self.ctx.threads - self._busy_threads),
                        threads=self.ctx.threads, service_s=self._service_s,
                        backlog_s=self._host_jobs.seconds(), slowdown=slow, rate=self._host_jobs.rate,
                        start_s=self._start_s())

    @endpoint
    def load(self) -> dict:
        """What the host says about itself: admitted work (measured seconds), measured contention."""
        return self._host_load().to_dict()

    @endpoint
    def admit(self, seconds: float, max_wait_s: float) -> dict:
        """Reserve ``seconds`` of predicted host work for a push-back decided now, if the wait it
        would meet here (backlog in measured seconds over threads, stretched by measured contention) is at most
        ``max_wait_s``. Atomic: concurrent devices see each other's reservations. Returns
        {"ticket": id or None, "load": the host's load now} (None: refused)."""
        slow = self._stretch()
        with self._lock:
            load = self._host_load_locked(slow)
            if load.wait_s() > max_wait_s:
                return {"ticket": None, "load": load.to_dict()}
            return {"ticket": self._host_jobs.add(seconds), "load": load.to_dict()}

    @endpoint
    def unadmit(self, ticket: int) -> None:
        """Drop an admitted reservation whose work never came (the device failed first)."""
        self._host_jobs.drop(ticket)

    @endpoint
    def warm_workers(self) -> float:
        """Have a query worker idle and ready here (started now if none is; see
        :meth:`WorkerPool.prepare`): the seconds it took. Benchmarks and the demo call it
        before they measure warm runs."""
        return self._workers.prepare(self.timeout_s) if self._workers is not None else 0.0

    @endpoint
    def reserve(self) -> bool:
        """Admission control: True if the host accepts one more pushed-back query now."""
        with self._lock:
            if self._admitted >= self.admission_limit:
                return False
            self._admitted += 1
            return True

    @endpoint
    def set_admission_limit(self, limit: int) -> None:
        with self._lock:
            self.admission_limit = max(0, int(limit))

    @endpoint
    def release(self) -> None:
        with self._lock:
            self._admitted = max(0, self._admitted - 1)

    # -- planning ----------------------------------------------------------------
    def _plan(self, plan_bytes: bytes, tables: dict, placement: str, host_load: dict | None,
              storm: dict | None) -> tuple[dict, Any, Decision, float, dict]:
        if not isinstance(plan_bytes, (bytes, bytearray, memoryview)):
            raise BadPlan("plan must be Substrait bytes")
        t0, w0 = time.thread_time(), time.perf_counter()   # this handler thread only: the estimator's own CPU
        tabs = _tables_arg(tables)
        st = self._stats(tabs)
        t1 = time.thread_time()
        pj, est = self._estimate(bytes(plan_bytes), st)
        t2 = time.thread_time()
        load = HostLoad(**host_load) if host_load else HostLoad()
        pol = StormPolicy(**{k: v for k, v in storm.items() if k in ("mode", "limit", "beta")}) if storm else None
        policy = (storm or {}).get("policy") or self.policy

        def redo(host_load: HostLoad) -> Decision:
            slow = self._stretch()
            with self._lock:                       # one generator, many request threads
                # only the probabilistic storm control draws: building a generator for every
                # decision cost ~0.08 ms of a cold device's ~0.8 ms estimate path
                rng = (np.random.Generator(np.random.SFC64(int(self._rng.integers(1 << 62))))
                       if pol is not None and pol.mode == "probabilistic" else None)
                dev_load = DeviceLoad(queue_depth=max(0, self._dev_inflight - 1),
                                      threads=self.ctx.threads, limit=self.max_queue,
                                      backlog_s=self._dev_jobs.seconds(), slowdown=slow, rate=self._dev_jobs.rate,
                                      start_s=self._start_s())
            d = decide(est, self.models, self.host_models, host_load, placement, pol, rng, dev_load, policy)
            wall = time.perf_counter() - w0
            for terms in (d.predicted or {}).values():     # already spent on every placement: a known term
                terms["estimate"] = wall
                terms["total"] += wall
            d.load = {"host": host_load.to_dict(), "device": {"backlog_s": dev_load.backlog_s,
                                                              "slowdown": dev_load.slowdown, "rate": dev_load.rate}}
            return d
        dec = redo(load)
        t3 = time.thread_time()
        # where the handler's CPU went: statistics merged, plan decoded and estimated, placements priced
        parts = {"stats": t1 - t0, "estimate": t2 - t1, "decide": t3 - t2}
        return pj, est, dec, t3 - t0, {"redo": redo, "load_aware": bool(host_load), "cpu_parts": parts}

    def _estimate(self, plan_bytes: bytes, st: dict) -> tuple[dict, Any]:
        """Decoded plan and estimate, cached per plan while the statistics it read are the
        same objects (a put or drop makes new ones): a repeated query is not re-estimated."""
        with self._lock:
            hit = self._estimates.get(plan_bytes)
            if hit is not None and hit[0].keys() == st.keys() and all(hit[0][k] is v for k, v in st.items()):
                self._estimates.move_to_end(plan_bytes)
                return hit[1], hit[2]
        pj = plan_json(plan_bytes)
        est = estimate(pj, st)
        with self._lock:
            self._estimates[plan_bytes] = (dict(st), pj, est)
            while len(self._estimates) > 256:
                self._estimates.popitem(last=False)
        return pj, est

    @endpoint
    def explain(self, plan_bytes: bytes, tables: dict, placement: str = "auto", host_load: dict | None = None,
                storm: dict | None = None) -> dict:
        """The decision with every predicted term, without running anything."""
        _, est, dec, est_cpu, again = self._plan(plan_bytes, tables, placement, host_load, storm)
        return {"device": self.ctx.name, "decision": dec.to_dict(), "estimate_cpu_s": est_cpu,
                "estimate_cpu_parts_s": again["cpu_parts"],
                "estimate": est.to_dict()}

    def _context(self, tables: dict[str, tuple[str, str]]):
        ctx = qplan.execution_context(self.ctx.threads, self.memory_limit)
        t0 = time.perf_counter()
        for name, (pool, pattern) in tables.items():
            keys = self._keys(pool, pattern)
            qplan.register(ctx, name, [self.ctx.store.get_tables(pool, k) for k in keys],
                           max_partitions=self.ctx.threads)
        return ctx, time.perf_counter() - t0

    @endpoint
    def execute(self, plan_bytes: bytes, tables: dict, placement: str = "auto", host_load: dict | None = None,
                storm: dict | None = None, host: str | None = None, feedback: dict | None = None,
                stage: str | None = None, query_id: str | None = None) -> dict:
        """Decide and run. Returns the result (down/split) or the raw objects (back), with timings.

        With ``host``, pushed-back objects and split results go from this device straight to
        the host's query service (device -> host link) and the host's answer goes straight to
        the client (a large result over the host -> client link, ``peers.relay``; this device
        passes on a reference): the client's link to this device never carries either. With ``host`` and
        ``stage`` (a plan the host must run over several devices' objects together), pushed-back
        objects are staged on the host under that name (``out["staged"]``) for ``run_staged``.

        Admits at most ``max_queue`` queries at once (DeviceBusy beyond); the queue ahead enters
        the predicted device time; each run's measured execution corrects the model online."""
        self._check_cancel(query_id)
        if feedback and self.models is not None:     # the client's measured total of its last query here
            self.models.residuals.update(_total_key(feedback),
                                         float(feedback.get("predicted", 0.0)), float(feedback.get("actual", 0.0)))
        with self._lock:
            if self._dev_inflight >= self.max_queue:
                raise DeviceBusy(f"device {self.ctx.name!r} has {self._dev_inflight} queries queued (limit "
                                 f"{self.max_queue}); retry later or run with placement back")
            self._dev_inflight += 1
        try:
            out = self._execute(plan_bytes, tables, placement, host_load, storm, host, stage, query_id)
        finally:
            with self._lock:
                self._dev_inflight -= 1
        return out

    def _execute(self, plan_bytes: bytes, tables: dict, placement: str, host_load: dict | None,
                 storm: dict | None, host: str | None, stage: str | None = None,
                 query_id: str | None = None) -> dict:
        t_start = time.perf_counter()
        pj, est, dec, est_cpu, again = self._plan(plan_bytes, tables, placement, host_load, storm)
        tabs = _tables_arg(tables)
        mode = (storm or {}).get("mode", "none")
        reserved = False
        ticket = None
        if dec.placement in ("back", "split") and mode == "admission" and placement == "auto":
            host = (storm or {}).get("host")
            reserved = bool(host and self.ctx.peers and self.ctx.peers.call(host, "query", "reserve"))
            if not reserved:
                dec.reason = "storm control: host admission refused; kept on device"
                dec.placement = "down"
        elif (placement == "auto" and again["load_aware"] and mode == "none" and host and not stage
              and self.ctx.peers is not None):      # staged objects run later, together: nothing to reserve
            dec, ticket = self._reserve_host(dec, again["redo"], host)
        dev_ticket = None
        if dec.placement in ("down", "split") and dec.predicted.get(dec.placement):   # admitted here
            dev_ticket = self._dev_jobs.add(device_work(dec.predicted[dec.placement]), start=True,
                                            slowdown=(dec.load.get("device") or {}).get("slowdown", 1.0),
                                            measured=dec.placement == "down")   # a split waits for the host too
        try:
            out = self._run(plan_bytes, tabs, est, dec, est_cpu, host, reserved, ticket, t_start, stage, query_id)
        except BaseException:
            self._dev_jobs.drop(dev_ticket)
            if ticket is not None:
                self.ctx.peers.call(host, "query", "unadmit", ticket)
            raise
        self._dev_jobs.finish(dev_ticket, sample="worker_start" not in out.get("actual", {}))
        return out

    def _reserve_host(self, dec: Decision, redo, host: str) -> tuple[Decision, int | None]:
        """A push-back or split decided now reserves its predicted host work at the host; if the
        host's backlog grew past what makes it worth it (other devices got there first), decide
        again with the host's load as it is now (at most three rounds, then stay down)."""
        for _ in range(3):
            if dec.placement not in ("back", "split") or not dec.predicted:
                return dec, None
            terms = dec.predicted[dec.placement]
            r = self.ctx.peers.call(host, "query", "admit", host_work(terms), host_slack(dec.predicted, dec.placement))
            if r["ticket"] is not None:
                return dec, r["ticket"]
            dec = redo(HostLoad(**r["load"]))
            dec.reason += "; host backlog grew since the request: decided again with the host's load now"
        if dec.placement in ("back", "split"):
            dec.placement, dec.reason = "down", "host admission refused three times: kept on device"
        return dec, None

    def _run(self, plan_bytes: bytes, tabs: dict, est, dec: Decision, est_cpu: float, host: str | None,
             reserved: bool, ticket: int | None, t_start: float, stage: str | None = None,
             query_id: str | None = None) -> dict:
        busy = int(dec.placement != "back")       # a push-back hardly uses this device's cores
        with self._lock:
            self._running += busy
        try:
            return self._run_placed(plan_bytes, tabs, est, dec, est_cpu, host, reserved, ticket, t_start, stage,
                                    query_id)
        finally:
            with self._lock:
                self._running -= busy

    def _run_placed(self, plan_bytes: bytes, tabs: dict, est, dec: Decision, est_cpu: float, host: str | None,
                    reserved: bool, ticket: int | None, t_start: float, stage: str | None = None,
                    query_id: str | None = None) -> dict:
        out = {"device": self.ctx.name, "decision": dec.to_dict(), "estimate_cpu_s": est_cpu,
               "est_rows": est.rows, "reserved": reserved, "actual": {}}
        learn = not _probe_only(tabs)      # calibration's own probes are not evidence of drift
        act = out["actual"]
        if dec.placement == "back":
            objs = {}
            nbytes = 0
            pull = self.pull_back and host and not stage and hasattr(self.ctx.peers, "pull")
            for name, (pool, pattern) in tabs.items():
                keys = self._keys(pool, pattern)
                bufs = [self.ctx.store.get(pool, k) for k in keys]
                objs[name] = [{"pull": self.ctx.name, "pool": pool, "key": k} for k in keys] if pull else bufs
                nbytes += sum(b.size for b in bufs)
            act["bytes"] = nbytes
            if host and stage and self.ctx.peers is not None:
                t0 = time.perf_counter()
                out["staged"] = self.ctx.peers.call(host, "query", "stage", stage, objs)
                act["to_host"] = time.perf_counter() - t0
            elif host and self.ctx.peers is not None:
                t0 = time.perf_counter()
                self._check_cancel(query_id)
                out["hosted"] = self.ctx.peers.relay(host, "query", "run_pushed", bytes(plan_bytes), objs, reserved,
                                                    predicted=self._host_prediction(dec, "back") if learn else None,
                                                    ticket=ticket, query_id=query_id)
                act["to_host"] = time.perf_counter() - t0
                self._adopt_host_residuals(out["hosted"])
            else:
                out["objects"] = objs
                out["plan"] = bytes(plan_bytes)
        else:
            runs = [bytes(plan_bytes)]
            if dec.placement == "split":
                cut = qplan.split_plans(bytes(plan_bytes))
                if cut is None:
                    dec.placement, dec.reason = "down", dec.reason + "; no shippable filter/projection part: down"
                    out["decision"] = dec.to_dict()
                else:
                    runs, template = cut
            act["exec"] = act["ser"] = act["deser"] = 0.0
            act["bytes"] = act["rows_device"] = 0
            bufs, schemas = [], []
            ctx = None
            for run_bytes in runs:
                self._check_cancel(query_id)
                if self._workers is not None:      # decode, execute and serialize in a killable worker
                    t0 = time.perf_counter()
                    objs = {name: [self.ctx.store.get(pool, k) for k in self._keys(pool, pattern)]
                            for name, (pool, pattern) in tabs.items()}
                    act["deser"] += time.perf_counter() - t0
                    t0, tm = time.perf_counter(), {}
                    buf = self._workers.run(run_bytes, objs, threads=self.ctx.threads,
                                            memory_limit=self.memory_limit, max_result_bytes=self.max_result_bytes,
                                            timeout_s=self.timeout_s, cache=True, query_id=query_id, timing=tm)
                    res = codec.unpack_one(buf, verify=False)
                    # queueing is not execution, nor is a fresh worker's start (worker_start)
                    act["exec"] += time.perf_counter() - t0 - tm["wait_s"] - tm.get("start_s", 0.0)
                    act["worker_wait"] = act.get("worker_wait", 0.0) + tm["wait_s"]
                    if "start_s" in tm:
                        act["worker_start"] = act.get("worker_start", 0.0) + tm["start_s"]
                else:
                    if ctx is None:
                        ctx, act["deser"] = self._context(tabs)
                    t0 = time.perf_counter()
                    res = qplan.execute(ctx, run_bytes, self.timeout_s, self.max_result_bytes)
                    act["exec"] += time.perf_counter() - t0
                    t0 = time.perf_counter()
                    buf = codec.pack([res])
                    act["ser"] += time.perf_counter() - t0
                act["bytes"] += buf.size
                act["rows_device"] += res.num_rows
                bufs.append(buf)
                schemas.append(res.schema)
            if dec.placement == "split":          # one result per cut; the host reads them by name
                upper = qplan.upper_plan(template, schemas)
                if host and self.ctx.peers is not None:
                    t0 = time.perf_counter()
                    self._check_cancel(query_id)
                    out["hosted"] = self.ctx.peers.relay(host, "query", "run_pushed", upper,
                                                        qplan.split_inputs(bufs), reserved,
                                                        predicted=(self._host_prediction(dec, "split")
                                                                   if learn else None),
                                                        ticket=ticket, query_id=query_id)
                    act["to_host"] = time.perf_counter() - t0
                    self._adopt_host_residuals(out["hosted"])
                else:
                    out["result"], out["plan"] = bufs, upper
            else:
                out["result"] = bufs[0]
            pred = dec.predicted.get(dec.placement) if dec.predicted else None
            if learn and self.models is not None and pred and est.supported:     # online correction
                fam = (dec.exec_keys.get(dec.placement) or {}).get("exec")
                if fam:       # against the price under the load it was decided with (loaded_exec)
                    self.models.residuals.update(fam, loaded_exec(pred), act["exec"])
        act["device_total"] = time.perf_counter() - t_start
        return out

    def _host_prediction(self, dec: Decision, placement: str) -> dict | None:
        """What this device predicted for the host's work, for the host's online correction
        (``exec_host`` under the entry that priced it, on the threads the host had free then)
        and its measured rate (``host_s``, all of it)."""
        pred = (dec.predicted or {}).get(placement)
        fam = (dec.exec_keys.get(placement) or {}).get("exec_host")
        if self.host_models is None or not pred or not fam or "exec_host" not in pred:
            return None
        return {"exec_host": loaded_exec(pred, "exec_host"), "family": fam, "host_s": host_work(pred)}

    def _adopt_host_residuals(self, hosted) -> None:
        """Price host work with the host's current online correction (the host owns it)."""
        if self.host_models is not None and isinstance(hosted, dict) and "residuals" in hosted:
            self.host_models.residuals.adopt(hosted["residuals"])

    @endpoint
    def stage(self, name: str, inputs: dict) -> dict:
        """Host side: keep objects a device handed over for a plan that runs over several
        devices' objects together (``run_staged``); returns how many arrived per table."""
        with self._lock:
            staged = self._staged.setdefault(name, {})
            for table, bufs in inputs.items():
                staged.setdefault(table, []).extend(bufs)
            return {t: len(b) for t, b in staged.items()}

    @endpoint
    def run_staged(self, plan_bytes: bytes, name: str, reserved: bool = False, query_id: str | None = None) -> dict:
        """Host side: run a plan over the objects staged under ``name``, then forget them."""
        with self._lock:
            inputs = self._staged.pop(name, {})
        return self.run_pushed(plan_bytes, inputs, reserved, query_id=query_id)

    @endpoint
    def drop_staged(self, name: str) -> bool:
        with self._lock:
            return self._staged.pop(name, None) is not None

    @endpoint
    def run_pushed(self, plan_bytes: bytes, inputs: dict, reserved: bool = False,
                   predicted: dict | None = None, query_id: str | None = None, ticket: int | None = None) -> dict:
        """Host side: run a plan over objects a device handed back (raw objects or split results).

        ``predicted`` ({exec_host, family, host_s}, from the device that priced it): the measured
        execution corrects this host's model online, as a device's own runs correct its
        model; the answer carries the correction so every device prices host work with it.
        ``ticket``: the reservation :meth:`admit` gave; work that came without one enters the
        backlog at its predicted ``host_s`` (else at the host's recent mean service time).
        Either way its run measures the host's rate (seconds per predicted second)."""
        t_start = time.perf_counter()
        if query_id in self._cancel_ids:
            if reserved:
                self.release()
            if ticket is not None:
                self.unadmit(ticket)
            raise QueryCancelled(f"query {query_id} was cancelled by its client before the host ran it")
        t0 = time.perf_counter()
        try:
            inputs = self._pulled(inputs)
        except BaseException:
            if reserved:
                self.release()
            self._host_jobs.drop(ticket)
            raise
        pull_s = time.perf_counter() - t0
        slow = self._stretch()
        with self._lock:
            self._inflight += 1
            self._running += 1
        if ticket is None or ticket not in self._host_jobs:    # came without a reservation (forced, naive)
            host_s = predicted.get("host_s") if isinstance(predicted, dict) else None
            if isinstance(host_s, (int, float)) and not isinstance(host_s, bool) and 0 < host_s < 1e6:
                ticket = self._host_jobs.add(float(host_s), start=True, slowdown=slow)
            else:
                ticket = self._host_jobs.add(self._service_s, start=True, slowdown=slow, measured=False)
        else:
            self._host_jobs.start(ticket, slowdown=slow)
        done, tm = False, {}
        try:
            # in process, decode the objects here; a worker decodes them itself (in its timed
            # execution), so decoding them here too only cost the host ~1 ms a query
            t0 = time.perf_counter()
            parts = (None if self._workers is not None else
                     {name: [codec.unpack(b, verify=False) for b in bufs] for name, bufs in inputs.items()})
            deser = time.perf_counter() - t0
            with self._lock:
                threads = max(1, self.ctx.threads - self._busy_threads)
                self._busy_threads += threads
            try:
                t0 = time.perf_counter()
                if self._workers is not None:
                    res = codec.unpack_one(self._workers.run(
                        bytes(plan_bytes), inputs, threads=threads, memory_limit=self.memory_limit,
                        max_result_bytes=self.max_result_bytes, timeout_s=self.timeout_s, query_id=query_id,
                        timing=tm), verify=False)
                else:
                    ctx = qplan.execution_context(threads, self.memory_limit)
                    for name, tl in parts.items():
                        schema = tl[0][0].schema if tl and tl[0] else None
                        qplan.register(ctx, name, tl, schema, max_partitions=threads)
                    res = qplan.execute(ctx, bytes(plan_bytes), self.timeout_s, self.max_result_bytes)
                exec_s = time.perf_counter() - t0 - tm.get("start_s", 0.0)    # a fresh worker's start apart
            finally:
                with self._lock:
                    self._busy_threads -= threads
            total = time.perf_counter() - t_start
            with self._lock:
                self._service_s = 0.8 * self._service_s + 0.2 * total if self._service_s else total
            out = {"result": res, "deser_host": deser, "exec_host": exec_s, "threads": threads,
                   "host_total": total, "pull_s": pull_s}
            if "start_s" in tm:
                out["worker_start"] = tm["start_s"]
            if self.models is not None:
                if isinstance(predicted, dict) and isinstance(predicted.get("family"), str):
                    try:
                        self.models.residuals.update(predicted["family"], float(predicted["exec_host"]), exec_s)
                    except (KeyError, TypeError, ValueError):
                        pass
                out["residuals"] = self.models.residuals.snapshot()
            done = True
            return out
        finally:
            with self._lock:
                self._inflight -= 1
                self._running -= 1
            if done:
                self._host_jobs.finish(ticket, sample="start_s" not in tm)
            else:
                self._host_jobs.drop(ticket)
            if reserved:
                self.release()

    def _pulled(self, inputs: dict) -> dict:
        """Objects a device handed back by reference ({pull: device, pool, key}: with
        ``pull_back``), pulled from that device's read endpoint; buffers pass as they are."""
        if not isinstance(inputs, dict):
            raise BadPlan("pushed-back inputs must be a dict of table name -> objects")
        out = {}
        for name, objs in inputs.items():
            got = []
            for o in objs:
                if isinstance(o, dict):
                    dev, pool, key = o.get("pull"), o.get("pool"), o.get("key")
                    if not all(isinstance(x, str) for x in (dev, pool, key)) or not hasattr(self.ctx.peers, "pull"):
                        raise InvalidArgument(f"a pushed-back object reference needs pull, pool and key strings and "
                                              f"a runtime that pulls; got {o!r}")
                    o = self.ctx.peers.pull(dev, pool, key)
                got.append(o)
            out[name] = got
        return out

    # -- cancellation ------------------------------------------------------------
    def _check_cancel(self, query_id: str | None) -> None:
        if query_id in self._cancel_ids:
            raise QueryCancelled(f"query {query_id} was cancelled by its client; device {self.ctx.name!r} "
                                 "stopped its work")

    @endpoint
    def cancel(self, query_id: str) -> dict:
        """Stop a query's work here: kill the worker running it (a fresh one replaces it) and
        refuse the id from now on (a cancel may overtake its request). Returns the pids killed."""
        if not isinstance(query_id, str) or not query_id:
            raise InvalidArgument(f"query_id must be a non-empty string, got {query_id!r}")
        self._cancel_ids.add(query_id)
        killed = self._workers.cancel(query_id) if self._workers is not None else []
        return {"device": self.ctx.name, "query_id": query_id, "killed": killed}

    @endpoint
    def workers(self) -> dict:
        """Query worker processes: pids running a query now (and which query), pids killed at a
        deadline, and the workers stopped by a cancel ({query_id, pid})."""
        if self._workers is None:
            return {"isolate": False, "live": [], "killed": [], "running": {}, "cancelled": []}
        return {"isolate": True, **self._workers.state()}

    @endpoint
    def health(self) -> dict:
        m = self.models
        # the legs its results and pushed-back objects take (the host's own: its results to the client)
        # and, on a device, the call-path fit that ends its calibration: a record whose call-path
        # probes failed kept its models without it, and the next runs priced every total without
        # the path's overheads instead of redoing it
        legs = m is not None and m.link is not None and (
            self.ctx.role == "host" or (m.link_host is not None and "call_path" in m.report))
        return {"device": self.ctx.name, "ok": True, "calibrated": m is not None, "links_calibrated": legs,
                # the rule its call-path fit was made by (drivers.query.CALL_PATH_REVISION; 1 before it was recorded)
                "call_path_revision": (m.report.get("call_path") or {}).get("revision", 1) if legs else None,
                "host_models": self.host_models is not None, "stale": self.stale,
                "learner": m.report.get("kept") if m else None, "sizes": m.report.get("sizes") if m else None,
                # where the calibration left the models extrapolating: features in fewer runs than
                # its reserve wanted, per-value terms timed only on small inputs
                "gaps": _gaps(m.report.get("support") if m else None),
                "corrections": m.residuals.to_json() if m else {},
                "drift": m.residuals.drifted() if m else [],
                "queue": self._dev_inflight, "max_queue": self.max_queue, "policy": self.policy,
                "backlog_s": self._dev_jobs.seconds(), "rate": self._dev_jobs.rate,
                "host_backlog_s": self._host_jobs.seconds(), "host_rate": self._host_jobs.rate,
                "slowdown": self._stretch()}

