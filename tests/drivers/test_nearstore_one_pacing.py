"""Nearstore's own links (a device's device-to-device egress, NESCAFE's shared host port)
and the runtime's links in series pace the same bytes once, at the slower rate; each
counts the bytes once."""

from __future__ import annotations

import time

import pytest

from colony.config.builders import devices as devices_config
from colony.drivers.nearstore import Nescafe
from colony.pacing import counted
from colony.runtime.local import LocalColony

N = 2_000_000                  # bytes per transfer: each paced longer than a stream gap (50 ms)
K = 3                          # transfers: ~0.3-0.6 s at the rates below


def _colony(tmp_path, link_gbps: float, d2d_gbps: float | None = None) -> LocalColony:
    opts = {} if d2d_gbps is None else {"d2d_gbps": d2d_gbps}
    spec = {f"csd{i}": {"role": "csd", "workdir": str(tmp_path), "link_gbps": link_gbps,
                        "services": {"nearstore": opts}} for i in range(2)}
    return LocalColony(devices_config(spec))


def _runtime_bytes(lc, link: str, direction: str) -> int:
    return counted(lc.link_stats(), link, direction)


def _stored(lc, device: str) -> object:
    ext = lc.call(device, "nearstore", "allocate", N)
    lc.call(device, "nearstore", "write", ext, bytes(N))
    return ext


@pytest.mark.parametrize("runtime_gbps,own_gbps", [(0.16, 0.08), (0.08, 0.16)])
def test_device_to_device_bytes_are_paced_once_at_the_slower_rate(tmp_path, runtime_gbps, own_gbps):
    lc = _colony(tmp_path, runtime_gbps, d2d_gbps=own_gbps)
    ext = _stored(lc, "csd0")
    before = _runtime_bytes(lc, "csd1<->csd0", "csd0->csd1")
    peers = lc.hosts["csd1"].ctx.peers            # csd1 reads csd0's block, as COSTA's fetch does
    t0 = time.perf_counter()
    for _ in range(K):
        assert len(peers.call("csd0", "nearstore", "peer_read", ext, 0, N, peer="csd1")) == N
    achieved = K * N * 8 / (time.perf_counter() - t0) / 1e9
    slower = min(runtime_gbps, own_gbps)
    assert abs(achieved - slower) / slower < 0.05, (achieved, slower)   # twice paced would be ~2/3 of it
    assert _runtime_bytes(lc, "csd1<->csd0", "csd0->csd1") - before == K * N   # counted once by the runtime
    stats = lc.call("csd0", "nearstore", "stats")["bytes"]
    assert stats["merge"]["d2d_out"] == K * N                                # and once by nearstore


@pytest.mark.parametrize("runtime_gbps,host_gbps", [(0.16, 0.08), (0.08, 0.16)])
def test_host_port_and_device_link_pace_once_at_the_slower_rate(tmp_path, runtime_gbps, host_gbps):
    lc = _colony(tmp_path, runtime_gbps)
    ext = _stored(lc, "csd0")
    fs = Nescafe(lc, ["csd0", "csd1"], host_gbps=host_gbps)
    before = _runtime_bytes(lc, "client<->csd0", "csd0->client")
    t0 = time.perf_counter()
    for _ in range(K):
        assert len(fs.host_read(ext, 0, N, "readback")) == N
    achieved = K * N * 8 / (time.perf_counter() - t0) / 1e9
    slower = min(runtime_gbps, host_gbps)
    assert abs(achieved - slower) / slower < 0.05, (achieved, slower)
    assert _runtime_bytes(lc, "client<->csd0", "csd0->client") - before == K * N
    assert fs.counters()["host_link"] == {"readback": K * N}
