"""An in-process emulated colony for queries when the Ray runtime is not in use:
1 host + N SmartNICs as LocalColony devices, each SmartNIC behind an EmulatedLink.

Emulation settings (threads, link bandwidth) shape the timings only; the cost models
learn them by calibration like on real devices.
"""

from __future__ import annotations

import os

import numpy as np

from colony.data import uniform
from colony.drivers.link import PacedColony
from colony.config.builders import query_colony
from colony.runtime.local import LocalColony

DEFAULT_MODELS_DIR = os.path.join(os.path.expanduser("~"), ".cache", "colony", "query-models")


def emulated_colony(n_nics: int = 4, host_threads: int = 2, nic_threads: int = 1,
                    bandwidths: list[float] | None = None, latency_s: float = 30e-6,
                    workdir: str | None = None, query_options: dict | None = None) -> PacedColony:
    """Host ``host`` and SmartNICs ``nic0..`` with the query service; links in bytes/s."""
    bandwidths = bandwidths or [2e9, 1e9, 500e6, 4e9][:n_nics] + [1e9] * max(0, n_nics - 4)
    lc = LocalColony(query_colony(n_nics, host_threads=host_threads, nic_threads=nic_threads, workdir=workdir,
                                  query_options=query_options))
    return PacedColony(lc, "host", {f"nic{i}": (bandwidths[i], latency_s) for i in range(n_nics)})


def load_particles(colony, device: str, rows: int, objects: int = 4, seed: int = 0, pool: str = "particles",
                   n_particles: int | None = None):
    """Put ``rows`` uniform particles on ``device`` as ``objects`` objects (keys part-00000...)."""
    t = uniform(rows, seed=seed, n_particles=n_particles)
    store = colony.store(device)
    store.create_pool(pool)
    bounds = np.linspace(0, rows, objects + 1).astype(int)
    for i in range(objects):
        store.put(pool, f"part-{i:05d}", t.slice(bounds[i], bounds[i + 1] - bounds[i]))
    return t
