"""Emulation planning (pure parts): affinity only where the machine has the cores."""

from colony.config import ColonyConfig, default
from colony.runtime.emulation import plan_affinity


def test_two_cores_are_too_few_to_pin_four_nics():
    c = default()
    cores, note = plan_affinity(c, "nic0", [0, 1])
    assert cores is None and "2 cores < 4 pinned device threads + 1" in note
    assert plan_affinity(c, "host0", [0, 1])[0] is None


def test_enough_cores_pin_each_nic_to_its_own():
    c = default()
    got = [plan_affinity(c, f"nic{i}", list(range(8)))[0] for i in range(4)]
    assert got == [(4,), (5,), (6,), (7,)]


def test_explicit_cores_must_exist():
    c = ColonyConfig.from_dict({"devices": {"n": {"role": "smartnic", "cores": [1]},
                                            "m": {"role": "smartnic", "cores": [9]}}})
    assert plan_affinity(c, "n", [0, 1]) == ((1,), "explicit cores")
    cores, note = plan_affinity(c, "m", [0, 1])
    assert cores is None and "not available" in note


def test_labels_say_emulated():
    cfg = default()
    assert cfg.device("nic0").label == "emulated bluefield2"
    assert cfg.device("host0").label == "real"
