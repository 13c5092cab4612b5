"""The runtime on a real 3-node Ray cluster (ray.cluster_utils): devices, pools, peers,
injection, back-pressure, paced links, faults and token auth."""

import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pyarrow as pa
import pytest

from colony import codec
from colony.data import uniform
from colony.errors import DeviceFull, RuntimeFailure, UnknownDevice
from colony.errors import ServiceError
from colony.errors import ObjectTooLarge, UnknownKey, UnknownPool

pytestmark = pytest.mark.ray


def test_devices_are_pinned_to_their_nodes_and_labelled(ray_colony):
    c = ray_colony
    names = [d.name for d in c.devices()]
    assert names == ["host0", "nic0", "nic1", "nic2", "nic3"]
    st = {s["device"]: s for s in c.status()}
    assert st["nic0"]["node_id"] == st["nic2"]["node_id"] != st["host0"]["node_id"]
    assert st["nic1"]["node_id"] == st["nic3"]["node_id"] != st["nic0"]["node_id"]
    assert {d.label for d in c.devices() if d.role == "smartnic"} == {"emulated bluefield2"}
    assert st["nic0"]["emulation"]["arrow_cpu_count"] == 1 and st["host0"]["emulation"]["emulated"] is False
    assert c.auth_mode == "token"
    # connect warmed every handler thread of each device it started (a restarted one starts cold)
    k = c.config.runtime.max_concurrency
    assert all(s["warm_threads"] == k for s in st.values() if not s["restarted"])
    assert any(not s["restarted"] for s in st.values())


def test_put_get_list_drop_route_by_tft(ray_colony):
    c = ray_colony
    t = uniform(20_000, seed=3)
    before = c.info("nic1")["pools"]["default"]["objects"]
    e = c.put("default", "rt/5", t, codec="inner-lz4")        # tag 5 -> member 5 % 4 = nic1
    assert c.owner("default", "rt/5") == "nic1" and e.rows == 20_000 and e.codec == "inner-lz4"
    assert c.info("nic1")["pools"]["default"]["objects"] == before + 1
    assert c.get("default", "rt/5")[0].equals(t)
    for i in range(4):
        c.put("default", f"rt/{i}", t.slice(0, 100))
    assert c.list("default", "rt/") == ["rt/0", "rt/1", "rt/2", "rt/3", "rt/5"]
    c.drop("default", "rt/5")
    with pytest.raises(UnknownKey, match="no key 'rt/5'"):
        c.get("default", "rt/5")
    for i in range(4):
        c.drop("default", f"rt/{i}")


def test_unknown_device_pool_service_are_clear_errors(ray_colony):
    c = ray_colony
    with pytest.raises(UnknownDevice, match="unknown device 'nic9'.*host0"):
        c.call("nic9", "objects", "info")
    with pytest.raises(UnknownPool, match="unknown pool 'nope'"):
        c.put("nope", "k/1", uniform(10))
    with pytest.raises(ServiceError, match="not placed on device 'nic0'"):
        c.call("nic0", "sift", "accept")
    with pytest.raises(ServiceError, match="not an endpoint"):
        c.call("nic0", "objects", "__init__")


def test_call_async_and_device_to_device_calls_do_not_deadlock(ray_colony):
    c = ray_colony
    a, b = uniform(5_000, seed=1), uniform(5_000, seed=2)
    c.put("default", "d2d/0", a)    # nic0
    c.put("default", "d2d/1", b)    # nic1
    futs = [c.call_async("nic0", "objects", "fetch", "nic1", "default", "d2d/1"),
            c.call_async("nic1", "objects", "fetch", "nic0", "default", "d2d/0")]   # crossing calls
    bufs = c.wait(futs, timeout=60)
    assert codec.unpack(bufs[0])[0].equals(b) and codec.unpack(bufs[1])[0].equals(a)
    e = c.call("nic2", "objects", "copy_from", "nic0", "default", "d2d/0", dest_pool="inject")
    assert e.rows == 5_000 and "d2d/0" in c.call("nic2", "objects", "list", "inject", "d2d/")
    for dev, pool, key in (("nic0", "default", "d2d/0"), ("nic1", "default", "d2d/1"), ("nic2", "inject", "d2d/0")):
        c.call(dev, "objects", "drop", pool, key)


def test_inject_pipelines_batches_and_loses_nothing(ray_colony):
    c = ray_colony
    t = uniform(120_000, seed=7)
    rep = c.inject(t, pool="inject", key_prefix="inj/", batch_rows=25_000, start=0)
    assert rep.batches == 5 and rep.rows == 120_000 and rep.codec == "none"
    assert set(rep.devices) == {"nic0", "nic1", "nic2", "nic3"}
    assert c.list("inject", "inj/") == [f"inj/{i}" for i in range(5)]
    back = pa.concat_tables([c.get("inject", f"inj/{i}")[0] for i in range(5)])
    assert back.equals(t)
    rep2 = c.inject({"particle_id": np.arange(1000, dtype=np.uint64)}, device="nic3", pool="inject",
                    key_prefix="arr/", codec="inner-zstd")
    assert rep2.entries[0].codec == "inner-zstd" and rep2.wire_bytes < rep2.bytes
    key = rep2.entries[0].key
    assert c.owner("inject", key) == "nic3" and key == "arr/3"
    assert c.get("inject", key)[0]["particle_id"].to_pylist() == list(range(1000))
    for k in c.list("inject", "inj/") + [key]:
        c.drop("inject", k)


def test_backpressure_raise_keeps_unstored_batches_and_block_waits(ray_colony):
    c = ray_colony
    used = c.info("nic3")["memory_used"]
    batch = uniform(16_000, seed=1)                      # ~1.1 MiB packed
    size = codec.pack([batch]).size
    c.set_budget("nic3", memory=used + int(2.5 * size), disk=0)
    try:
        with pytest.raises(DeviceFull, match="'nic3' is full.*2 batch\\(es\\) stored") as e:
            c.inject([batch] * 4, device="nic3", pool="inject", key_prefix="bp/", backpressure="raise",
                     inflight=1, start=0)
        assert "'bp/11'" in str(e.value)
        assert c.call("nic3", "objects", "list", "inject", "bp/") == ["bp/3", "bp/7"]
        # block: a consumer frees room while the producer waits; every batch lands
        threading.Timer(0.5, lambda: [c.call("nic3", "objects", "drop", "inject", k) for k in ("bp/3", "bp/7")]).start()
        rep = c.inject([batch] * 2, device="nic3", pool="inject", key_prefix="bp/", backpressure="block",
                       timeout_s=20, inflight=1, start=11)
        assert rep.batches == 2 and rep.blocked_s > 0
        assert c.call("nic3", "objects", "list", "inject", "bp/") == ["bp/11", "bp/15"]
        with pytest.raises(ObjectTooLarge):     # larger than the whole device: refused, not blocked on
            c.inject(uniform(100_000), device="nic3", pool="inject", key_prefix="bp/", start=9)
    finally:
        c.set_budget("nic3", memory=64 << 20, disk=512 << 20)
        for k in c.call("nic3", "objects", "list", "inject", "bp/"):
            c.call("nic3", "objects", "drop", "inject", k)


def test_paced_link_bounds_transfer_rate(ray_colony):
    c = ray_colony
    buf = codec.pack([uniform(50_000, seed=2)])            # ~3.6 MB
    c.set_link("nic2", 0.08)                               # 10 MB/s
    try:
        t0 = time.perf_counter()
        c.put("default", "pace/2", buf)
        c.get_object("default", "pace/2")
        elapsed = time.perf_counter() - t0
        assert [s for s in c.status() if s["device"] == "nic2"][0]["link_waited_s"] > 0.5
    finally:
        c.set_link("nic2", None)
    assert elapsed >= 2 * buf.size / 10e6 * 0.9
    c.drop("default", "pace/2")


def test_token_auth_rejects_a_client_with_the_wrong_token(ray_colony):
    code = ("import ray,sys\n"
            "try:\n ray.init(address=sys.argv[1]); ray.get(ray.put(1)); print('CONNECTED')\n"
            "except Exception as e: print('REFUSED', type(e).__name__)\n")

    def client(**env):
        e = {k: v for k, v in os.environ.items() if not k.startswith("RAY_AUTH_TOKEN")}
        e.update(env)
        return subprocess.run([sys.executable, "-c", code, ray_colony.cluster.address], env=e,
                              capture_output=True, text=True, timeout=120)
    good = client(RAY_AUTH_MODE="token")           # the colony's token (the default token file)
    assert "CONNECTED" in good.stdout, good.stdout + good.stderr[-2000:]
    # a refused client retries its GCS connect once a second, 20 times by default (~20 s of
    # the suite); Ray's own knob bounds that to 2 tries (each still refused, as asserted)
    bad = client(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN="0" * 64, RAY_gcs_server_port_wait_time_s="2")
    assert "REFUSED" in bad.stdout and "CONNECTED" not in bad.stdout, bad.stdout + bad.stderr[-2000:]


def test_killed_device_restarts_and_spilled_objects_come_back(ray_colony):
    c = ray_colony
    objs = {f"kill/{i}": uniform(350_000, seed=i) for i in (1, 5, 9)}    # ~25 MB each, all owned by nic1
    for k, t in objs.items():
        assert c.owner("default", k) == "nic1"
        c.put("default", k, t)
    spilled = {e.key for e in c.entries("default", "kill/") if e.spilled}
    assert spilled == {"kill/1"}                            # 64 MiB budget: the oldest spilled
    st = [s for s in c.status() if s["device"] == "nic1"][0]
    os.kill(st["pid"], signal.SIGKILL)
    deadline = time.time() + 60
    while True:
        try:
            st2 = [s for s in c.status() if s["device"] == "nic1"][0]
            break
        except RuntimeFailure:
            if time.time() > deadline:
                raise
            time.sleep(0.5)
    assert st2["restarted"] and st2["pid"] != st["pid"] and st2["store"]["recovered"] == 1
    assert c.get("default", "kill/1")[0].equals(objs["kill/1"])        # spilled: back
    for k in ("kill/5", "kill/9"):                                      # memory only: lost
        with pytest.raises(UnknownKey):
            c.get("default", k)
    c.drop("default", "kill/1")


def test_place_a_registered_service_at_run_time(ray_colony):
    c = ray_colony
    c.place("device", ["nic2"])
    # a subset: services placed at run time before (and again after a restart) add their own pools
    assert {"default", "durable", "inject"} <= set(c.call("nic2", "device", "describe")["pools"])
    with pytest.raises(ServiceError, match="unknown service 'no-such'"):
        c.place("no-such", "all")


def test_a_second_colony_asking_for_held_device_resources_is_refused_at_once(ray_colony):
    """Its actors would wait for resources the session colony's devices hold; the first call
    then failed after the 180 s deadline, naming the devices as hung. Now connect says why."""
    import colony
    from colony.config.builders import embedded
    t0 = time.monotonic()
    with pytest.raises(RuntimeFailure, match=r"cannot start: their Ray resources \['colony_host0'.*held by other"):
        colony.connect(embedded(name="clash"))
    assert time.monotonic() - t0 < 30
    names = {a["name"] for a in __import__("ray").util.list_named_actors(all_namespaces=True)}
    assert not any(n.startswith("clash") for n in names)          # nothing left behind
