"""The fingerprint a device's calibrations are valid for.

Computed by the runtime from what shapes a device's timings (the machine's CPU model and
core count, role, profile, thread budget,
CPU pinning, link model, software versions, stored-object layout, the runtime itself:
calibration times the call path, which differs between Ray actors and in-process devices, and
a Ray device's process settings, :mod:`colony.runtime.process`) and handed to services as
an opaque string: cost models are kept with it and invalidated when it changes, and never
read what is inside.
"""

from __future__ import annotations

import hashlib
import json
import platform
from importlib import metadata


def _version(pkg: str) -> str:
    try:
        return metadata.version(pkg)
    except metadata.PackageNotFoundError:
        return "-"


def describe(spec, runtime: str = "ray") -> dict:
    from colony import __version__
    from colony.codec.container import VERSION
    from colony.cost.calibrate import LTEMPLATES, MEASURE_REVISION, TEMPLATES
    from colony.query.estimate import OPS, OPS_REVISION
    from colony.machine import identity
    from colony.runtime import process
    return {"machine": identity(), "runtime": runtime, "process": process.settings() if runtime == "ray" else None, "role": spec.role, "profile": spec.profile, "emulated": spec.emulated, "threads": spec.threads,
            "pin": spec.pin, "cores": list(spec.cores) if spec.cores else None, "link_gbps": spec.link_gbps,
            "software": {"colony": __version__, "python": platform.python_version(),
                         **{p: _version(p) for p in ("datafusion", "pyarrow", "numpy", "scikit-learn",
                                                       "datasketches")}},
            "layout": {"object_format": VERSION, "batch_rows": 65_536},
            # the suite a record's models were fitted on, how its runs were timed and the op
            # vector they read: a changed template, measurement, feature or count makes it stale
            "calibration": hashlib.sha256(json.dumps({**TEMPLATES, **LTEMPLATES}, sort_keys=True).encode())
            .hexdigest()[:16], "measure": MEASURE_REVISION, "ops": {"features": list(OPS), "revision": OPS_REVISION}}


def fingerprint(spec, runtime: str = "ray") -> str:
    return hashlib.sha256(json.dumps(describe(spec, runtime), sort_keys=True).encode()).hexdigest()[:16]
