"""Arrow Flight: the bulk data path between the client and the device actors.

Every device actor serves one Flight endpoint (``DeviceFlight``) beside its Ray actor:
Ray stays the control plane (placement, lifecycle, restarts, small calls) and Flight
carries bulk Arrow data, because Ray's inter-node object transfer on this machine is
slower than a Flight stream for large batches (``colony bench transfer``; numbers in
docs/runtime.md). ``DoPut`` takes inject/put data, ``DoGet`` returns objects and blobs.

Flight endpoints require the same bearer token as Ray (``runtime.auth = "token"``):
the client sends ``authorization: Bearer <token>``; a call without it is refused
before any byte is read. The commands are JSON in the descriptor / ticket.
"""

from __future__ import annotations

import json
import re
import threading
from typing import Any, Callable

import numpy as np
import pyarrow as pa
import pyarrow.flight as fl

from colony.errors import ColonyError, RuntimeFailure

AUTH_HEADER = "authorization"


class _TokenCheck(fl.ServerMiddlewareFactory):
    def __init__(self, token: str) -> None:
        super().__init__()
        self._expected = f"Bearer {token}"

    def start_call(self, info, headers):
        got = headers.get(AUTH_HEADER) or headers.get(AUTH_HEADER.title()) or []
        if self._expected not in got:
            raise fl.FlightUnauthenticatedError(
                "colony flight endpoint: missing or wrong bearer token; use the colony's Ray token "
                "(RAY_AUTH_TOKEN or ~/.ray/auth_token)")
        return None


def blob_table(buf: pa.Buffer, chunk: int | None = None) -> pa.Table:
    """Bytes (a packed object) as a large_binary table, zero-copy: one row, or one record
    batch of one row per ``chunk`` bytes (so a big put streams as several Flight messages)."""
    step = buf.size if not chunk or buf.size <= chunk else chunk
    batches = []
    for off in range(0, max(buf.size, 1), max(step, 1)):
        n = min(step, buf.size - off)
        offsets = pa.py_buffer(pa.array([0, n], pa.int64()).buffers()[1])
        arr = pa.Array.from_buffers(pa.large_binary(), 1, [None, offsets, buf.slice(off, n)])
        batches.append(pa.record_batch([arr], names=["object"]))
    return pa.Table.from_batches(batches)


def table_blob(table: pa.Table, own: bool = False) -> pa.Buffer:
    """The bytes of a :func:`blob_table`: a zero-copy view when it is one row (copied into
    fresh memory when ``own``), else the rows concatenated into fresh memory."""
    col = table.column(0)
    views = []
    for ch in col.chunks:
        _validity, offsets, data = ch.buffers()
        off = memoryview(offsets).cast("q")
        for i in range(len(ch)):
            views.append(data.slice(off[ch.offset + i], off[ch.offset + i + 1] - off[ch.offset + i]))
    if len(views) == 1 and not own:
        return views[0]
    out = pa.allocate_buffer(sum(v.size for v in views))
    dst = np.frombuffer(out, dtype=np.uint8)
    pos = 0
    for v in views:
        dst[pos:pos + v.size] = np.frombuffer(v, dtype=np.uint8)
        pos += v.size
    return out


class DeviceFlight(fl.FlightServerBase):
    """The Flight endpoint of one device. ``handler`` is the device actor: its
    ``flight_put(cmd, reader) -> dict`` and ``flight_get(cmd) -> (schema, batches)``."""

    def __init__(self, handler: Any, host: str, token: str | None) -> None:
        mw = {"auth": _TokenCheck(token)} if token else {}
        super().__init__(f"grpc://{host}:0", middleware=mw)
        self.handler = handler
        self.location = f"grpc://{host}:{self.port}"
        self._thread = threading.Thread(target=self.serve, name="colony-flight", daemon=True)
        self._thread.start()

    def do_put(self, context, descriptor, reader, writer):
        ack = _guard(lambda: self.handler.flight_put(json.loads(descriptor.command), reader))
        writer.write(pa.py_buffer(json.dumps(ack).encode()))

    def do_get(self, context, ticket):
        schema, batches = _guard(lambda: self.handler.flight_get(json.loads(ticket.ticket)))
        return fl.GeneratorStream(schema, batches)

    @classmethod
    def on_cores(cls, cores: tuple[int, ...], *args: Any) -> "DeviceFlight":
        """An endpoint whose server threads run on ``cores``: it is built (gRPC starts its
        threads) and served from a thread pinned there, and threads inherit affinity."""
        import os
        box: dict = {}

        def build() -> None:
            try:
                os.sched_setaffinity(0, cores)      # this thread only
                box["server"] = cls(*args)
            except BaseException as e:  # noqa: BLE001 - re-raised in the caller's thread
                box["error"] = e
        t = threading.Thread(target=build, name="colony-flight-build", daemon=True)
        t.start()
        t.join()
        if "error" in box:
            raise box["error"]
        return box["server"]


class StoredReads:
    """The handler of a device's read endpoint: DoGet of stored objects only (``op: get``)."""

    def __init__(self, device: Any) -> None:
        self.device = device

    def flight_get(self, cmd: dict):
        if cmd.get("op") != "get":
            raise ColonyError(f"this endpoint only serves stored objects (op get), not {cmd.get('op')!r}")
        return self.device.flight_get(cmd)

    def flight_put(self, cmd: dict, reader) -> dict:
        raise ColonyError("this endpoint only serves reads of stored objects; put to the device's Flight endpoint")


def _guard(fn: Callable):
    """Colony errors cross Flight as a server error whose message carries the type name."""
    try:
        return fn()
    except ColonyError as e:
        raise fl.FlightServerError(f"{type(e).__name__}: {e}") from e


class FlightClients:
    """Flight clients of one colony's devices (one connection per device, reused)."""

    def __init__(self, token: str | None) -> None:
        self._clients: dict[str, fl.FlightClient] = {}
        self._lock = threading.Lock()
        self._headers = [(AUTH_HEADER.encode(), f"Bearer {token}".encode())] if token else []
        self.options = fl.FlightCallOptions(headers=self._headers)

    def client(self, location: str) -> fl.FlightClient:
        with self._lock:
            c = self._clients.get(location)
            if c is None:
                c = self._clients[location] = fl.FlightClient(location)
            return c

    def put(self, location: str, cmd: dict, data: pa.Table | list[pa.RecordBatch],
            on_sent: Callable[[], None] | None = None, message_bytes: int | None = None,
            timeout: float | None = None) -> dict:
        """DoPut ``data`` with ``cmd`` in messages of about ``message_bytes``; returns the
        device's JSON acknowledgement. ``timeout``: seconds for the whole exchange (gRPC's
        deadline; ``fl.FlightTimedOutError`` beyond it)."""
        batches = [c for b in (data.to_batches() if isinstance(data, pa.Table) else data)
                   for c in _chunks(b, message_bytes)]
        if not batches:
            raise ColonyError("nothing to send: the table has no record batches")
        desc = fl.FlightDescriptor.for_command(json.dumps(cmd).encode())
        options = self.options if timeout is None else fl.FlightCallOptions(headers=self._headers,
                                                                             timeout=float(timeout))
        try:
            writer, meta = self.client(location).do_put(desc, batches[0].schema, options=options)
            for b in batches:
                writer.write_batch(b)
            writer.done_writing()
            if on_sent is not None:
                on_sent()
            ack = meta.read()
            writer.close()
        except (fl.FlightUnavailableError, fl.FlightTimedOutError):
            raise                    # the caller looks the endpoint up again, or names the device
        except fl.FlightError as e:
            raise _unwrap(e, location) from None
        return json.loads(ack.to_pybytes()) if ack is not None else {}

    def get(self, location: str, cmd: dict) -> pa.Table:
        ticket = fl.Ticket(json.dumps(cmd).encode())
        try:
            return self.client(location).do_get(ticket, options=self.options).read_all()
        except fl.FlightUnavailableError:
            raise
        except fl.FlightError as e:
            raise _unwrap(e, location) from None

    def close(self) -> None:
        with self._lock:
            for c in self._clients.values():
                c.close()
            self._clients.clear()


# Parts of service calls from this size up travel over the Flight endpoint of the device at
# the other end: a result's parts go to the caller by DoGet, an argument's parts to the callee
# by DoPut before the call (where :meth:`Transfers.bulk` says Flight wins for that size and
# pair of nodes); smaller ones inside Ray's request or reply. Ray inlines a value below
# 100 KiB; above that the other side pulls it from the object store, where a 256 KiB get took
# 6.5 ms over Ray against 1 ms over Flight between nodes, and Flight stayed ahead up to
# 256 MiB (bench/results/transfer.json: Ray get 0.04 / Flight get 0.26 GB/s at 256 KiB).
RESULT_FLIGHT_BYTES = 256 << 10


class PartRef:
    """A large part of a service call's arguments or result, held on ``device`` under ``id``:
    a result part waits there for the caller's DoGet (``{"op": "result", "id": ...}``), an
    argument part arrived there by the caller's DoPut (``{"op": "arg", "id": ...}``) and the
    callee takes it before the call runs. Charged on the link once, as it crossed."""

    __slots__ = ("device", "id", "nbytes", "kind")

    def __init__(self, device: str, id: str, nbytes: int, kind: str) -> None:
        self.device, self.id, self.nbytes, self.kind = device, id, nbytes, kind

    def __reduce__(self):
        return (PartRef, (self.device, self.id, self.nbytes, self.kind))


def stash_large(obj: Any, stash: Callable[[Any], str], device: str,
                want: Callable[[int], bool] | None = None) -> Any:
    """``obj`` with every Arrow buffer or table of at least RESULT_FLIGHT_BYTES (and for which
    ``want(nbytes)``, when given) replaced by a :class:`PartRef` (``stash`` keeps it on
    ``device`` and names it); dicts, lists and tuples are walked, anything else is left as it is."""
    if isinstance(obj, pa.Buffer) and obj.size >= RESULT_FLIGHT_BYTES and (want is None or want(obj.size)):
        return PartRef(device, stash(obj), obj.size, "buffer")
    if isinstance(obj, pa.Table) and obj.nbytes >= RESULT_FLIGHT_BYTES and (want is None or want(obj.nbytes)):
        return PartRef(device, stash(obj), obj.nbytes, "table")
    if isinstance(obj, dict):
        return {k: stash_large(v, stash, device, want) for k, v in obj.items()}
    if isinstance(obj, list):
        return [stash_large(v, stash, device, want) for v in obj]
    if isinstance(obj, tuple) and type(obj) is tuple:
        return tuple(stash_large(v, stash, device, want) for v in obj)
    return obj


def large_bytes(obj: Any) -> int:
    """Bytes of the parts of ``obj`` that :func:`stash_large` would leave on the device."""
    seen = []
    stash_large(obj, lambda part: seen.append(part.size if isinstance(part, pa.Buffer) else part.nbytes) or "", "")
    return sum(seen)


def fetch_large(obj: Any, fetch: Callable[[PartRef], Any]) -> Any:
    """The inverse of :func:`stash_large` at the other end: every PartRef fetched."""
    if isinstance(obj, PartRef):
        return fetch(obj)
    if isinstance(obj, dict):
        return {k: fetch_large(v, fetch) for k, v in obj.items()}
    if isinstance(obj, list):
        return [fetch_large(v, fetch) for v in obj]
    if isinstance(obj, tuple) and type(obj) is tuple:
        return tuple(fetch_large(v, fetch) for v in obj)
    return obj


MESSAGE_BYTES = 4 << 20   # Flight messages of at most ~4 MiB: one huge gRPC message is slow (bench transfer)


def _chunks(batch: pa.RecordBatch, message_bytes: int | None = None):
    """Zero-copy slices of ``batch`` of about ``message_bytes`` (MESSAGE_BYTES) each."""
    limit = message_bytes or MESSAGE_BYTES
    if batch.nbytes <= limit or batch.num_rows < 2:
        yield batch
        return
    rows = max(1, batch.num_rows * limit // batch.nbytes)
    for off in range(0, batch.num_rows, rows):
        yield batch.slice(off, rows)


_NAMED = re.compile(r"\b([A-Z][A-Za-z]+): (.*?)(?:\. Detail:|\. gRPC client debug context:|$)", re.S)


def _unwrap(e: Exception, location: str) -> Exception:
    """Re-raise a device's Colony error (its type name leads the Flight message) as itself."""
    import colony.errors as errors
    msg = str(e)
    for m in _NAMED.finditer(msg):
        cls = getattr(errors, m.group(1), None)
        if isinstance(cls, type) and issubclass(cls, ColonyError):
            try:
                return cls(m.group(2).strip())
            except TypeError:   # an error class with required extra arguments
                break
    if isinstance(e, fl.FlightUnauthenticatedError):
        return RuntimeFailure(f"the Flight endpoint {location} refused this client's token: {msg}")
    return RuntimeFailure(f"Flight transfer to {location} failed: {msg}; check `colony status`")
