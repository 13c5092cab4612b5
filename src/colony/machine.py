"""Where a measurement ran. Every benchmark JSON, calibration file and characterization
carries this, so a number is never quoted without its machine."""

from __future__ import annotations

import os
import platform
import time
from pathlib import Path

import numpy as np
import psutil
import pyarrow as pa


def cpu_model() -> str:
    """The CPU's model name (/proc/cpuinfo's, else what the platform reports)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def identity() -> dict:
    """What of the machine shapes a device's timings: its CPU model and how many logical
    cores it has. A calibration made on another VM type is stale (:mod:`colony.runtime.fingerprint`)."""
    return {"cpu_model": cpu_model(), "cores_logical": psutil.cpu_count()}


def describe(**extra) -> dict:
    available = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {**identity(), "cores_physical": psutil.cpu_count(False),
            "cores_available": available, "ram_gib": round(psutil.virtual_memory().total / 2 ** 30, 1),
            "arch": platform.machine(), "kernel": platform.release(), "platform": platform.platform(),
            "hostname": platform.node(), "python": platform.python_version(), "pyarrow": pa.__version__,
            "numpy": np.__version__, "loadavg_1m_at_start": round(os.getloadavg()[0], 2),
            "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **extra}
