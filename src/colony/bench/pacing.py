"""Pacing accuracy (`colony bench pacing`): achieved vs configured link rate, per traffic kind.

On a 3-node ``ray.cluster_utils`` colony, for link rates of 0.1, 1 and 10 Gbit/s, every
kind of traffic the runtime moves sends bulk payloads (4 MiB each, >= 1 MiB) over the
link it crosses; the achieved rate is the bytes **counted by the link** divided by the
wall time. The kinds, and the link each crosses:

- ``inject`` / ``put`` (Flight DoPut), ``call_args`` (a service call's argument, Ray):
  client -> nic0;
- ``get`` (Flight DoGet), ``call_result`` (a service call's result, e.g. a query result):
  nic0 -> client;
- ``device_to_host`` (what push-back and split send: a device's objects to the host,
  via ``objects.copy_from`` on host0): nic0 -> host0;
- ``device_to_device`` (sift hand-offs, nearstore blocks: ``objects.copy_from`` on nic1):
  nic0 -> nic1.

Each kind also runs unpaced: when the configured rate is above what the transport
sustains unpaced on this machine, the row is reported ``transport-bound`` instead of
judged against the 5% bound. Small calls (1 KiB) are charged latency + size / rate; the
charge the link recorded is reported beside that formula.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

from colony.pacing import counted

RATES_GBPS = (0.1, 1.0, 10.0)
PAYLOAD = 4 << 20
LATENCY_S = 50e-6
KINDS = ("inject", "put", "get", "call_args", "call_result", "device_to_host", "device_to_device")
TOLERANCE = 0.05


def _table(nbytes: int, seed: int = 0) -> pa.Table:
    return pa.table({"x": np.random.default_rng(seed).random(nbytes // 8)})


def _counted(colony, link: str, direction: str) -> int:
    return int(counted(colony.links(), link, direction))


def _charged(colony, link: str, direction: str) -> tuple[int, float]:
    """Transfers and the seconds the link charged them (latency + size / rate each)."""
    stats = colony.links()
    return int(counted(stats, link, direction, "transfers")), float(counted(stats, link, direction, "busy_s"))


def _kind(colony, kind: str, count: int, tag: str):
    """Run ``count`` bulk transfers of ``kind``; returns (link, direction, seconds)."""
    from colony import codec
    tab = _table(PAYLOAD)
    obj = codec.pack(tab)
    keys = [f"pace/{tag}/{i * 4}" for i in range(count)]          # TFT: all on nic0
    if kind in ("get", "call_result", "device_to_host", "device_to_device"):
        for k in keys:
            colony.put("default", k, obj)
    t0 = time.perf_counter()
    if kind == "inject":
        colony.inject([tab] * count, device="nic0", pool="default", key_prefix=f"pace/{tag}/")
        link, direction = "client<->nic0", "client->nic0"
    elif kind == "put":
        for k in keys:
            colony.put("default", k, obj)
        link, direction = "client<->nic0", "client->nic0"
    elif kind == "call_args":
        for k in keys:
            colony.call("nic0", "objects", "put", "default", k, obj)
        link, direction = "client<->nic0", "client->nic0"
    elif kind == "get":
        for k in keys:
            colony.get_object("default", k)
        link, direction = "client<->nic0", "nic0->client"
    elif kind == "call_result":
        for k in keys:
            colony.call("nic0", "objects", "get", "default", k)
        link, direction = "client<->nic0", "nic0->client"
    elif kind == "device_to_host":
        for k in keys:
            colony.call("host0", "objects", "copy_from", "nic0", "default", k, "host")
        link, direction = "host0<->nic0", "nic0->host0"
    else:
        for k in keys:
            colony.call("nic1", "objects", "copy_from", "nic0", "default", k, "default")
        link, direction = "nic1<->nic0", "nic0->nic1"
    return link, direction, t0


def worker(temp_dir: str, out: str) -> None:
    from colony import codec
    from colony.config import default
    from colony.runtime.cluster import local_cluster
    spill = tempfile.mkdtemp(prefix="colony-bench-spill-")
    cfg = default().with_budgets(memory=0).with_spill_root(spill).with_runtime(link_latency_s=LATENCY_S)
    rows, small = [], []
    with local_cluster(cfg, nodes=3, temp_dir=temp_dir, object_store_memory=1 << 30, num_cpus=1) as colony:
        def measure(kind: str, gbps: float | None, count: int, tag: str) -> dict:
            for d in ("nic0", "nic1"):
                colony.set_link(d, gbps)
            names = {"inject": ("client<->nic0", "client->nic0"), "put": ("client<->nic0", "client->nic0"),
                     "call_args": ("client<->nic0", "client->nic0"), "get": ("client<->nic0", "nic0->client"),
                     "call_result": ("client<->nic0", "nic0->client"),
                     "device_to_host": ("host0<->nic0", "nic0->host0"),
                     "device_to_device": ("nic1<->nic0", "nic0->nic1")}
            before = _counted(colony, *names[kind])
            link, direction, t0 = _kind(colony, kind, count, tag)
            wall = time.perf_counter() - t0
            nbytes = _counted(colony, link, direction) - before
            for dev, pool in (("nic0", "default"), ("nic1", "default"), ("host0", "host")):
                for k in colony.call(dev, "objects", "list", pool, f"pace/{tag}/"):
                    colony.call(dev, "objects", "drop", pool, k)
            return {"kind": kind, "link": link, "direction": direction, "bytes": nbytes, "wall_s": wall,
                    "achieved_gbps": nbytes * 8 / wall / 1e9}

        unpaced = {k: measure(k, None, 8, f"u-{k}") for k in KINDS}
        for gbps in RATES_GBPS:
            rate = gbps * 1e9 / 8
            count = int(min(64, max(2, rate * 1.0 // PAYLOAD)))     # about one second of traffic
            for k in KINDS:
                r = measure(k, gbps, count, f"{gbps}-{k}")
                r["configured_gbps"] = gbps
                r["payload_bytes"] = PAYLOAD
                r["transfers"] = count
                r["error"] = r["achieved_gbps"] / gbps - 1
                bound = unpaced[k]["achieved_gbps"] < gbps * (1 + TOLERANCE)
                r["unpaced_gbps"] = unpaced[k]["achieved_gbps"]
                r["verdict"] = ("transport-bound" if bound and r["error"] < -TOLERANCE else
                                "within 5%" if abs(r["error"]) <= TOLERANCE else "off")
                rows.append(r)
                print(f"{gbps} Gbit/s {k}: {r['achieved_gbps']:.3f} ({r['verdict']})", file=sys.stderr, flush=True)
            # small calls: latency + size / rate, as charged by the link
            colony.set_link("nic0", gbps)
            tiny = codec.pack(pa.table({"x": np.arange(64, dtype=np.int64)}))      # < 1 KiB
            n0, w0 = _charged(colony, "client<->nic0", "client->nic0")
            t0 = time.perf_counter()
            for i in range(50):
                colony.call("nic0", "objects", "put", "default", f"small/{i * 4}", tiny)
            wall = (time.perf_counter() - t0) / 50
            n1, w1 = _charged(colony, "client<->nic0", "client->nic0")
            for k in colony.list("default", "small/"):
                colony.drop("default", k)
            small.append({"configured_gbps": gbps, "latency_s": LATENCY_S, "arg_bytes": tiny.size,
                          "expected_charge_s": LATENCY_S + tiny.size / rate,
                          "charged_s_per_call": (w1 - w0) / max(1, n1 - n0), "call_wall_s": wall,
                          "note": "a call right behind another waits less: its transport time overlaps"})
        for d in ("nic0", "nic1"):
            colony.set_link(d, None)
        result = {"rows": rows, "unpaced": list(unpaced.values()), "small_calls": small,
                  "links": colony.links()}
    Path(out).write_text(json.dumps(result))


def run(temp_dir: str = "/tmp/ray-colony-bench") -> dict:
    from colony.machine import describe as machine
    mach = machine()
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        out = f.name
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "colony.bench.pacing", "worker", temp_dir, out],
                          env=dict(os.environ), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"pacing benchmark worker failed:\n{proc.stderr[-4000:]}")
    res = json.loads(Path(out).read_text())
    os.unlink(out)
    judged = [r for r in res["rows"] if r["verdict"] != "transport-bound"]
    summary = {"within_5pct": sum(r["verdict"] == "within 5%" for r in res["rows"]),
               "off": [f"{r['configured_gbps']} {r['kind']}: {r['achieved_gbps']:.3f}" for r in res["rows"]
                       if r["verdict"] == "off"],
               "transport_bound": [f"{r['configured_gbps']} {r['kind']} (unpaced {r['unpaced_gbps']:.2f})"
                                   for r in res["rows"] if r["verdict"] == "transport-bound"],
               "max_abs_error_judged": max((abs(r["error"]) for r in judged), default=None)}
    return {"benchmark": "pacing", "machine": mach, "loadavg_1m_at_end": round(os.getloadavg()[0], 2),
            "wall_s": time.perf_counter() - t0, "rates_gbps": list(RATES_GBPS), "payload_bytes": PAYLOAD,
            "tolerance": TOLERANCE, "note": "3 ray.cluster_utils nodes on one machine: links cross loopback",
            **res, "summary": summary}


def table(result: dict):
    from rich.table import Table
    t = Table(title="pacing accuracy: achieved (bytes counted by the link / wall) vs configured Gbit/s")
    for col in ("kind", "link direction", *(f"{g} Gbit/s" for g in RATES_GBPS), "unpaced"):
        t.add_column(col, justify="right")
    by = {(r["kind"], r["configured_gbps"]): r for r in result["rows"]}
    unp = {r["kind"]: r for r in result["unpaced"]}
    for k in KINDS:
        cells = []
        for g in RATES_GBPS:
            r = by[(k, g)]
            mark = {"within 5%": "", "transport-bound": " (transport-bound)", "off": " (OFF)"}[r["verdict"]]
            cells.append(f"{r['achieved_gbps']:.3f}{mark}")
        t.add_row(k, by[(k, RATES_GBPS[0])]["direction"], *cells, f"{unp[k]['achieved_gbps']:.2f}")
    return t


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "worker":
        worker(sys.argv[2], sys.argv[3])
    else:
        from colony.bench.common import entry
        entry("colony.bench.pacing", __doc__)
        sys.exit("usage: python -m colony.bench.pacing worker TEMP_DIR OUT (or: colony bench pacing)")
