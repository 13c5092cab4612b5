"""Colonies of emulated CSDs for merge sort: in-process or Ray device actors, built from
:func:`colony.config.builders.csd_colony`-style configurations, each with its own work directory."""

from __future__ import annotations

import shutil
import tempfile
from typing import Any, Callable

from colony.errors import NearStoreError


def local_factory(workroot: str | None = None) -> Callable[[int], tuple[Any, list[str], Callable[[], None]]]:
    """n CSDs in this process (LocalColony), block stores in a temporary directory."""
    from colony.config.builders import devices as devices_config
    from colony.runtime.local import LocalColony

    def make(n: int):
        d = tempfile.mkdtemp(prefix="colony-nearstore-", dir=workroot)
        names = [f"csd{i}" for i in range(n)]
        col = LocalColony(devices_config({nm: {"role": "csd", "workdir": d, "services": {"nearstore": {"device_id": i}}}
                           for i, nm in enumerate(names)}))
        return col, names, lambda: shutil.rmtree(d, ignore_errors=True)
    return make


def ray_factory(workroot: str | None = None, temp_dir: str = "/tmp/ray-issue7"):
    """n CSDs as Ray device actors (colony.connect); D2D is a direct actor-to-actor call."""
    def make(n: int):
        try:
            import colony
            from colony.config.builders import csd_colony
            connect = colony.connect
        except (ImportError, AttributeError):
            raise NearStoreError("this build has no Ray runtime (colony.connect); use --runtime local") from None
        d = tempfile.mkdtemp(prefix="colony-nearstore-", dir=workroot)
        c = connect(csd_colony(n, d, temp_dir=temp_dir, num_cpus=2))
        names = [f"csd{i}" for i in range(n)]

        def close() -> None:
            try:
                c.shutdown()
            finally:
                shutil.rmtree(d, ignore_errors=True)
        return c, names, close
    return make


def colony_factory(runtime: str, workroot: str | None):
    """The factory for ``runtime``: 'local' (in-process) or 'ray' (device actors)."""
    if runtime == "local":
        return local_factory(workroot)
    if runtime == "ray":
        return ray_factory(workroot)
    raise NearStoreError(f"runtime {runtime!r}: use 'local' (in-process) or 'ray' (device actors)")
