"""Emulation profiles: how an emulated device is made weaker by real mechanisms.

A profile sets a device's *budgets* (Arrow/DataFusion threads, memory, disk, an optional
paced link). The runtime enforces them with ``pa.set_cpu_count``, DataFusion target
partitions, ``os.sched_setaffinity`` where the machine has the cores, and
:class:`colony.pacing.Link` s on the device's links. Cost models never read these numbers: they learn each device by
calibration (``colony calibrate``), so a profile is a knob, not a claim about speed.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Profile:
    name: str
    emulated: bool
    threads: int                 # 0 = every core this machine gives the process
    memory: int                  # object-store memory budget in bytes (0 = unlimited)
    disk: int                    # spill budget in bytes (0 = no spilling)
    link_gbps: float | None      # paced link rate in Gbit/s, None = unpaced
    pin: bool                    # pin the device's threads to cores when the machine has enough
    description: str


GiB = 1 << 30
MiB = 1 << 20

PROFILES: dict[str, Profile] = {
    "host": Profile("host", False, 0, 0, 8 * GiB, None, False,
                    "the machine itself: every core, no memory budget"),
    "bluefield2": Profile("bluefield2", True, 1, 512 * MiB, 4 * GiB, None, True,
                          "NVIDIA BlueField-2 (8 Arm A72 cores, ~4x slower than a host in the seeds): "
                          "1 thread, 512 MiB store, 4 GiB spill"),
    "bluefield3": Profile("bluefield3", True, 2, 1 * GiB, 8 * GiB, None, True,
                          "NVIDIA BlueField-3 (16 Arm A78 cores): 2 threads, 1 GiB store, 8 GiB spill"),
    "csd": Profile("csd", True, 1, 256 * MiB, 8 * GiB, 1.0, True,
                   "computational storage drive (few embedded cores, 1 Gbit/s peer link as in SCANCOMS)"),
}
