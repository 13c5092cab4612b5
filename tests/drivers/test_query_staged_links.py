"""A plan the host must run over several devices' objects together (no filter/projection
part to push down, e.g. a count over a table spread over two devices): each device stages
its raw objects on the host itself (device -> host link); the client's links carry only the
plan and the answer."""

from __future__ import annotations

from colony.drivers.emulated import emulated_colony, load_particles
from colony.drivers.query import QueryClient, calibrate_colony


def _bytes(lc, link: str, direction: str) -> int:
    for ln in lc.link_stats():
        if ln["link"] == link:
            return ln["directions"][direction]["bytes"]
    return 0


def test_whole_plan_on_the_host_gathers_objects_device_to_host_not_via_the_client(tmp_path):
    lc = emulated_colony(n_nics=2, links_gbps=[64.0, 64.0], workdir=str(tmp_path))
    for i in range(2):
        load_particles(lc, f"nic{i}", 20_000, objects=2, seed=i)
    calibrate_colony(lc, "host", n_runs=8, max_rows=20_000)
    stored = {f"nic{i}": sum(lc.store(f"nic{i}").get("particles", k).size
                             for k in lc.store(f"nic{i}").list("particles")) for i in range(2)}
    links = [(f"{d}<->host", f"{d}->host") for d in stored] + \
            [(f"client<->{d}", f"{d}->client") for d in stored] + [("client<->host", "host->client")]
    before = {ln: _bytes(lc, *ln) for ln in links}
    r = QueryClient(lc, "host").query("select count(*) as n from particles", "back")
    assert r.table.column("n").to_pylist() == [40_000]
    moved = {ln: _bytes(lc, *ln) - before[ln] for ln in links}
    for d, n in stored.items():
        assert moved[(f"{d}<->host", f"{d}->host")] >= n               # every raw object crossed to the host
        assert moved[(f"client<->{d}", f"{d}->client")] < 4096           # the device answered with counts only
    assert moved[("client<->host", "host->client")] < 4096              # the client got only the result
    assert lc.call("host", "query", "drop_staged", "anything") is False  # nothing left staged on the host
