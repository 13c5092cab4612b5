"""The client's side of the data plane: which transport carries an object.

Ray carries the control plane (service calls) and puts below ``runtime.bulk_bytes``
(4 KiB); a device's Arrow Flight endpoint carries the rest of the Arrow data (``DoPut``
for put/inject, ``DoGet`` for every get), because a Flight round trip was faster than a
Ray call at every size measured between nodes of this machine, 4 KiB..256 MiB
(``colony bench transfer``, docs/runtime.md). Whatever
the transport, the bytes are paced and counted once, by the device at the other end of
the link (:class:`colony.pacing.Link` in the device actor), so ``colony status`` and the
benchmarks see every byte.
"""

from __future__ import annotations

import threading
import uuid
from typing import Any

import pyarrow as pa
import pyarrow.flight as fl

from colony.errors import DeadlineExceeded, DeviceLost, ObjectTooLarge
from colony.runtime import auth
from colony.runtime.futures import resolve
from colony.runtime.flight import MESSAGE_BYTES, FlightClients, PartRef, blob_table, stash_large, table_blob
from colony.store import Entry


class Transfers:
    """Bulk transfers between this process and a colony's devices over their Flight endpoints."""

    def __init__(self, colony: Any, endpoint: str = "flight_location") -> None:
        self.colony = colony
        self.endpoint = endpoint          # the device actor's method naming the endpoint to use
        self.bulk_bytes = colony.config.runtime.bulk_bytes
        self.same_node_ray_bytes = colony.config.runtime.same_node_ray_bytes
        self.clients = FlightClients(auth.token())
        self._where: dict[str, str] = {}
        self._nodes: dict[str, str] = {}
        import ray
        self.node_id = ray.get_runtime_context().get_node_id()
        self._lock = threading.Lock()
        self.results = 0          # call results fetched over Flight
        self.args = 0             # call argument parts sent over Flight
        self.message_bytes = MESSAGE_BYTES   # Flight message size of DoPut streams (bench inject sweeps it)

    def bulk(self, nbytes: int, device: str | None = None) -> bool:
        """Whether a payload of ``nbytes`` for ``device`` goes over Flight (else over Ray):
        from ``bulk_bytes`` up, except large ones to a device on this process's own node,
        which Ray passes through shared memory (``same_node_ray_bytes``; bench transfer)."""
        if nbytes < self.bulk_bytes:
            return False
        return not (device is not None and nbytes >= self.same_node_ray_bytes and self.node(device) == self.node_id)

    def node(self, device: str) -> str:
        """The Ray node a device's actor runs on (cached; forgotten with its endpoint)."""
        n = self._nodes.get(device)
        if n is None:
            n = resolve(self.colony.actor(device).node_id.remote(), self.colony.config.runtime.call_timeout_s,
                        device)
            with self._lock:
                self._nodes[device] = n
        return n

    def location(self, device: str) -> str:
        loc = self._where.get(device)
        if loc is None:
            loc = resolve(getattr(self.colony.actor(device), self.endpoint).remote(),
                          self.colony.config.runtime.call_timeout_s, device)
            with self._lock:
                self._where[device] = loc
        return loc

    def forget(self, device: str) -> None:
        """Drop a cached endpoint (a restarted device serves on a new port)."""
        with self._lock:
            self._where.pop(device, None)
            self._nodes.pop(device, None)

    def _retrying(self, device: str, fn):
        """Run ``fn(location)``; an endpoint that refuses connections is looked up again once
        (Ray restarted the device: it serves on a new port), then the device counts as lost."""
        for attempt in (0, 1):
            try:
                return fn(self.location(device))
            except fl.FlightUnavailableError as e:
                self.forget(device)
                if attempt:
                    raise DeviceLost(f"device {device!r} does not answer on its Flight endpoint ({e}); it died or "
                                     f"is restarting: retry once Ray has restarted it (`colony status`)",
                                     device) from None

    def _put(self, device: str, cmd: dict, data, on_sent=None, timeout: float | None = None) -> dict:
        return self._retrying(device, lambda loc: self.clients.put(loc, cmd, data, on_sent, self.message_bytes,
                                                                   timeout))

    def put_arg(self, device: str, part, peer: str | None = None, timeout: float | None = None,
                service: str | None = None) -> str:
        """A large part of a call's arguments, put on ``device`` ahead of the call (DoPut,
        charged there on the link from ``peer``, default the client); returns the id the
        callee takes it by. Within ``timeout`` (default ``runtime.call_timeout_s``), else
        DeadlineExceeded naming the device. ``service``: the call's, whose ``calls_stream`` the
        device reads to charge the part (a message never rides on an earlier transfer's stream)."""
        pid = uuid.uuid4().hex
        kind = "table" if isinstance(part, pa.Table) else "buffer"
        nbytes = part.nbytes if kind == "table" else part.size
        cmd = {"op": "arg", "id": pid, "kind": kind, **({"from": peer} if peer else {}),
               **({"service": service} if service else {})}
        timeout = self.colony.config.runtime.call_timeout_s if timeout is None else timeout
        try:
            self._put(device, cmd, part if kind == "table" else blob_table(part, MESSAGE_BYTES), timeout=timeout)
        except fl.FlightTimedOutError:
            raise DeadlineExceeded(f"device {device!r} did not take a {nbytes:,}-byte call argument within "
                                   f"{timeout:g} s", device, timeout) from None
        with self._lock:
            self.args += 1
        return pid

    def ship_args(self, device: str, args: tuple, kwargs: dict, peer: str | None = None,
                  timeout: float | None = None, service: str | None = None) -> tuple[tuple, dict]:
        """A call's arguments with their large parts (from ``RESULT_FLIGHT_BYTES``, where
        :meth:`bulk` says Flight) put on ``device`` ahead of the call, each replaced by a
        :class:`PartRef`; the callee takes them back before the call runs."""
        return stash_large((args, kwargs), lambda part: self.put_arg(device, part, peer, timeout, service), device,
                           lambda n: self.bulk(n, device))

    def put_object(self, device: str, pool: str, key: str, buf: pa.Buffer) -> Entry:
        ack = self._put(device, {"op": "put", "pool": pool, "key": key}, blob_table(buf, MESSAGE_BYTES))
        return _entry(ack)

    def ingest(self, device: str, pool: str, key: str, table: pa.Table, codec: str = "none",
               on_sent=None) -> tuple[Entry, float]:
        """Send Arrow batches; the device packs them (``codec``) and stores the object.
        ``on_sent`` runs once every byte has left this process (the caller may reuse its buffers)."""
        ack = self._put(device, {"op": "ingest", "pool": pool, "key": key, "codec": codec}, table, on_sent)
        return _entry(ack), ack.get("pack_s", 0.0)

    def echo(self, device: str, table: pa.Table) -> dict:
        return self._put(device, {"op": "echo"}, table)

    def get_object(self, device: str, pool: str, key: str, peer: str | None = None) -> pa.Buffer:
        """A stored object over DoGet, charged on the device's link to ``peer`` (default: the client)."""
        cmd = {"op": "get", "pool": pool, "key": key, **({"from": peer} if peer else {})}
        return table_blob(self._retrying(device, lambda loc: self.clients.get(loc, cmd)))

    def result(self, ref: PartRef):
        """A large part of a call's result, left on its device (DoGet; the call charged it)."""
        cmd = {"op": "result", "id": ref.id}
        table = self._retrying(ref.device, lambda loc: self.clients.get(loc, cmd))
        with self._lock:
            self.results += 1
        return table_blob(table) if ref.kind == "buffer" else table

    def blob(self, device: str, nbytes: int) -> pa.Buffer:
        cmd = {"op": "blob", "nbytes": int(nbytes)}
        return table_blob(self._retrying(device, lambda loc: self.clients.get(loc, cmd)))

    def close(self) -> None:
        self.clients.close()


def _entry(ack: dict) -> Entry:
    if ack.get("error") == "ObjectTooLarge":
        e = ObjectTooLarge(ack["message"])
        e.size, e.capacity = ack["size"], ack["capacity"]
        raise e
    return Entry(*ack["entry"])
