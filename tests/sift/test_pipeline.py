"""The whole multi-stage pipeline in-process (LocalColony): every dataset shape, exactly once."""

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from colony.data import Simulation, clustered, load_ais, load_opensky, load_trackml, uniform
from colony.services.base import DeviceContext
from colony.services.host import DeviceHost
from colony.config.builders import devices as devices_config
from colony.runtime.local import LocalColony
from colony.sift import bin_of
from colony.errors import SiftError
from colony.drivers.sift import Sifter
from colony.sift.node import SiftNode
from colony.sift.plan import SiftPlan
from colony.store import ObjectStore


def colony(n=4, workdir=None):
    return LocalColony(devices_config({f"nic{i}": {"role": "smartnic", "services": {"sift": {}},
                                    **({"workdir": str(workdir / f"nic{i}")} if workdir else {})} for i in range(n)}))


def inject_round_robin(sifter, table, members, pieces=8):
    step = max(1, -(-table.num_rows // pieces))
    for i, start in enumerate(range(0, table.num_rows, step)):
        sifter.inject(table.slice(start, step), members[i % len(members)], source=f"rank{i}", seq=0)


def check_exactly_once(sifter, table):
    got = sifter.all_tracks()
    assert got is not None and got.num_rows == table.num_rows
    assert sorted(got.column("id").to_pylist()) == sorted(table.column("id").to_pylist())
    for b, rows in sifter.bins().items():
        t = sifter.bin(b)
        assert t.num_rows == rows
        assert np.all(bin_of(t.column("particle_id").to_numpy(), sifter.plan) == b)   # bin rule
        pid, tm = t.column("particle_id").to_numpy(), t.column("time").to_numpy()
        order = np.lexsort((tm, pid))
        assert np.array_equal(order, np.arange(len(order)))                           # tracks


DATASETS = {
    "uniform": lambda: uniform(20_000, seed=1, n_particles=500, steps=40),
    "clustered": lambda: clustered(10_000, seed=2),
    "trackml": load_trackml,
    "opensky": load_opensky,
    "ais": load_ais,
}


@pytest.mark.parametrize("name", sorted(DATASETS))
@pytest.mark.parametrize("k,routing", [(1, "low"), (2, "hash"), (4, "low"), (7, "low")])
def test_pipeline_every_dataset(name, k, routing):
    table = DATASETS[name]()
    members = [f"nic{i}" for i in range(4)]
    s = Sifter(colony(), members, k=k, n_bins=16, routing=routing)
    inject_round_robin(s, table, members)
    reports = s.run()
    assert len(reports) == s.plan.stages
    assert all(r.rows == table.num_rows for r in reports)        # every stage moves the whole wave
    check_exactly_once(s, table)
    assert all(st["outbox"] == 0 and all(v["rows"] == 0 for v in st["stages"].values())
               for st in s.status().values())
    pid = int(table.column("particle_id")[0].as_py())
    tr = s.track(pid)
    want = table.filter(pc.equal(table.column("particle_id"), pa.scalar(pid, pa.uint64())))
    assert sorted(tr.column("id").to_pylist()) == sorted(want.column("id").to_pylist())
    assert tr.column("time").to_pylist() == sorted(tr.column("time").to_pylist())


def test_simulation_snapshots_become_tracks_with_thresholds():
    sim = Simulation(n_particles=3000, n_ranks=4, seed=3)
    members = [f"nic{i}" for i in range(4)]
    s = Sifter(colony(), members, k=2, n_bins=16, threshold_rows=2000)
    injected = []
    for t, rank, snap in sim.run(6):
        s.inject(snap, members[rank], source=f"rank{rank}", seq=t)
        injected.append(snap)
        s.pump()                                  # streaming: only PEs over threshold compact
    s.run()                                       # drain the rest
    table = pa.concat_tables(injected)
    check_exactly_once(s, table)
    tr = s.track(42)
    assert tr.column("time").to_pylist() == list(range(6))


class FlakyPeers:
    """Peers whose first deliveries to one device fail, or succeed but lose the acknowledgement."""

    def __init__(self, lc, victim, fail=2, lose_ack=2):
        self.lc, self.victim, self.fail, self.lose_ack = lc, victim, fail, lose_ack

    def devices(self):
        return self.lc.devices()

    def call(self, device, service, method, *a, **kw):
        if device == self.victim and method in ("deliver", "deliver_many"):
            if self.fail:
                self.fail -= 1
                raise ConnectionError("device restarting")
            if self.lose_ack:
                self.lose_ack -= 1
                self.lc.call(device, service, method, *a, **kw)   # stored, but the ack is lost
                raise TimeoutError("ack lost")
        return self.lc.call(device, service, method, *a, **kw)


def test_failed_and_repeated_deliveries_count_once():
    lc = colony()
    flaky = FlakyPeers(lc, "nic2")
    for h in lc.hosts.values():
        h.ctx.peers = flaky
    members = list(lc.hosts)
    table = uniform(8000, seed=5, n_particles=300, steps=5)
    s = Sifter(lc, members, k=2, n_bins=16, retry_wait_s=0)
    inject_round_robin(s, table, members)
    reports = s.run()
    assert sum(r.retries for r in reports) >= 1
    assert sum(r.duplicates for r in reports) >= 1               # re-sent after a lost ack...
    check_exactly_once(s, table)                                  # ...and still counted once


def restart(lc, device, workdir):
    """What a Ray restart does to a device: a new process, empty memory, same local disk."""
    old = lc.hosts[device]
    ctx = DeviceContext(name=device, store=ObjectStore(device), peers=lc, workdir=str(workdir / device))
    lc.hosts[device] = DeviceHost(ctx, {"sift": {}})
    old.services["sift"].node.close()


def test_device_restart_mid_sift_resumes_exactly_once(tmp_path):
    lc = colony(4, tmp_path)
    members = list(lc.hosts)
    table = uniform(12_000, seed=7, n_particles=1000, steps=6)
    s = Sifter(lc, members, k=2, n_bins=16, retry_wait_s=0)
    inject_round_robin(s, table, members)
    s.run_stage(1)
    for d in members:                      # stage 2 split everywhere, nothing published yet
        lc.call(d, "sift", "compact", 2, True)
    restart(lc, "nic1", tmp_path)          # loses its memory; outbox and journal are on disk
    restart(lc, "nic3", tmp_path)
    for st in range(2, s.plan.stages + 1):
        s.run_stage(st)
    check_exactly_once(s, table)
    # a new run on the same devices starts empty: nothing of the old run reappears
    s2 = Sifter(lc, members, k=2, n_bins=16, retry_wait_s=0)
    assert s2.bins() == {} and all(v["outbox"] == 0 for v in s2.status().values())


def test_crash_inside_compaction_recovers(tmp_path):
    plan = SiftPlan(k=2, n_bins=4, members=("a",))
    node = SiftNode("a", plan, workdir=tmp_path)
    t = uniform(1000, seed=1)
    node.inject(t, "r0", 0)
    orig = node._drop
    node._drop = lambda pool, key: (_ for _ in ()).throw(RuntimeError("killed"))   # die after commit point
    with pytest.raises(RuntimeError):
        node.compact(1, force=True)
    node._drop = orig
    node.close()
    again = SiftNode("a", plan, workdir=tmp_path)
    assert again.recovered["commits_finished"] == 1
    assert again.held(1) == (0, 0)                               # consumed input gone
    assert sum(again.store.entries("sift.out")[i].rows for i in range(len(again.outbox()))) == 1000
    # a crash before the commit point keeps the input and throws the half-written parts away
    again.inject(uniform(500, seed=2, start_id=1000), "r0", 1)
    again._disk.commit = lambda *a: (_ for _ in ()).throw(RuntimeError("killed"))
    with pytest.raises(RuntimeError):
        again.compact(1, force=True)
    again.close()
    third = SiftNode("a", plan, workdir=tmp_path)
    assert third.recovered["uncommitted_parts_dropped"] > 0
    assert third.held(1)[0] == 500
    third.compact(1, force=True)
    for key, _ in third.outbox():
        third.accept(key, third.outgoing(key))
        third.ack(key)
    assert sum(third.bins().values()) == 1500


def test_misrouted_and_bad_input_are_refused():
    lc = colony(2)
    s = Sifter(lc, list(lc.hosts), k=2, n_bins=4)
    with pytest.raises(SiftError, match="misrouted"):
        lc.call("nic0", "sift", "deliver", "bins.b2.m1.x.c0/1", [uniform(3)])
    with pytest.raises(SiftError, match="particle_id"):
        s.inject(pa.table({"x": [1.0]}), "nic0")
    with pytest.raises(SiftError, match="out of range"):
        s.bin(99)
    with pytest.raises(SiftError, match="not configured"):
        LocalColony(devices_config({"d": {"services": {"sift": {}}}})).call("d", "sift", "status")
