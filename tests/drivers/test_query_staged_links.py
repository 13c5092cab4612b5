"""A plan the host must run over several devices' objects together (no filter/projection
part to push down, e.g. a count over a table spread over two devices): each device stages
its raw objects on the host itself (device -> host link); the client's links carry only the
plan and the answer."""

from __future__ import annotations

from colony.drivers.emulated import emulated_colony, load_particles
from colony.drivers.query import QueryClient, calibrate_colony


def _counts(lc) -> dict:
    """Bytes per (link, direction) so far."""
    return {(ln["link"], d): c["bytes"] for ln in lc.link_stats() for d, c in ln["directions"].items()}


def test_whole_plan_on_the_host_gathers_objects_device_to_host_not_via_the_client(tmp_path):
    lc = emulated_colony(n_nics=2, links_gbps=[64.0, 64.0], workdir=str(tmp_path))
    for i in range(2):
        load_particles(lc, f"nic{i}", 20_000, objects=2, seed=i)
    calibrate_colony(lc, "host", n_runs=8, max_rows=20_000)
    stored = {f"nic{i}": sum(lc.store(f"nic{i}").get("particles", k).size
                             for k in lc.store(f"nic{i}").list("particles")) for i in range(2)}
    before = _counts(lc)
    r = QueryClient(lc, "host").query("select count(*) as n from particles", "back")
    assert r.table.column("n").to_pylist() == [40_000]
    after = _counts(lc)
    moved = {k: after[k] - before.get(k, 0) for k in after}
    for d, n in stored.items():
        assert moved[(f"{d}<->host", f"{d}->host")] >= n               # every raw object crossed to the host
        assert moved.get((f"client<->{d}", f"{d}->client"), 0) < 4096           # the device answered with counts only
    assert moved.get(("client<->host", "host->client"), 0) < 4096              # the client got only the result
    assert lc.call("host", "query", "drop_staged", "anything") is False  # nothing left staged on the host
