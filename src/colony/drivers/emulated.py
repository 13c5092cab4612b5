"""Emulated colonies for queries: in process when the Ray runtime is not in use (1 host + N
SmartNICs as LocalColony devices, each SmartNIC's links paced at its rate), or the embedded
default colony on Ray, with tables loaded on one device (what `colony query` and the query
benchmarks open).

Emulation settings (threads, link bandwidth) shape the timings only; the cost models
learn them by calibration like on real devices.
"""

from __future__ import annotations

import os

import numpy as np

from colony.data import uniform
from colony.config.builders import query_colony
from colony.runtime.local import LocalColony

DEFAULT_MODELS_DIR = os.path.join(os.path.expanduser("~"), ".cache", "colony", "query-models")


NIC_LINKS_GBPS = (16.0, 8.0, 4.0, 32.0)   # the demo SmartNICs' links (Ray and in-process alike)


def emulated_colony(n_nics: int = 4, host_threads: int = 2, nic_threads: int = 1,
                    links_gbps: list[float] | None = None, latency_s: float = 30e-6,
                    workdir: str | None = None, query_options: dict | None = None) -> LocalColony:
    """Host ``host`` and SmartNICs ``nic0..`` with the query service; link rates in Gbit/s
    (default :data:`NIC_LINKS_GBPS`), each transfer charged ``latency_s`` too."""
    links_gbps = list(links_gbps or NIC_LINKS_GBPS[:n_nics]) + [8.0] * max(0, n_nics - len(NIC_LINKS_GBPS))
    cfg = query_colony(n_nics, host_threads=host_threads, nic_threads=nic_threads, workdir=workdir,
                       query_options=query_options).with_runtime(link_latency_s=latency_s)
    return LocalColony(cfg, links_gbps={f"nic{i}": links_gbps[i] for i in range(n_nics)})


def _putter(colony, device: str, pool: str):
    """The put that places ``pool``'s objects on ``device``: the device's store in process (the
    pool created there), the runtime's put on a Ray colony (whose config makes ``device`` the
    pool's one member)."""
    if not hasattr(colony, "store"):
        return colony.put
    store = colony.store(device)
    store.create_pool(pool)
    return store.put


def load_tables(colony, device: str, tables: dict) -> None:
    """Put each table on ``device`` in a pool of its name, as objects part-00000...
    (:func:`colony.data.tables.parts`), in process or on a Ray colony (:func:`_putter`)."""
    from colony.data.tables import parts
    for name, t in tables.items():
        put = _putter(colony, device, name)
        for i, part in enumerate(parts(t)):
            put(name, f"part-{i:05d}", part)


def load_particles(colony, device: str, rows: int, objects: int = 4, seed: int = 0, pool: str = "particles",
                   n_particles: int | None = None):
    """Put ``rows`` uniform particles on ``device`` as ``objects`` objects (keys part-00000...),
    in process or on a Ray colony (:func:`_putter`)."""
    t = uniform(rows, seed=seed, n_particles=n_particles)
    put = _putter(colony, device, pool)
    bounds = np.linspace(0, rows, objects + 1).astype(int)
    for i in range(objects):
        put(pool, f"part-{i:05d}", t.slice(bounds[i], bounds[i + 1] - bounds[i]))
    return t


def query_colony_on_ray(tables: dict, device: str, temp_dir: str = "/tmp/ray-colony-query"):
    """The embedded default colony (Ray) with the query service on every device and each table
    on ``device`` (a pool of its name). Returns ``(colony, host, close)``; the runtime paces
    every call on the devices' links."""
    import colony as colony_pkg
    from colony.config.builders import embedded
    # cost models go into each device's calibration record, beside its device suite
    cfg = embedded(links_gbps={f"nic{i}": g for i, g in enumerate(NIC_LINKS_GBPS)},
                   pools={name: [device] for name in tables}, services={"query": {"devices": "all"}})
    c = colony_pkg.connect(cfg, temp_dir=temp_dir)
    host = next(d.name for d in c.devices() if d.role == "host")
    load_tables(c, device, tables)
    return c, host, c.shutdown


def query_colony_in_process(tables: dict, device: str):
    """:func:`emulated_colony` with its models kept under :data:`DEFAULT_MODELS_DIR` and each
    table on ``device``. Returns ``(colony, host, close)`` like :func:`query_colony_on_ray`."""
    colony = emulated_colony(query_options={"models_dir": DEFAULT_MODELS_DIR})
    load_tables(colony, device, tables)
    return colony, "host", lambda: None
