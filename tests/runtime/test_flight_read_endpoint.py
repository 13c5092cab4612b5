"""The emulated DMA read endpoint: a Flight server whose threads run on the cores it is given
(not the device's), serving DoGet of stored objects and nothing else."""

import json
import os
import threading

import pyarrow as pa
import pyarrow.flight as fl
import pytest

from colony.errors import ColonyError
from colony.runtime.flight import DeviceFlight, StoredReads, blob_table, table_blob


class _Device:
    def __init__(self):
        self.asked = []

    def flight_get(self, cmd):
        self.asked.append(cmd)
        t = blob_table(pa.py_buffer(b"x" * 1000))
        return t.schema, iter(t.to_batches())


def _tids() -> set[int]:
    return {int(t) for t in os.listdir("/proc/self/task")}


def _affinity(tid: int) -> set[int] | None:
    """A thread's cores; None for one that exited since it was listed (CI once saw a
    short-lived thread end between the listing and the query)."""
    try:
        return os.sched_getaffinity(tid)
    except ProcessLookupError:
        return None


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs sched_setaffinity")
def test_read_endpoint_threads_run_on_its_cores_and_serve_only_gets():
    core = max(os.sched_getaffinity(0))
    before = _tids()
    dev = _Device()
    srv = DeviceFlight.on_cores((core,), StoredReads(dev), "127.0.0.1", None)
    try:
        new = _tids() - before
        assert new                                      # gRPC's server threads
        assert all(_affinity(t) in (None, {core}) for t in new)
        assert os.sched_getaffinity(0) == os.sched_getaffinity(threading.get_native_id())   # caller untouched
        client = fl.FlightClient(srv.location)
        got = client.do_get(fl.Ticket(json.dumps({"op": "get", "pool": "p", "key": "k"}).encode())).read_all()
        assert table_blob(got).to_pybytes() == b"x" * 1000 and dev.asked[0]["key"] == "k"
        with pytest.raises(fl.FlightError, match="only serves stored objects"):
            client.do_get(fl.Ticket(json.dumps({"op": "blob", "nbytes": 10}).encode())).read_all()
        client.close()
    finally:
        srv.shutdown()


def test_stored_reads_refuses_puts():
    with pytest.raises(ColonyError, match="only serves reads"):
        StoredReads(_Device()).flight_put({"op": "put"}, None)
