"""Services placed at run time survive a device's restart.

``colony.place`` (e.g. `colony load` placing the query service on a colony `colony up`
started) adds a service to a running device actor; when Ray restarts that actor it is
built again from its configuration, which does not name the service. Each run-time
placement is therefore recorded (service name and options, JSON) in the device's own
directory, which is stable across restarts of one colony, and a restarted device places
them again; a device starting fresh forgets the record, like its spilled objects.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

log = logging.getLogger(__name__)
FILE = "placements.json"


def _path(workdir: str | os.PathLike) -> Path:
    return Path(workdir) / FILE


def load(workdir: str | os.PathLike) -> dict[str, dict]:
    """service -> options, as recorded (empty when none or unreadable)."""
    try:
        with open(_path(workdir)) as f:
            out = json.load(f)
        return out if isinstance(out, dict) else {}
    except (OSError, ValueError):
        return {}


def record(workdir: str | os.PathLike, service: str, options: dict) -> bool:
    """Add (or replace) a placement; False when its options are not JSON (then a restart
    loses it, as before)."""
    rec = load(workdir)
    try:
        rec[service] = json.loads(json.dumps(options or {}))
    except (TypeError, ValueError):
        log.warning("service %r placed with options that are not JSON: a restart will not place it again", service)
        return False
    path = _path(workdir)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w") as f:
        json.dump(rec, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)                 # a crash mid-write leaves the old record whole
    return True


def forget(workdir: str | os.PathLike) -> None:
    try:
        _path(workdir).unlink()
    except FileNotFoundError:
        pass
