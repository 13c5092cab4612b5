"""Multi-node colonies on one machine with ``ray.cluster_utils.Cluster`` (tests, benches).

Each Ray node is a separate raylet with its own object store, so data moved between a
host device and a SmartNIC really crosses object stores. The host devices go on the
head node; the other devices are spread round-robin over the worker nodes.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from typing import Iterator, Mapping

from colony.config import ColonyConfig
from colony.config.schema import resolve as resolve_config
from colony.runtime import auth
from colony.runtime.tempdir import use_temp_dir


def node_layout(config: ColonyConfig, nodes: int) -> list[list[str]]:
    """Devices per node: hosts on node 0, the rest round-robin over nodes 1..n-1."""
    if nodes < 1:
        raise ValueError("a cluster needs at least one node")
    layout: list[list[str]] = [[] for _ in range(nodes)]
    others = []
    for name, d in config.devices.items():
        if d.role == "host" or nodes == 1:
            layout[0].append(name)
        else:
            others.append(name)
    for i, name in enumerate(others):
        layout[1 + i % (nodes - 1)].append(name)
    return layout


def _resources(config: ColonyConfig, names: list[str]) -> dict[str, float]:
    out: dict[str, float] = {}
    for n in names:
        for r, amt in config.devices[n].resources.items():
            out[r] = out.get(r, 0.0) + amt
    return out


@contextmanager
def local_cluster(config: ColonyConfig | Mapping | str | os.PathLike | None = None, nodes: int = 3, *,
                  temp_dir: str | None = None, object_store_memory: int = 256 << 20, num_cpus: int = 1,
                  spill_root: str | os.PathLike | None = None) -> Iterator:
    """A colony on a fresh ``nodes``-node Ray cluster in this process; yields the Colony.

    The cluster, the devices and the driver connection are torn down on exit. The
    Cluster object is available as ``colony.cluster`` (add or remove nodes in tests).
    """
    import ray
    from ray.cluster_utils import Cluster

    from colony.runtime.client import Colony

    cfg = resolve_config(config)
    if spill_root is not None:
        cfg = cfg.with_spill_root(spill_root)
    if ray.is_initialized():
        raise RuntimeError("this process is already connected to Ray; one colony per process")
    auth.enable(cfg.runtime.auth)
    layout = node_layout(cfg, nodes)
    head_args: dict = dict(num_cpus=num_cpus, object_store_memory=object_store_memory,
                           resources=_resources(cfg, layout[0]), include_dashboard=False)
    if temp_dir:
        use_temp_dir(temp_dir)
        head_args["temp_dir"] = temp_dir
    cluster = Cluster(initialize_head=True, head_node_args=head_args)
    colony = None
    try:
        for names in layout[1:]:
            cluster.add_node(num_cpus=num_cpus, object_store_memory=object_store_memory,
                             resources=_resources(cfg, names))
        cluster.wait_for_nodes()
        colony = Colony(cfg, address=cluster.address)
        colony.cluster = cluster
        colony.layout = layout
        yield colony
    finally:
        if colony is not None:
            colony.shutdown()
        if ray.is_initialized():
            ray.shutdown()
        cluster.shutdown()
