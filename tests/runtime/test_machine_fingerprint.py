"""A calibration is valid only on the machine type it was made on: the CPU model and the core
count are part of every device's fingerprint, so records copied from (or left by a session on)
another VM type are stale rather than pricing this machine with another CPU's timings."""

from colony import machine
from colony.config.builders import devices as devices_config
from colony.runtime import fingerprint


def test_another_cpu_or_core_count_is_another_fingerprint(monkeypatch):
    spec = devices_config({"nic0": {"role": "smartnic", "threads": 1}}).device("nic0")
    here = machine.identity()
    assert fingerprint.describe(spec)["machine"] == here
    assert here["cpu_model"] == machine.describe()["cpu_model"] and here["cores_logical"] >= 1
    fp = {rt: fingerprint.fingerprint(spec, rt) for rt in ("ray", "local")}
    monkeypatch.setattr(machine, "cpu_model", lambda: "Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz")
    other_cpu = {rt: fingerprint.fingerprint(spec, rt) for rt in ("ray", "local")}
    assert all(other_cpu[rt] != fp[rt] for rt in fp)
    monkeypatch.undo()
    monkeypatch.setattr(machine.psutil, "cpu_count", lambda logical=True: 64)
    assert fingerprint.fingerprint(spec) not in (fp["ray"], other_cpu["ray"])
    monkeypatch.undo()
    assert fingerprint.fingerprint(spec) == fp["ray"]           # the same machine: the same records
