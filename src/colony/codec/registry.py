"""Which compression engines exist here: software always, accelerators when detected.

Accelerators are probed at run time and imported only when present and asked for, so
``colony.codec`` needs nothing beyond its light dependencies; asking for one this
machine lacks raises :class:`colony.errors.EngineUnavailable` with the reason.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from dataclasses import dataclass
from typing import Callable

from colony.codec.engines import Engine, SoftwareEngine
from colony.errors import EngineUnavailable


@dataclass(frozen=True)
class _Probe:
    name: str
    detect: Callable[[], str | None]   # returns None when present, else why it is absent
    hint: str
    load: Callable[[], Engine] | None = None


def _doca_absent() -> str | None:
    import ctypes.util
    if ctypes.util.find_library("doca_compress") or os.path.exists("/opt/mellanox/doca/lib"):
        return ("DOCA libraries were found but Colony has no DOCA compress binding yet; "
                "use engine 'software'")
    return "no DOCA compress library (libdoca_compress) on this machine"


def _nvcomp_absent() -> str | None:
    if importlib.util.find_spec("nvidia") is None or importlib.util.find_spec("nvidia.nvcomp") is None:
        return "the nvidia-nvcomp Python package is not installed (pip install 'colony[gpu]')"
    try:
        from colony.codec.nvcomp import gpu_present
        return gpu_present()
    except Exception as e:  # any import or driver failure means: not usable here
        return f"nvCOMP present but not usable: {e}"


def _nvcomp_load() -> Engine:
    from colony.codec.nvcomp import NvcompEngine
    return NvcompEngine()


_ACCELERATORS = {
    "doca": _Probe("doca", _doca_absent, "runs on BlueField DPUs with DOCA installed"),
    "nvcomp": _Probe("nvcomp", _nvcomp_absent, "needs an NVIDIA GPU and pip install 'colony[gpu]'",
                     _nvcomp_load),
}
_ENGINES: dict[str, Engine] = {"software": SoftwareEngine()}
_LOCK = threading.Lock()


def register_engine(engine: Engine) -> None:
    """Make an engine selectable by name (used by accelerator plug-ins)."""
    _ENGINES[engine.name] = engine


def available_engines() -> dict[str, str]:
    """name -> 'available' or the reason it is not, for every known engine."""
    out = {name: "available" for name in _ENGINES}
    for name, probe in _ACCELERATORS.items():
        if name not in _ENGINES:
            why = probe.detect()
            out[name] = "available" if why is None and probe.load else \
                f"absent: {why or 'detected, but no binding registered'}"
    return out


def get_engine(name: str = "software") -> Engine:
    if name in _ENGINES:
        return _ENGINES[name]
    if name in _ACCELERATORS:
        probe = _ACCELERATORS[name]
        why = probe.detect()
        if why is None and probe.load is not None:
            with _LOCK:
                if name not in _ENGINES:
                    register_engine(probe.load())
            return _ENGINES[name]
        why = why or "detected, but no Colony binding is registered"
        raise EngineUnavailable(f"compression engine {name!r} is not available: {why} "
                                f"({probe.hint}); use engine 'software'")
    raise EngineUnavailable(f"unknown compression engine {name!r}; known: {sorted(set(_ENGINES) | set(_ACCELERATORS))}")
