"""The decision engine: a pure function from (estimate, models, host load) to a placement.

Time model (thesis fig 5.11), every term predicted by a calibrated model:

- down  = setup_dev(objects, rows) + exec_dev(ops) + ser_dev(result) + link_dev->client(result)
          + deser_client
- back  = link_dev->host(raw objects) + setup_host(objects, rows) + wait_host
          + exec_host(ops, free threads) + link_host->client(result)
- split = setup_dev(objects, rows) + exec_dev(lower ops) + ser_dev(lower result)
          + link_dev->host(lower result) + deser_host + wait_host + exec_host(upper ops, free threads)
          + link_host->client(result)

Each link term is the leg the bytes take (the runtime relays a push-back's result from the
host straight to the client), fitted by calibration on that leg: the device's two fits
(``link``, ``link_host``) and the host's own ``link``.

``wait_host`` comes from the host's load report: the host-seconds of the work it has
admitted and not finished (its backlog: every push-back reserves its predicted host time
when it is decided, so a burst of devices sees each other's choices; the host reports it in
measured seconds, scaled by the rate at which it really gets through a predicted second),
over its threads, stretched by the contention measured on its cores. The device's own backlog and measured
contention enter the device's part of every placement (a sifting run on the same SmartNIC
makes its cores busy, so the device prices its own work higher, the sending of a push-back's
raw objects included). Plans the estimator cannot model (joins)
go back to the host, whose engine runs anything, with the reason attached.

Push-back-storm control (many devices pushing back to one host):
- ``admission``: the host admits at most ``limit`` pushed-back queries at a time; a device
  whose reservation is refused keeps the query (the service enforces it atomically);
- ``probabilistic``: push back with probability rel_benefit / (rel_benefit + beta * load),
  rel_benefit = (t_down - t_back) / t_down, load = queue depth per host thread, so the herd
  thins out as the host fills, and queries with the most to gain still go back.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

from colony.cost.models import DeviceModels
from colony.query.estimate import Estimate

PLACEMENTS = ("down", "back", "split")


@dataclass
class HostLoad:
    """What the host says about itself with each request."""

    queue_depth: int = 0          # pushed-back queries queued or running on the host
    free_threads: int = 1
    threads: int = 1
    service_s: float = 0.0        # recent mean time per pushed-back query (EWMA)
    backlog_s: float | None = None   # host-seconds admitted and not yet done (predicted x measured rate)
    slowdown: float = 1.0         # measured contention on the host's cores (>= 1)
    rate: float = 1.0             # measured seconds per predicted second of recent pushed-back work
    start_s: float = 0.0          # a query pushed back now waits this long for a worker process to start

    def to_dict(self) -> dict:
        return dict(vars(self))       # flat numbers: asdict's deep copy costs ~20 us a decision

    def wait_s(self) -> float:
        work = self.backlog_s if self.backlog_s is not None else self.queue_depth * self.service_s
        return work * self.slowdown / max(self.threads, 1)


@dataclass
class DeviceLoad:
    """What the device knows about itself: queries queued or running here, its recent mean
    time per query, and how many it admits at once (bounded queue)."""

    queue_depth: int = 0
    service_s: float = 0.0
    threads: int = 1
    limit: int = 64
    backlog_s: float | None = None   # device-seconds admitted here, not done (predicted x measured rate)
    slowdown: float = 1.0         # measured contention on the device's cores (co-located services)
    rate: float = 1.0             # measured seconds per predicted second of recent work here
    start_s: float = 0.0          # a query run here now waits this long for a worker process to start

    def wait_s(self) -> float:
        work = self.backlog_s if self.backlog_s is not None else self.queue_depth * self.service_s
        return work * self.slowdown / max(self.threads, 1)


POLICIES = ("latency", "utilization")


@dataclass
class StormPolicy:
    mode: str = "none"            # none | admission | probabilistic
    limit: int = 4                # admission: concurrent push-backs the host accepts
    beta: float = 0.5             # probabilistic: weight of host load against benefit


@dataclass
class Decision:
    placement: str
    reason: str
    predicted: dict               # placement -> {part: seconds, "total": seconds}
    estimate: dict = field(default_factory=dict)
    probability: float | None = None
    load: dict = field(default_factory=dict)      # the host and device load the prediction used
    caveats: list = field(default_factory=list)   # why the prices may be less sure than usual
    total_keys: dict = field(default_factory=dict)   # placement -> its end-to-end correction's key
    # placement -> {"exec" / "exec_host": that execution's online-correction key as priced}
    exec_keys: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return asdict(self)


def predict(est: Estimate, dev: DeviceModels, host: DeviceModels, load: HostLoad,
            dev_load: DeviceLoad | None = None, keys: dict | None = None,
            exec_keys: dict | None = None) -> dict:
    """Predicted seconds of every term of every placement; ``keys`` (if given) receives each
    placement's online end-to-end correction key, which the client's measurement of that
    placement must update (:meth:`DeviceModels.predict_total`), and ``exec_keys`` each
    execution's online-correction key as priced (a host priced on its free threads learns
    into the entry that priced it, not the one of all its threads)."""
    objs = max(est.objects, 1)
    threads = max(1, min(load.free_threads, host.threads)) if load.free_threads else 1
    wait = load.wait_s()
    out: dict = {}
    rb = dev.predict_bytes(est.rows, est.out_width)
    setup_dev = dev.predict_setup(est.input_rows, objs)
    setup_host = host.predict_setup(est.input_rows, objs)
    split = est.split_ops is not None
    # each model prices its op vectors in one call (a vector at a time, in plain floats)
    dk, hk = [], []
    dev_exec = dev.predict_execs([(est.ops, None, None, 1)]
                                 + ([(est.split_ops, None, None, max(len(est.splits), 1))] if split else []), dk)
    host_exec = host.predict_execs([(est.ops, threads, "back", 1)]
                                   + ([(est.upper_ops, threads, "split", 1)] if split else []), hk)
    if exec_keys is not None:
        exec_keys.update(down={"exec": dk[0]}, back={"exec_host": hk[0]})
        if split:
            exec_keys["split"] = {"exec": dk[1], "exec_host": hk[1]}
    down = {"deser": setup_dev, "exec": dev_exec[0], "ser": dev.predict_ser(rb),
            "transfer": dev.predict_transfer(rb), "deser_host": host.deser_s, "bytes": rb}
    out["down"] = down
    hb = host.predict_bytes(est.rows, est.out_width)       # the host's result, host -> client
    # the host's legs beyond their link fits (an offset each, from the call-path probes; one
    # below the link's price may not take a leg under zero)
    handover, relay = dev.leg("handover"), dev.leg("relay")
    result = max(0.0, host.predict_transfer(hb) + relay)
    back = {"transfer": max(0.0, dev.predict_push(est.input_bytes) + handover), "deser_host": setup_host,
            "wait": wait, "exec_host": host_exec[0], "result": result, "bytes": float(est.input_bytes)}
    out["back"] = back
    if split:
        sb = dev.predict_bytes(est.split_rows, est.split_width)
        out["split"] = {"deser": setup_dev, "exec": dev_exec[1],
                        "ser": dev.predict_ser(sb), "transfer": max(0.0, dev.predict_push(sb) + handover),
                        # the host decodes each cut's result as it decodes pushed-back objects
                        # (run_pushed), so the same calibrated model prices it
                        "deser_host": host.predict_setup(est.split_rows, max(len(est.splits), 1)), "wait": wait,
                        "exec_host": host_exec[1], "result": result, "bytes": sb}
    if load.slowdown > 1.0:      # other work on the host's cores stretches the host's part
        for v in out.values():
            if "exec_host" in v:
                v["contention_host"] = (v["exec_host"] + v["deser_host"]) * (load.slowdown - 1.0)
    if dev_load is not None:
        # work already admitted on the device delays what runs there (down, split's lower part),
        # and whatever else keeps its cores busy stretches it
        q = dev_load.wait_s()
        for pl in ("down", "split"):
            if pl in out and q:
                out[pl]["queue"] = q
        if dev_load.slowdown > 1.0:
            # the device's process also reads and sends what crosses its link (results, or the
            # raw objects of a push-back), so the stretch reaches the transfer of every placement
            for v in out.values():
                v["contention"] = device_work(v) * (dev_load.slowdown - 1.0)
    # no worker process idle where a placement runs: it waits for one to start (once; after
    # the call-path fit and its correction, which price warm calls)
    if dev_load is not None and dev_load.start_s > 0:
        for pl in ("down", "split"):
            if pl in out:
                out[pl]["worker_start"] = dev_load.start_s
    if load.start_s > 0:
        for pl in ("back", "split"):
            if pl in out:
                out[pl]["worker_start_host"] = load.start_s
    for pl, v in out.items():
        once = worker_start(v)
        raw = float(sum(x for k, x in v.items() if k != "bytes")) - once
        total, key = dev.predict_total(pl, raw)
        v["call"] = total - raw                            # calibrated call-path overhead (may be < 0)
        v["total"] = raw + v["call"] + once
        if keys is not None:
            keys[pl] = key
    return out


# an input more than this many times the largest one a device's models were calibrated on is
# priced by extrapolation (a forest gives way to the linear model beyond 1.2x): say so
EXTRAPOLATED = 2.0


def caveats(est: Estimate, *models: DeviceModels | None) -> list[str]:
    """What makes these prices less sure: an input beyond the sizes a model was calibrated on
    (a record made on small tables kept for large ones prices them by extrapolation)."""
    out, rows = [], float(est.input_rows or 0)
    for m in {id(m): m for m in models if m is not None}.values():
        if m.rows_max and rows > EXTRAPOLATED * m.rows_max:
            out.append(f"{m.device}'s models were calibrated on inputs up to {m.rows_max:,.0f} rows; this plan "
                       f"reads {rows:,.0f} ({rows / m.rows_max:.0f}x): its times are extrapolated "
                       f"(recalibrate on tables this large)")
    return out


def host_work(terms: dict) -> float:
    """Predicted seconds of work one placement puts on the host (what it reserves there)."""
    return float(terms.get("exec_host", 0.0) + terms.get("deser_host", 0.0)) if "exec_host" in terms else 0.0


# a fresh query worker process's start (its imports), on the device and on the host: priced
# where no worker is idle, measured apart from the executions, learnt by no correction
START_TERMS = ("worker_start", "worker_start_host")


def worker_start(terms: dict) -> float:
    """Seconds of a placement's terms (predicted or measured) spent waiting for worker processes to start."""
    return float(sum(terms.get(k, 0.0) for k in START_TERMS))


def warm_total(terms: dict) -> float:
    """A placement's predicted total less its worker starts: what decisions compare. A start
    is paid once and serves every later query there; counted in the choice, a device with no
    worker yet lost every query to a warm host and never started one."""
    return float(terms["total"]) - worker_start(terms)


def device_work(terms: dict) -> float:
    """Predicted seconds of work one placement puts on the device's own process: decode,
    execute, serialize, and send over its link."""
    return float(sum(terms.get(k, 0.0) for k in ("deser", "exec", "ser", "transfer")))


def loaded_exec(terms: dict, key: str = "exec") -> float:
    """A placement's predicted execution (``exec`` on the device, ``exec_host`` on the host)
    under the load its decision priced: the term times the stretch its contention term
    carries (``contention = device_work * (stretch - 1)``, ``contention_host = host_work *
    (stretch - 1)``). What a measured execution, which ran under that load, compares with:
    the online correction learns from this, so a slowdown the stretch already prices is not
    learnt a second time (a device 1.5x loaded was priced 1.5 x 1.5 = 2.25x), and a stretch
    reading that over- or under-states what the queries feel is corrected like any model error."""
    x = float(terms.get(key, 0.0))
    if key == "exec_host":
        work, extra = host_work(terms), float(terms.get("contention_host", 0.0))
    else:
        work, extra = device_work(terms), float(terms.get("contention", 0.0))
    return x * (1.0 + extra / work) if work > 0 and extra > 0 else x


def total_as_priced(pred: dict, act: dict) -> float:
    """A placement's measured total with each measured execution (``exec`` on the device,
    ``exec_host`` on the host) replaced by its price under the decision's load
    (:func:`loaded_exec`): what the end-to-end correction of the placement's size class
    learns from. Executions have corrections of their own, per shape, learnt from those same
    measurements; learnt a second time per size class, one shape's execution miss moved the
    price of every other shape in its class. So the end-to-end correction learns only what
    the terms around the executions miss (call path, legs, decodes). The time a query waited
    for freshly started worker processes (:data:`START_TERMS`, a one-off) is left out too: the
    correction compares it with the predicted total less its own start terms."""
    total = float(act["total"]) - worker_start(act)
    for key in ("exec", "exec_host"):
        if key in pred and key in act:
            total += loaded_exec(pred, key) - float(act[key])
    return max(total, 1e-9)


def host_slack(pred: dict, placement: str) -> float:
    """The host wait at which ``placement`` stops beating staying down: the most queueing a
    push-back decided now can meet on the host and still be the right choice."""
    p, d = pred[placement], pred.get("down")
    if d is None:
        return float("inf")
    return max(0.0, warm_total(d) - warm_total(p) + p.get("wait", 0.0))


def decide(est: Estimate, dev: DeviceModels | None, host: DeviceModels | None, load: HostLoad | None = None,
           placement: str = "auto", storm: StormPolicy | None = None,
           rng: np.random.Generator | None = None, dev_load: DeviceLoad | None = None,
           policy: str = "latency") -> Decision:
    """Choose the lowest predicted latency (or honour a forced placement); never raises on odd plans.

    Policies (thesis §5.4.1): ``latency`` (default) takes the lowest predicted total;
    ``utilization`` keeps work on the device while its queue has room and pushes back
    (lowest latency of the rest) only when it is full."""
    load = load or HostLoad()
    storm = storm or StormPolicy()
    summary = {"rows": est.rows, "input_rows": est.input_rows, "input_bytes": est.input_bytes,
               "supported": est.supported, "reason": est.reason, "ops": est.ops,
               "split_rows": est.split_rows}
    if policy not in POLICIES:
        from colony.errors import QueryError
        raise QueryError(f"unknown policy {policy!r}; use {' or '.join(POLICIES)}")
    keys: dict = {}
    xkeys: dict = {}
    if dev is None or host is None or est.rows is None:     # unmodelled plan: nothing to price
        pred, notes = {}, []
    else:
        pred, notes = predict(est, dev, host, load, dev_load, keys, xkeys), caveats(est, dev, host)
    if placement != "auto":
        if placement not in PLACEMENTS:
            from colony.errors import QueryError
            raise QueryError(f"unknown placement {placement!r}; use auto, down, back or split")
        chosen = placement if (placement != "split" or "split" in pred or not pred) else "down"
        why = "forced" if chosen == placement else "forced split, but the plan is all filter/projection: down"
        return Decision(chosen, why, pred, summary, caveats=notes, total_keys=keys, exec_keys=xkeys)
    if not est.supported:
        return Decision("back", f"estimator does not model this plan ({est.reason}); the host runs it", pred,
                        summary, caveats=notes, total_keys=keys, exec_keys=xkeys)
    if not pred:
        return Decision("down", "no calibrated models on this device yet: keep the work here", pred, summary)
    best = min(pred, key=lambda k: warm_total(pred[k]))
    reason, compared = "lowest predicted latency", pred
    if policy == "utilization":
        full = dev_load is not None and dev_load.queue_depth >= dev_load.limit
        if not full:
            best, reason, compared = "down", "utilization policy: the device has room", {}
        else:
            compared = {k: v for k, v in pred.items() if k != "down"}
            best = min(compared, key=lambda k: warm_total(compared[k]))
            reason = "utilization policy: device queue full, lowest predicted latency elsewhere"
    if any(worker_start(v) for v in compared.values()):
        reason += " (a worker process's start, paid once, left out of the comparison)"
    prob = None
    if best in ("back", "split") and storm.mode == "probabilistic":
        t_down = warm_total(pred["down"])
        rel = max(0.0, (t_down - warm_total(pred[best])) / max(t_down, 1e-9))
        lf = load.queue_depth / max(load.threads, 1)
        prob = rel / (rel + storm.beta * lf) if (rel + lf) > 0 else 1.0
        rng = rng or np.random.default_rng()
        if rng.random() >= prob:
            best, reason = "down", f"storm control: kept on device (push-back probability {prob:.2f})"
    return Decision(best, reason, pred, summary, prob, caveats=notes, total_keys=keys, exec_keys=xkeys)
