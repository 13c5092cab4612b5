"""Deadlines and typed faults on the 3-node session colony: a hung device and a dead one
both fail with a Colony error naming the device, inside the call's deadline; errors a
service raises come back as Colony errors, never as Ray's."""

from __future__ import annotations

import os
import signal
import time

import pytest

from colony.errors import ColonyError, DeadlineExceeded, DeviceLost


def _pid(colony, device: str) -> int:
    return next(s["pid"] for s in colony.status() if s["device"] == device)


def _until_back(colony, device: str, within: float = 60.0) -> None:
    t0 = time.monotonic()
    while time.monotonic() - t0 < within:
        try:
            colony.call(device, "objects", "info", timeout=5)
            return
        except ColonyError:
            time.sleep(0.5)
    raise AssertionError(f"{device} did not come back within {within} s")


def test_a_stalled_device_raises_deadline_exceeded_naming_it_within_the_deadline(ray_colony):
    c = ray_colony
    pid = _pid(c, "nic3")
    os.kill(pid, signal.SIGSTOP)          # the device's process hangs: it answers nothing
    try:
        t0 = time.monotonic()
        with pytest.raises(DeadlineExceeded) as ei:
            c.call("nic3", "objects", "info", timeout=2.0)
        took = time.monotonic() - t0
    finally:
        os.kill(pid, signal.SIGCONT)
    assert ei.value.device == "nic3" and ei.value.timeout_s == 2.0
    assert "nic3" in str(ei.value)
    assert 2.0 <= took < 4.0
    _until_back(c, "nic3")


def test_the_config_default_deadline_applies_when_no_timeout_is_given(ray_colony):
    c = ray_colony
    assert c.config.runtime.call_timeout_s == 300.0
    fut = c.call_async("nic2", "objects", "info")
    assert isinstance(c.wait(fut), dict)               # the default deadline does not cut a healthy call


def test_a_killed_device_raises_device_lost_naming_it_within_the_deadline(ray_colony):
    c = ray_colony
    c.set_link("nic1", 0.001)                          # 125 kB/s: the 4 MB argument keeps the call in flight
    try:
        fut = c.call_async("nic1", "objects", "put", "default", "lost/1", b"x" * (4 << 20))
        time.sleep(1.0)
        os.kill(_pid(c, "nic1"), signal.SIGKILL)       # the device dies mid-call
        t0 = time.monotonic()
        with pytest.raises(DeviceLost) as ei:
            c.wait(fut, timeout=30, devices="nic1")
        assert time.monotonic() - t0 < 30
    finally:
        _until_back(c, "nic1")
        c.set_link("nic1", None)
    assert ei.value.device == "nic1" and "nic1" in str(ei.value)


def test_a_service_error_comes_back_as_a_colony_error_not_a_ray_one(ray_colony):
    import ray
    for bad in (("list", "default", "", "unexpected-extra-argument"), ("put", "default", "k/1", {"not": "bytes"})):
        with pytest.raises(ColonyError) as ei:
            ray_colony.call("nic0", "objects", *bad)
        assert not isinstance(ei.value, ray.exceptions.RayError), bad


def test_several_devices_share_one_deadline_and_the_late_one_is_named(ray_colony):
    c = ray_colony
    pid = _pid(c, "nic2")
    os.kill(pid, signal.SIGSTOP)
    try:
        futs = [c.call_async(d, "objects", "info") for d in ("nic0", "nic2")]
        with pytest.raises(DeadlineExceeded) as ei:
            c.wait(futs, timeout=1.5, devices=["nic0", "nic2"])
    finally:
        os.kill(pid, signal.SIGCONT)
    assert ei.value.device == "nic2"
    _until_back(c, "nic2")


def test_a_raw_exception_in_remote_work_comes_back_as_service_failed(ray_colony):
    import ray

    from colony.errors import ServiceFailed
    from colony.runtime.futures import resolve

    @ray.remote(num_cpus=0)
    def broken():
        raise ValueError("a bug, not a Colony error")

    with pytest.raises(ServiceFailed) as ei:
        resolve(broken.remote(), timeout=60, devices="nic0")
    assert ei.value.error_type == "ValueError" and ei.value.device == "nic0"
    assert "a bug, not a Colony error" in str(ei.value) and "nic0" in str(ei.value)
