"""`colony up` keeps a local colony alive in this small background driver process.

A Ray cluster started by ``ray.init`` lives as long as the driver that started it, so
``colony up`` (which must return) starts this process; ``colony down`` stops it with
SIGTERM, which kills the device actors and shuts Ray down. Only this process's own
Ray is touched (never ``ray stop``, which would stop every Ray on the machine).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import threading
from pathlib import Path


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m colony.runtime.daemon")
    ap.add_argument("--config", default=None)
    ap.add_argument("--state", required=True)
    ap.add_argument("--temp-dir", default=None)
    ap.add_argument("--object-store-memory", type=int, default=None)
    ap.add_argument("--num-cpus", type=int, default=None)
    a = ap.parse_args(argv)
    import ray

    from colony.runtime.client import Colony
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    colony = Colony(a.config, temp_dir=a.temp_dir, detached=True, object_store_memory=a.object_store_memory,
                    num_cpus=a.num_cpus)
    try:
        state = {"address": ray.get_runtime_context().gcs_address, "pid": os.getpid(), "config": a.config,
                 "name": colony.config.name, "namespace": colony.config.namespace, "temp_dir": a.temp_dir,
                 "auth": colony.auth_mode, "mode": "local"}
        tmp = Path(a.state + ".tmp")
        tmp.write_text(json.dumps(state))
        os.replace(tmp, a.state)
        while not stop.wait(1.0):
            pass
    finally:
        colony.shutdown(kill_devices=True)
        Path(a.state).unlink(missing_ok=True)


if __name__ == "__main__":
    main()
