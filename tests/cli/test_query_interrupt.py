"""Ctrl-C during `colony query` cancels the query on the device (issue 16), through the real
entry point: the worker process running the join is gone and `colony` exits 130 at once,
long before the join (~13 s on one thread) would have finished."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil

COLONY = shutil.which("colony", path=str(Path(sys.executable).parent)) or "colony"
SLOW = "select count(*) as n from particles a, particles b where a.x < b.x"


def test_ctrl_c_cancels_the_running_query():
    env = {**os.environ, "COLUMNS": "200"}
    warm = subprocess.run([COLONY, "query", "--local", "--rows", "40000", "select count(*) from particles"],
                          capture_output=True, text=True, env=env, timeout=900)   # calibrates here if it must
    assert warm.returncode == 0, warm.stderr[-2000:]
    p = subprocess.Popen([COLONY, "query", "--local", "--rows", "40000", SLOW], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env)
    busy = None
    try:
        stop = time.monotonic() + 120
        while busy is None and time.monotonic() < stop and p.poll() is None:
            for c in psutil.Process(p.pid).children():
                try:                                 # the worker running the join: CPU-bound for seconds
                    if "colony.query.worker" in " ".join(c.cmdline()):
                        u0 = c.cpu_times().user
                        time.sleep(1.0)
                        if c.cpu_times().user - u0 > 0.5:
                            busy = c
                            break
                except psutil.NoSuchProcess:
                    pass
            time.sleep(0.1)
        assert busy is not None, p.communicate()[1][-2000:]
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
    assert "calibrating" not in err, "models were not cached by the warm-up run"
    assert p.returncode == 130, err[-2000:]
    assert "cancelled: query cli-" in err and "799" not in out          # no result: it did not finish
    assert not psutil.pid_exists(busy.pid)
