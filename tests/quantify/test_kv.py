"""The RocksDB daemon and its TCP protocol."""

import socket
import struct
import threading

import pytest

from colony.errors import ProtocolError
from colony.quantify import kv


@pytest.fixture
def daemon(tmp_path):
    ready = threading.Event()
    port = {}
    stop = threading.Event()

    def on_ready(p):
        port["p"] = p
        ready.set()

    t = threading.Thread(target=kv.serve, args=(str(tmp_path / "db"), "127.0.0.1", 0, False, True, on_ready, stop),
                         daemon=True)
    t.start()
    assert ready.wait(20)
    yield port["p"]
    stop.set()
    t.join(10)


def test_roundtrip(daemon):
    c = kv.TcpClient("127.0.0.1", daemon)
    assert c.ping()
    assert c.get(b"missing") is None
    for i in range(5):
        c.put(b"k%d" % i, bytes([i]) * 4096)
    assert c.get(b"k3") == b"\x03" * 4096
    c.delete(b"k3")
    assert c.get(b"k3") is None
    got = c.scan(b"k1", 3)
    assert [k for k, _ in got] == [b"k1", b"k2", b"k4"]
    c.flush()
    st = c.stats()
    assert st["options"]["compression"] == "none" and st["caching"]["mode"] == "normal"
    c.close()


def test_errors_are_typed(daemon):
    s = socket.create_connection(("127.0.0.1", daemon))
    s.sendall(kv.REQ.pack(99, 0, 0))
    status, n = kv.RESP.unpack(s.recv(kv.RESP.size, socket.MSG_WAITALL))
    assert status == kv.ERROR and b"unknown op" in s.recv(n, socket.MSG_WAITALL)
    s.close()
    c = kv.TcpClient("127.0.0.1", daemon)
    with pytest.raises(ProtocolError, match="SCAN"):
        c._call(kv.SCAN, b"k", b"xx")
    with pytest.raises(ProtocolError, match="too large"):
        kv.encode_request(kv.PUT, b"k" * 70000)


def test_unreachable_daemon_message():
    from colony.errors import QuantifyError
    with pytest.raises(QuantifyError, match="mbwu serve"):
        kv.TcpClient("127.0.0.1", 1, timeout=1)


def test_minimized_caching_options_open(tmp_path):
    db = kv.open_db(tmp_path / "d", minimize_caching=True, fresh=True)
    db.put(b"a", b"b" * 4096)
    db.flush()
    assert db.get(b"a") == b"b" * 4096
    db.close()
    rep = kv.caching_report(True)
    assert any("direct" in d for d in rep["disabled"]) and any("memtable" in x for x in rep["left_on"])


def test_scan_frame_layout():
    # SCAN payload = repeated (klen:u16 vlen:u32 key value)
    class FakeIt:
        def __init__(self):
            self.items, self.i = [(b"a", b"1"), (b"b", b"22")], 0
        def seek(self, k): pass
        def valid(self): return self.i < len(self.items)
        def key(self): return self.items[self.i][0]
        def value(self): return self.items[self.i][1]
        def next(self): self.i += 1

    class FakeDB:
        def iter(self): return FakeIt()
    status, payload = kv.handle(FakeDB(), kv.SCAN, b"a", struct.pack("!I", 5), False)
    assert status == kv.OK and payload == struct.pack("!HI", 1, 1) + b"a1" + struct.pack("!HI", 1, 2) + b"b22"


from hypothesis import given, settings, strategies as st


@settings(max_examples=60, deadline=None)
@given(op=st.sampled_from([kv.GET, kv.PUT, kv.DELETE, kv.SCAN]), key=st.binary(max_size=64),
       value=st.binary(max_size=5000))
def test_request_frame_layout(op, key, value):
    frame = kv.encode_request(op, key, value)
    o, kl, vl = kv.REQ.unpack_from(frame)
    assert (o, kl, vl) == (op, len(key), len(value))
    assert frame[kv.REQ.size:kv.REQ.size + kl] == key and frame[kv.REQ.size + kl:] == value
