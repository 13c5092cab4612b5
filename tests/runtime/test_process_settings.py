"""A device actor's process settings: transparent huge pages off (inherited by the query
workers it forks) and part of the fingerprint, so calibrations made under other settings
are not reused."""

import subprocess
import sys

import pytest

from colony.runtime import fingerprint, process


def _thp_disabled(pid: str = "self") -> bool | None:
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith("THP_enabled:"):
                return line.split()[1] == "0"
    except OSError:
        pass
    return None


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_THP_DISABLE is Linux's")
def test_apply_turns_huge_pages_off_for_the_process_and_its_children():
    code = ("import subprocess, sys; from colony.runtime import process; ok = process.apply(); "
            "child = subprocess.run(['grep', 'THP_enabled', '/proc/self/status'], capture_output=True, text=True); "
            "print(ok, child.stdout.split()[-1] if child.stdout else 'n/a')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out[0] == "True"
    if out[1] != "n/a":                        # kernels since 6.x report it; the child inherits the flag
        assert out[1] == "0"


def test_process_settings_are_in_a_ray_devices_fingerprint_only(monkeypatch):
    from colony.config.builders import devices as devices_config
    spec = devices_config({"nic0": {"role": "smartnic", "threads": 1}}).device("nic0")
    assert fingerprint.describe(spec, "ray")["process"] == process.settings()
    assert fingerprint.describe(spec, "local")["process"] is None
    before = fingerprint.fingerprint(spec, "ray")
    monkeypatch.setattr(process, "TRANSPARENT_HUGEPAGES", True)
    assert fingerprint.fingerprint(spec, "ray") != before        # a calibration under THP is another record
    assert fingerprint.fingerprint(spec, "local") == fingerprint.fingerprint(spec, "local")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_THP_DISABLE is Linux's")
def test_every_device_actor_of_a_ray_colony_runs_with_huge_pages_off(ray_colony):
    for s in ray_colony.status():
        assert s["hugepages_off"] is True, s["device"]
        if _thp_disabled(str(s["pid"])) is not None:      # the kernel's own view of that process
            assert _thp_disabled(str(s["pid"])), s["device"]
