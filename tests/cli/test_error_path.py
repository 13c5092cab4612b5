"""One CLI error path, through the real `colony` entry point in a subprocess (issue 14):
usage and input errors print at most two lines saying what to do and exit 2; an internal
error prints one line plus where its traceback was logged."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

COLONY = Path(sys.executable).with_name("colony")


def _run(args, tmp_path, *, entry=None):
    env = {**os.environ, "COLONY_LOG_DIR": str(tmp_path / "logs"), "HOME": str(tmp_path), "COLUMNS": "80"}
    cmd = entry or [str(COLONY), *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)


@pytest.mark.parametrize("args, says", [
    (["sift", "run", "--path", "x"], "No such option: --path"),
    (["codec", "inspect", "missing.clny"], "file 'missing.clny' does not exist"),
    (["codec", "advise", "--link-gbps", "abc"], "'--link-gbps': Input should be a valid number"),
    (["query", "--placement", "bogus", "select 1"], "placement must be auto, down, back or split"),
    (["nosuch"], "No such command 'nosuch'"),
])
def test_usage_errors_are_two_lines_and_exit_2(tmp_path, args, says):
    r = _run(args, tmp_path)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2, r.stderr
    assert 1 <= len(lines) <= 2 and r.stdout == "", r.stderr
    assert lines[0].startswith("error: ") and says in lines[0]
    assert "Traceback" not in r.stderr and "╭" not in r.stderr
    assert lines[-1].startswith("try: colony")


def test_colony_error_is_one_line_exit_2(tmp_path):
    (tmp_path / "bad.clny").write_bytes(b"CLNYOBJ\0" + bytes(10))
    r = _run(["codec", "inspect", "bad.clny"], tmp_path)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    assert r.stderr.startswith("error: ") and "Traceback" not in r.stderr


def test_internal_error_is_one_line_and_a_log(tmp_path):
    crash = ("import sys, colony.cli as c\n"
             "@c.app.command('crash')\n"
             "def crash():\n"
             "    {}['missing']\n"
             "c.main(['crash'])\n")
    r = _run([], tmp_path, entry=[sys.executable, "-c", crash])
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 1 and len(lines) == 2, r.stderr
    assert lines[0] == "error: internal error KeyError: 'missing'"
    log = Path(lines[1].split("traceback in ")[1].split(";")[0])
    assert log.parent == tmp_path / "logs" and "Traceback" in log.read_text() and "KeyError" in log.read_text()


def test_an_address_where_no_cluster_listens_fails_in_seconds(tmp_path):
    """A stale or mistyped cluster address: Ray's client retried it for over two minutes,
    logging a warning every few seconds; the CLI says so at once, in one line."""
    import socket
    import time
    with socket.socket() as s:                  # a port nothing listens on once closed
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    t0 = time.monotonic()
    r = _run(["status", "--address", f"127.0.0.1:{port}"], tmp_path)
    assert time.monotonic() - t0 < 30
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert r.stderr.startswith(f"error: no Ray cluster answers at '127.0.0.1:{port}'") and "colony up" in r.stderr
