"""LocalColony abandons an in-process call at its deadline: DeadlineExceeded naming the
device, within the deadline; calls that finish in time and errors are unchanged."""

from __future__ import annotations

import threading
import time

import pytest

from colony.config.builders import embedded
from colony.errors import DeadlineExceeded, UnknownKey
from colony.runtime.local import LocalColony
from colony.services.base import Service, endpoint, service

RELEASE = threading.Event()


@service
class _Stall(Service):
    name = "test_local_stall"

    @endpoint
    def hang(self) -> str:
        RELEASE.wait(30)          # a hung device: answers nothing until released
        return "late"

    @endpoint
    def quick(self, x: int) -> int:
        return x + 1

    @endpoint
    def via_peer(self, device: str, timeout: float) -> str:
        return self.ctx.peers.call(device, "test_local_stall", "hang", timeout=timeout)


def _colony(**runtime) -> LocalColony:
    lc = LocalColony(embedded(runtime=runtime or None))
    lc.place("test_local_stall", ["nic0", "nic1"])
    return lc


def test_a_hung_call_raises_deadline_exceeded_naming_the_device_within_its_deadline():
    RELEASE.clear()
    lc = _colony()
    t0 = time.perf_counter()
    with pytest.raises(DeadlineExceeded) as ei:
        lc.call("nic1", "test_local_stall", "hang", timeout=0.3)
    took = time.perf_counter() - t0
    RELEASE.set()
    assert 0.3 <= took < 1.5
    assert ei.value.device == "nic1" and ei.value.timeout_s == 0.3
    assert "nic1" in str(ei.value) and isinstance(ei.value, TimeoutError)


def test_the_configured_call_timeout_is_the_default_deadline():
    RELEASE.clear()
    lc = _colony(call_timeout_s=0.25)
    t0 = time.perf_counter()
    with pytest.raises(DeadlineExceeded) as ei:
        lc.call("nic0", "test_local_stall", "hang")
    RELEASE.set()
    assert time.perf_counter() - t0 < 1.5 and ei.value.timeout_s == 0.25


def test_a_device_to_device_call_has_its_own_deadline():
    RELEASE.clear()
    lc = _colony()
    with pytest.raises(DeadlineExceeded) as ei:        # nic0 waits on nic1, which hangs
        lc.call("nic0", "test_local_stall", "via_peer", "nic1", 0.2, timeout=5)
    RELEASE.set()
    assert ei.value.device == "nic1"


def test_calls_in_time_and_service_errors_come_back_unchanged():
    lc = _colony()
    assert lc.call("nic0", "test_local_stall", "quick", 41, timeout=5) == 42
    with pytest.raises(UnknownKey):
        lc.call("nic0", "objects", "get", "default", "missing/0", timeout=5)
