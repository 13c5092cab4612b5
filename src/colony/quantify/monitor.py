"""Resource-utilization sampling (psutil) and power readings (RAPL, IPMI or a supplied wattage).

Why: an MBWU is only an MBWU when the storage medium, not the platform, limits the
throughput (seed 002 §2.2). The report this module produces names the bottleneck so
the MBWU code can refuse a CPU-, memory- or network-bound peak.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import threading
import time
from pathlib import Path

import psutil

NETWORK_FS = {"nfs", "nfs4", "cifs", "smb3", "smbfs", "ceph", "glusterfs", "fuse.sshfs", "9p", "lustre",
              "beegfs", "fuse.glusterfs", "iscsi"}
CPU_BOUND = 85.0        # % of all cores, mean over the run
STORAGE_BOUND = 80.0    # % of wall time the device had I/O in flight (diskstats busy time)
MEMORY_BOUND = 95.0     # % of RAM used


def block_device(path: str | Path) -> str | None:
    """Name of the block device (as in /proc/diskstats) that holds `path`, or None."""
    p = Path(path)
    while not p.exists() and p != p.parent:
        p = p.parent
    st = os.stat(p)
    link = Path(f"/sys/dev/block/{os.major(st.st_dev)}:{os.minor(st.st_dev)}")
    try:
        return link.resolve().name
    except OSError:
        return None


def mount_of(path: str | Path):
    """psutil partition (device, mountpoint, fstype) holding `path` (longest mountpoint prefix)."""
    rp = str(Path(path).resolve())
    best = None
    for part in psutil.disk_partitions(all=True):
        mp = part.mountpoint
        if rp == mp or rp.startswith(mp.rstrip("/") + "/"):
            if best is None or len(mp) > len(best.mountpoint):
                best = part
    return best


def is_network_storage(path: str | Path) -> tuple[bool, str]:
    """True when `path` lives on a network share or network block device (disaggregated storage)."""
    part = mount_of(path)
    if part is None:
        return False, "no mount found"
    dev = os.path.basename(part.device)
    if part.fstype in NETWORK_FS or dev.startswith("nbd") or dev.startswith("rbd"):
        return True, f"{part.device} ({part.fstype}) at {part.mountpoint}"
    return False, f"{part.device} ({part.fstype}) at {part.mountpoint} is local storage"


class PowerMeter:
    """Energy over an interval from RAPL, else an IPMI reading, else a supplied wattage."""

    def __init__(self, supplied_watts: float | None = None):
        self.supplied = supplied_watts
        self.rapl = [f for f in glob.glob("/sys/class/powercap/intel-rapl:*/energy_uj")
                     if re.search(r"intel-rapl:\d+/energy_uj$", f) and os.access(f, os.R_OK)]
        self.ipmi = shutil.which("ipmitool")
        self._e0 = self._t0 = None
        self.samples: list[float] = []

    def _rapl_uj(self) -> float | None:
        try:
            return sum(int(Path(f).read_text()) for f in self.rapl)
        except (OSError, ValueError):
            return None

    def _ipmi_w(self) -> float | None:
        if not self.ipmi:
            return None
        try:
            out = subprocess.run([self.ipmi, "dcmi", "power", "reading"], capture_output=True, text=True,
                                 timeout=3).stdout
        except (OSError, subprocess.TimeoutExpired):
            return None
        m = re.search(r"Instantaneous power reading:\s+([\d.]+)\s+Watts", out)
        return float(m.group(1)) if m else None

    def start(self) -> None:
        self._t0 = time.monotonic()
        self._e0 = self._rapl_uj() if self.rapl else None
        if self._e0 is None:
            w = self._ipmi_w()
            if w is not None:
                self.samples.append(w)

    def sample(self) -> None:
        if self._e0 is None and self.ipmi:
            w = self._ipmi_w()
            if w is not None:
                self.samples.append(w)

    def stop(self) -> dict:
        dt = time.monotonic() - (self._t0 or time.monotonic())
        if self._e0 is not None:
            e1 = self._rapl_uj()
            if e1 is not None and e1 >= self._e0 and dt > 0:
                return {"watts": (e1 - self._e0) / 1e6 / dt, "source": "RAPL (package domains; CPU+DRAM only)"}
        if self.samples:
            return {"watts": sum(self.samples) / len(self.samples), "source": "IPMI dcmi power reading"}
        if self.supplied is not None:
            return {"watts": float(self.supplied), "source": "supplied (--watts); no RAPL or IPMI readable here"}
        return {"watts": None, "source": "unavailable: no RAPL (/sys/class/powercap), no readable IPMI; "
                                         "pass --watts to use a nameplate or metered value"}


class Monitor:
    """Samples CPU, memory, disk and network while a run is in progress (a background thread)."""

    def __init__(self, paths=(), pids=(), interval: float = 0.5, watts: float | None = None):
        self.devices = sorted({d for d in (block_device(p) for p in paths) if d})
        self.pids = list(pids)
        self.interval = interval
        self.power = PowerMeter(watts)
        self._stop = threading.Event()
        self._cpu: list[float] = []
        self._mem: list[float] = []
        self._thread = None

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.result = self.stop()

    def start(self) -> None:
        self._t0 = time.monotonic()
        psutil.cpu_percent(None)
        self._procs = []
        for pid in self.pids:
            try:
                pr = psutil.Process(pid)
                pr.cpu_percent(None)
                self._procs.append(pr)
            except psutil.Error:
                pass
        self._proc_cpu0 = {pr.pid: self._proc_time(pr) for pr in self._procs}
        self._disk0 = psutil.disk_io_counters(perdisk=True)
        self._net0 = psutil.net_io_counters(pernic=True)
        self.power.start()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    @staticmethod
    def _proc_time(pr) -> float:
        try:
            t = pr.cpu_times()
            total = t.user + t.system
            for ch in pr.children(recursive=True):
                ct = ch.cpu_times()
                total += ct.user + ct.system
            return total
        except psutil.Error:
            return 0.0

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self._cpu.append(psutil.cpu_percent(None))
            self._mem.append(psutil.virtual_memory().percent)
            self.power.sample()

    def stop(self) -> dict:
        self._stop.set()
        if self._thread:
            self._thread.join()
        dt = max(time.monotonic() - self._t0, 1e-9)
        if not self._cpu:
            self._cpu.append(psutil.cpu_percent(None))
            self._mem.append(psutil.virtual_memory().percent)
        d1 = psutil.disk_io_counters(perdisk=True)
        n1 = psutil.net_io_counters(pernic=True)
        disks = {}
        for dev in self.devices:
            a, b = self._disk0.get(dev), d1.get(dev)
            if a is None or b is None:
                continue
            busy = getattr(b, "busy_time", None)
            disks[dev] = {
                "read_mib_s": (b.read_bytes - a.read_bytes) / dt / 2 ** 20,
                "write_mib_s": (b.write_bytes - a.write_bytes) / dt / 2 ** 20,
                "read_iops": (b.read_count - a.read_count) / dt,
                "write_iops": (b.write_count - a.write_count) / dt,
                "util_pct": None if busy is None else min(100.0, (busy - a.busy_time) / (dt * 1000) * 100),
            }
        net = {}
        for nic, b in n1.items():
            a = self._net0.get(nic)
            if a is None:
                continue
            rx, tx = (b.bytes_recv - a.bytes_recv) / dt, (b.bytes_sent - a.bytes_sent) / dt
            if rx or tx:
                net[nic] = {"rx_mib_s": rx / 2 ** 20, "tx_mib_s": tx / 2 ** 20}
        procs = {str(pr.pid): (self._proc_time(pr) - self._proc_cpu0[pr.pid]) / dt for pr in self._procs}
        vm = psutil.virtual_memory()
        return {
            "seconds": dt,
            "cpu_pct_mean": sum(self._cpu) / len(self._cpu), "cpu_pct_max": max(self._cpu),
            "cores": psutil.cpu_count(),
            "process_cores": procs,
            "mem_pct_mean": sum(self._mem) / len(self._mem), "mem_pct_max": max(self._mem),
            "mem_total_gib": vm.total / 2 ** 30,
            "disks": disks, "net": net,
            "power": self.power.stop(),
        }


def bottleneck(util: dict, link_mib_s: float | None = None) -> dict:
    """Name the resource that limited a run. Only 'storage' makes a peak an MBWU."""
    reasons = []
    disk_util = max((d["util_pct"] or 0.0 for d in util.get("disks", {}).values()), default=0.0)
    if disk_util >= STORAGE_BOUND:
        kind = "storage"
        reasons.append(f"device busy {disk_util:.0f}% of the run (>= {STORAGE_BOUND:.0f}%)")
    elif util["cpu_pct_mean"] >= CPU_BOUND:
        kind = "cpu"
        reasons.append(f"CPU {util['cpu_pct_mean']:.0f}% busy on {util['cores']} cores (>= {CPU_BOUND:.0f}%) "
                       f"while the device was busy only {disk_util:.0f}%")
    elif util["mem_pct_max"] >= MEMORY_BOUND:
        kind = "memory"
        reasons.append(f"memory {util['mem_pct_max']:.0f}% used")
    elif link_mib_s and any(max(v["rx_mib_s"], v["tx_mib_s"]) >= 0.8 * link_mib_s for v in util["net"].values()):
        kind = "network"
        reasons.append(f"a NIC carried >= 80% of the {link_mib_s} MiB/s link")
    else:
        kind = "undetermined"
        reasons.append(f"no resource saturated (CPU {util['cpu_pct_mean']:.0f}%, device {disk_util:.0f}%): "
                       "latency-bound; add threads")
    return {"resource": kind, "is_media_bound": kind == "storage", "why": "; ".join(reasons),
            "device_util_pct": disk_util}
