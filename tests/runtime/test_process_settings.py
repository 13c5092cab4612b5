"""A device actor's process settings are part of its fingerprint (a calibration made under
other settings is not reused), and only for Ray devices."""

import gc

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


def test_freeze_heap_moves_what_start_up_made_out_of_later_collections():
    before = gc.get_freeze_count()
    keep = [[i] for i in range(1000)]                 # tracked containers start-up made
    try:
        process.freeze_heap()
        assert gc.get_freeze_count() >= before + 1000
        assert keep[999] == [999]                      # frozen objects stay usable
    finally:
        gc.unfreeze()                                  # the test process's heap as it was


def test_gc_pauses_are_counted_per_generation_with_their_longest():
    pauses = process.watch_gc()
    try:
        gc.collect(0)
        gc.collect(2)
        d = pauses.to_dict()
        assert d["collections"][0] >= 1 and d["collections"][2] >= 1
        assert d["pause_s"][2] >= d["longest_s"][2] > 0
    finally:
        gc.callbacks.remove(pauses)
