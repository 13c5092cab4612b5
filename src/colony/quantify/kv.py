"""RocksDB key-value daemon (one per storage-device path) and its TCP protocol.

Protocol (all integers big-endian), one request then one response per frame, any
number of frames per connection; one connection per client thread:

    request  = op:u8  key_len:u16  val_len:u32  key  value
    response = status:u8  len:u32  payload

    op      1 GET     -> payload = value            (status 1 NOT_FOUND if absent)
            2 PUT     value = the value             -> empty payload
            3 DELETE                                 -> empty payload
            4 SCAN    value = count:u32              -> payload = repeated (klen:u16 vlen:u32 key value)
            5 PING                                   -> payload = b"pong"
            6 STATS                                  -> payload = JSON (RocksDB properties, options used)
            7 FLUSH   flush memtables to SST files   -> empty payload
    status  0 OK, 1 NOT_FOUND, 2 ERROR (payload = UTF-8 message)

The seeds exposed RocksDB through Java RMI; a length-prefixed binary frame keeps the
per-operation overhead small and is easy to implement on an embedded platform.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import socketserver
import struct
import threading
from pathlib import Path

from colony.errors import ProtocolError, QuantifyError

REQ = struct.Struct("!BHI")
RESP = struct.Struct("!BI")
ENTRY = struct.Struct("!HI")
GET, PUT, DELETE, SCAN, PING, STATS, FLUSH = 1, 2, 3, 4, 5, 6, 7
OK, NOT_FOUND, ERROR = 0, 1, 2
MAX_VALUE = 64 << 20

#: The one options set used on every platform (the seeds insisted on a consistent
#: options file instead of RocksDB's platform-tuned defaults).
ROCKS_OPTIONS = {
    "write_buffer_size": 16 << 20,
    "max_write_buffer_number": 2,
    "target_file_size_base": 16 << 20,
    "max_background_jobs": 2,
    "compression": "none",
}


def rocks_options(minimize_caching: bool):
    """rocksdict Options; with `minimize_caching`: direct reads, direct flush/compaction I/O, no block cache."""
    import rocksdict as r
    o = r.Options(raw_mode=True)
    o.create_if_missing(True)
    o.set_write_buffer_size(ROCKS_OPTIONS["write_buffer_size"])
    o.set_max_write_buffer_number(ROCKS_OPTIONS["max_write_buffer_number"])
    o.set_target_file_size_base(ROCKS_OPTIONS["target_file_size_base"])
    o.set_max_background_jobs(ROCKS_OPTIONS["max_background_jobs"])
    o.set_compression_type(r.DBCompressionType.none())
    if minimize_caching:
        o.set_use_direct_reads(True)
        o.set_use_direct_io_for_flush_and_compaction(True)
        b = r.BlockBasedOptions()
        b.disable_cache()
        o.set_block_based_table_factory(b)
    return o


def caching_report(minimize_caching: bool) -> dict:
    """What the daemon disables and what stays on (reported with every MBWU)."""
    if not minimize_caching:
        return {"mode": "normal", "disabled": [], "left_on": ["RocksDB block cache (8 MiB default)", "OS page cache",
                                                              "memtables", "device cache"]}
    return {
        "mode": "minimized",
        "disabled": ["RocksDB block cache (BlockBasedOptions.disable_cache)",
                     "OS page cache for SST reads (use_direct_reads)",
                     "OS page cache for flush/compaction writes (use_direct_io_for_flush_and_compaction)"],
        "left_on": [f"memtables ({ROCKS_OPTIONS['write_buffer_size'] >> 20} MiB x "
                    f"{ROCKS_OPTIONS['max_write_buffer_number']}): recent writes are read from memory",
                    "index and filter blocks held by open table readers (table cache)",
                    "write-ahead log writes go through the OS page cache (RocksDB has no direct WAL option)",
                    "the storage device's own DRAM/SLC cache (not controllable from the host)"],
    }


def open_db(path: str | Path, minimize_caching: bool, fresh: bool = False):
    import rocksdict as r
    p = Path(path)
    if fresh and p.exists():
        shutil.rmtree(p)
    p.parent.mkdir(parents=True, exist_ok=True)
    try:
        return r.Rdict(str(p), options=rocks_options(minimize_caching))
    except Exception as e:  # rocksdict raises plain Exception
        msg = str(e)
        hint = (" (direct I/O is not supported by this filesystem, e.g. tmpfs; use a path on a block device "
                "or pass --no-minimize-caching)") if "Invalid argument" in msg or "direct" in msg.lower() else ""
        raise QuantifyError(f"cannot open RocksDB at {p}: {msg}{hint}") from e


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ProtocolError(f"connection closed after {len(buf)} of {n} bytes")
        buf += chunk
    return bytes(buf)


def encode_request(op: int, key: bytes = b"", value: bytes = b"") -> bytes:
    if len(key) > 0xFFFF or len(value) > MAX_VALUE:
        raise ProtocolError(f"key ({len(key)} B) or value ({len(value)} B) too large for a frame")
    return REQ.pack(op, len(key), len(value)) + key + value


def handle(db, op: int, key: bytes, value: bytes, minimize_caching: bool) -> tuple[int, bytes]:
    """Execute one request against an open Rdict; return (status, payload)."""
    if op == GET:
        v = db.get(key)
        return (NOT_FOUND, b"") if v is None else (OK, v)
    if op == PUT:
        db.put(key, value)
        return OK, b""
    if op == DELETE:
        db.delete(key)
        return OK, b""
    if op == SCAN:
        if len(value) != 4:
            return ERROR, b"SCAN needs a 4-byte count"
        (count,) = struct.unpack("!I", value)
        it = db.iter()
        it.seek(key)
        out = bytearray()
        while it.valid() and count > 0:
            k, v = it.key(), it.value()
            out += ENTRY.pack(len(k), len(v)) + k + v
            count -= 1
            it.next()
        return OK, bytes(out)
    if op == PING:
        return OK, b"pong"
    if op == STATS:
        props = {}
        for name in ("rocksdb.estimate-num-keys", "rocksdb.total-sst-files-size", "rocksdb.num-files-at-level0",
                     "rocksdb.num-files-at-level1", "rocksdb.num-files-at-level2", "rocksdb.cur-size-all-mem-tables"):
            try:
                props[name] = db.property_int_value(name)
            except Exception:
                props[name] = None
        return OK, json.dumps({"properties": props, "options": ROCKS_OPTIONS,
                               "caching": caching_report(minimize_caching)}).encode()
    if op == FLUSH:
        db.flush()
        return OK, b""
    return ERROR, f"unknown op {op}".encode()


class _Handler(socketserver.BaseRequestHandler):
    def handle(self):
        sock = self.request
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        srv = self.server
        while True:
            try:
                hdr = sock.recv(REQ.size, socket.MSG_WAITALL)
                if len(hdr) < REQ.size:
                    return
                op, kl, vl = REQ.unpack(hdr)
                if vl > MAX_VALUE:
                    sock.sendall(RESP.pack(ERROR, 14) + b"value too big")
                    return
                body = _recv_exact(sock, kl + vl) if kl + vl else b""
                try:
                    status, payload = handle(srv.db, op, body[:kl], body[kl:], srv.minimize_caching)
                except Exception as e:  # report, keep serving
                    status, payload = ERROR, str(e).encode()[:4096]
                sock.sendall(RESP.pack(status, len(payload)) + payload)
            except (ConnectionError, ProtocolError, OSError):
                return


class KVServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, db, addr=("127.0.0.1", 0), minimize_caching: bool = True):
        self.db = db
        self.minimize_caching = minimize_caching
        super().__init__(addr, _Handler)


def serve(path: str, host: str = "127.0.0.1", port: int = 0, minimize_caching: bool = True, fresh: bool = True,
          ready=None, stop_event=None) -> None:
    """Run a daemon until `stop_event` is set (or forever); `ready(port)` is called once listening."""
    db = open_db(path, minimize_caching, fresh=fresh)
    srv = KVServer(db, (host, port), minimize_caching)
    t = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    t.start()
    if ready is not None:
        ready(srv.server_address[1])
    try:
        if stop_event is None:
            t.join()
        else:
            stop_event.wait()
    finally:
        srv.shutdown()
        srv.server_close()
        db.close()


def daemon_main(path: str, minimize_caching: bool, conn, stop_event) -> None:
    """multiprocessing target: serve on loopback and send the port back through `conn`."""
    try:
        serve(path, "127.0.0.1", 0, minimize_caching, True, ready=lambda p: conn.send(("port", p, os.getpid())),
              stop_event=stop_event)
    except Exception as e:
        conn.send(("error", str(e), os.getpid()))


class TcpClient:
    """One connection to a daemon; not thread-safe (one per generator thread, as in YCSB)."""

    def __init__(self, host: str, port: int, timeout: float = 30.0):
        try:
            self.sock = socket.create_connection((host, port), timeout=timeout)
        except OSError as e:
            raise QuantifyError(f"cannot reach the key-value daemon at {host}:{port}: {e}; "
                                "is `colony mbwu serve` running there?") from e
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def _call(self, op: int, key: bytes = b"", value: bytes = b"") -> tuple[int, bytes]:
        self.sock.sendall(encode_request(op, key, value))
        status, n = RESP.unpack(_recv_exact(self.sock, RESP.size))
        payload = _recv_exact(self.sock, n) if n else b""
        if status == ERROR:
            raise ProtocolError(f"daemon error: {payload.decode(errors='replace')}")
        return status, payload

    def get(self, key: bytes) -> bytes | None:
        s, p = self._call(GET, key)
        return None if s == NOT_FOUND else p

    def put(self, key: bytes, value: bytes) -> None:
        self._call(PUT, key, value)

    def delete(self, key: bytes) -> None:
        self._call(DELETE, key)

    def scan(self, key: bytes, count: int) -> list[tuple[bytes, bytes]]:
        _, p = self._call(SCAN, key, struct.pack("!I", count))
        out, i = [], 0
        while i < len(p):
            kl, vl = ENTRY.unpack_from(p, i)
            i += ENTRY.size
            out.append((p[i:i + kl], p[i + kl:i + kl + vl]))
            i += kl + vl
        return out

    def ping(self) -> bool:
        return self._call(PING)[1] == b"pong"

    def stats(self) -> dict:
        return json.loads(self._call(STATS)[1])

    def flush(self) -> None:
        self._call(FLUSH)

    def close(self) -> None:
        self.sock.close()


class LocalClient:
    """Same interface over an in-process Rdict (the integrated landscape: no network hop)."""

    def __init__(self, db, minimize_caching: bool = True):
        self.db, self.minimize_caching = db, minimize_caching

    def get(self, key):
        return self.db.get(key)

    def put(self, key, value):
        self.db.put(key, value)

    def delete(self, key):
        self.db.delete(key)

    def scan(self, key, count):
        _, p = handle(self.db, SCAN, key, struct.pack("!I", count), self.minimize_caching)
        return p

    def stats(self):
        return json.loads(handle(self.db, STATS, b"", b"", self.minimize_caching)[1])

    def flush(self):
        self.db.flush()

    def close(self):
        pass
