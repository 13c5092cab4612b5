"""A device actor's process settings are part of its fingerprint (a calibration made under
other settings is not reused), and only for Ray devices."""

from colony.config.builders import devices as devices_config
from colony.runtime import fingerprint, process


def test_process_settings_are_in_a_ray_devices_fingerprint_only(monkeypatch):
    spec = devices_config({"nic0": {"role": "smartnic", "threads": 1}}).device("nic0")
    assert fingerprint.describe(spec, "ray")["process"] == process.settings() == {"env": process.DEVICE_ENV}
    assert fingerprint.describe(spec, "local")["process"] is None
    before, local = fingerprint.fingerprint(spec, "ray"), fingerprint.fingerprint(spec, "local")
    monkeypatch.setitem(process.DEVICE_ENV, "MIMALLOC_PURGE_DELAY", "10")
    assert fingerprint.fingerprint(spec, "ray") != before        # another allocator setting: another record
    assert fingerprint.fingerprint(spec, "local") == local
