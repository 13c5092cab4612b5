"""Shared-memory files of a query worker pool whose owner died (a SIGKILLed device) are
swept by the next pool; files of live owners and foreign files are left alone."""

from __future__ import annotations

import os
import subprocess
import sys

from colony.query import worker


def test_files_of_dead_owners_are_swept_and_live_ones_kept(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    dead_pid = int(dead.stdout)
    files = {
        "dead_query": tmp_path / f"colony-query-{dead_pid}-abc-x.objs",
        "dead_result": tmp_path / f"colony-result-{dead_pid}-abc.clny",
        "live": tmp_path / f"colony-query-{os.getpid()}-abc-x.objs",
        "foreign": tmp_path / "someone-else.objs",
    }
    for f in files.values():
        f.write_bytes(b"x" * 16)
    assert worker.sweep_dead_owners(str(tmp_path)) == 2
    assert not files["dead_query"].exists() and not files["dead_result"].exists()
    assert files["live"].exists() and files["foreign"].exists()


def test_a_pool_names_its_files_with_its_pid():
    pool = worker.WorkerPool(keep=1, prestart=False)
    files, temporary, _ = pool._objects_files({"t": [b"x" * 16]}, cache=False)
    [path] = temporary
    assert files["t"][0] == path and files["t"][2] is False
    try:
        assert os.path.basename(path).startswith(f"colony-query-{os.getpid()}-")
    finally:
        os.unlink(path)
