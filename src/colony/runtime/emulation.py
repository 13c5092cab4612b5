"""Make an emulated device weaker by real mechanisms, inside its own process.

Thread budget: ``pa.set_cpu_count`` / ``pa.set_io_thread_count`` for Arrow, and the
DataFusion target partitions (``DATAFUSION_EXECUTION_TARGET_PARTITIONS``, read by
``SessionConfig.from_env()``; services building a DataFusion context should also pass
``ctx.threads`` via :func:`datafusion_config`). CPU affinity with ``os.sched_setaffinity``
when the machine has enough cores for every device that asks to be pinned. The paced
links are :class:`colony.pacing.Link` s the device actor charges every transfer on.
What was applied (or why not) is reported, so output can label it honestly.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass

import pyarrow as pa

from colony.config import ColonyConfig, DeviceSpec


@dataclass(frozen=True)
class Emulation:
    device: str
    emulated: bool
    profile: str
    threads: int
    arrow_cpu_count: int
    datafusion_partitions: int
    affinity: tuple[int, ...] | None
    affinity_note: str
    link_gbps: float | None

    def as_dict(self) -> dict:
        return asdict(self)


def plan_affinity(config: ColonyConfig, device: str, available: list[int]) -> tuple[tuple[int, ...] | None, str]:
    """Which cores ``device`` is pinned to, given the cores this machine offers.

    Devices with explicit ``cores`` get exactly those (if present). Devices with ``pin``
    get consecutive cores after the host's share, only when every pinned device can have
    its own ``threads`` cores; otherwise nothing is pinned and the note says why.
    """
    spec = config.devices[device]
    if spec.cores is not None:
        missing = [c for c in spec.cores if c not in available]
        if missing:
            return None, f"cores {missing} not available on this machine (has {available})"
        return tuple(spec.cores), "explicit cores"
    if not spec.pin:
        return None, "not pinned (profile pin = false)"
    pinned = [d for d in config.devices.values() if d.pin and d.cores is None]
    need = sum(d.threads for d in pinned)
    if need + 1 > len(available):   # keep at least one core for the host and the driver
        return None, f"not pinned: {len(available)} cores < {need} pinned device threads + 1 for the host"
    start = len(available) - need
    for d in pinned:
        if d.name == device:
            return tuple(available[start:start + d.threads]), "pinned to its own cores"
        start += d.threads
    return None, "not pinned"


def _pin_all_threads(cores: tuple[int, ...]) -> None:
    """Pin every thread of this process: Linux applies affinity per thread, and a Ray worker
    already runs its RPC threads when the device is built (only later threads inherit)."""
    os.sched_setaffinity(0, cores)
    for tid in os.listdir("/proc/self/task") if os.path.isdir("/proc/self/task") else ():
        try:
            os.sched_setaffinity(int(tid), cores)
        except OSError:
            pass                 # a thread that ended meanwhile


def datafusion_config(threads: int):
    """A DataFusion SessionConfig limited to the device's thread budget."""
    from datafusion import SessionConfig
    return SessionConfig().with_target_partitions(max(1, threads))


def apply(config: ColonyConfig, device: str) -> Emulation:
    """Apply the device's budgets to this process (call once, in the device's process)."""
    spec: DeviceSpec = config.devices[device]
    threads = spec.threads
    pa.set_cpu_count(threads)
    pa.set_io_thread_count(max(2, threads))
    os.environ["DATAFUSION_EXECUTION_TARGET_PARTITIONS"] = str(threads)
    os.environ["OMP_NUM_THREADS"] = str(threads)
    cores, note = None, "sched_setaffinity not available"
    if hasattr(os, "sched_setaffinity"):
        available = sorted(os.sched_getaffinity(0))
        cores, note = plan_affinity(config, device, available)
        if cores is not None:
            try:
                _pin_all_threads(cores)
            except OSError as e:
                cores, note = None, f"sched_setaffinity failed: {e}"
    return Emulation(device=device, emulated=spec.emulated, profile=spec.profile, threads=threads,
                     arrow_cpu_count=pa.cpu_count(), datafusion_partitions=threads, affinity=cores,
                     affinity_note=note, link_gbps=spec.link_gbps)
