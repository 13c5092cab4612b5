"""CSD service, COSTA and NESCAFE merge sort, in-process (LocalColony, no Ray)."""

import threading
import time

import pytest

from colony.errors import LockTimeout, NearStoreError, UnknownOperation
from colony.drivers.nearstore import Costa, Nescafe, SubOp, sequential_policy
from colony.nearstore import records as R
from colony.nearstore.address import decode
from colony.config.builders import devices as devices_config
from colony.runtime.local import LocalColony

CHUNK = 16 * 1000        # small chunks so every op runs many chunks


class RecordingColony(LocalColony):
    """LocalColony that logs what the *host* (the client) calls."""

    def __init__(self, devices):
        super().__init__(devices)
        self.client_calls = []

    def client(self):
        outer = self

        class C:
            def call(self, device, service, method, *a, **kw):
                outer.client_calls.append((device, method, kw.get("phase")))
                return outer.call(device, service, method, *a, **kw)
        return C()


def make(tmp_path, n, **opts):
    spec = {f"csd{i}": {"role": "csd", "workdir": str(tmp_path),
                        "services": {"nearstore": {"chunk_size": CHUNK, "lock_timeout_s": 30, **opts}}}
            for i in range(n)}
    col = RecordingColony(devices_config(spec))
    fs = Nescafe(col.client(), [f"csd{i}" for i in range(n)], chunk_size=CHUNK)
    return col, fs


@pytest.mark.parametrize("n", [1, 2, 3, 4, 8])
@pytest.mark.parametrize("mode", ["d2d", "host"])
def test_mergesort_byte_identical_to_host_sort(tmp_path, n, mode):
    col, fs = make(tmp_path, n)
    data = R.generate(3001, seed=n, distinct_keys=300)      # ties across devices
    fs.create("f", data)
    with fs.open("f") as f:
        f.register("mergesort", mode=mode)
        assert f.read() == R.host_sort(data)
        assert f.report["levels"] == (n - 1).bit_length()
    # intermediates freed: every device's store keeps only the file part (+ reused blocks)
    assert fs.open("f").read() == data                       # the file itself is untouched


def test_accounting_two_devices(tmp_path):
    col, fs = make(tmp_path, 2)
    data = R.generate(4000, seed=1)
    S = len(data)
    fs.create("f", data)
    rep = {}
    for mode in ("host", "d2d"):
        with fs.open("f") as f:
            f.register("mergesort", mode=mode)
            f.read()
            rep[mode] = f.report["link_bytes"]
    # host-mediated: the right half goes dev1 -> host -> dev0 (S/2 twice), then readback S
    assert rep["host"]["host_link"] == {"merge": S, "readback": S}
    assert rep["host"]["d2d"].get("merge", 0) == 0
    # device to device: the merge moves S/2 between devices; only the readback crosses the host
    assert rep["d2d"]["host_link"] == {"readback": S}
    assert rep["d2d"]["d2d"]["merge"] == S // 2


def test_d2d_merge_never_goes_through_the_host(tmp_path):
    col, fs = make(tmp_path, 4)
    data = R.generate(2000, seed=2)
    fs.create("f", data)
    col.client_calls.clear()
    with fs.open("f") as f:
        f.register("mergesort", mode="d2d")
        f.read()
    methods = {m for _, m, _ in col.client_calls}
    assert "peer_read" not in methods                        # the host never relays device data
    assert {p for _, m, p in col.client_calls if m == "read"} == {"readback"}
    stats = [col.call(f"csd{i}", "nearstore", "stats") for i in range(4)]
    assert sum(s["bytes"].get("merge", {}).get("d2d_in", 0) for s in stats) == len(data)  # S/4*2 + S/2


def test_remote_fetch_is_served_by_the_owner(tmp_path):
    col, fs = make(tmp_path, 2)
    e = col.call("csd1", "nearstore", "allocate", 10)
    col.call("csd1", "nearstore", "write", e, b"0123456789")
    svc0 = col.host("csd0").services["nearstore"]
    assert decode(e.addr)[0] == 1
    assert svc0.fetch(e, 2, 5, "op", "merge") == b"23456"
    s1 = col.call("csd1", "nearstore", "stats")["bytes"]["merge"]
    assert s1["d2d_out"] == 5


def test_op_waiting_on_locked_block_starts_when_unlocked(tmp_path):
    col, fs = make(tmp_path, 2)
    data = R.host_sort(R.generate(500, seed=4))
    fs.create("f", data)
    a, b = fs.files["f"]
    col.call("csd1", "nearstore", "lock", b, "someone")
    costa = Costa(col, fs.directory)
    out = col.call("csd0", "nearstore", "allocate", a.nbytes + b.nbytes)
    # (the two halves of a sorted file are each sorted, so merging them is valid)
    sub = SubOp("m", "csd0", "merge", [a, b], out, phase="merge")
    done = threading.Event()
    t = threading.Thread(target=lambda: (costa.run([sub], sequential_policy), done.set()))
    t.start()
    time.sleep(0.3)
    assert not done.is_set()                                  # waiting on csd1's lock
    t_unlock = time.time()
    col.call("csd1", "nearstore", "unlock", "someone")
    t.join(5)
    assert done.is_set()
    assert sub.result["started"] - t_unlock < 0.2
    assert col.call("csd0", "nearstore", "read", sub.output) == R.host_sort(data)


def test_default_policy_locks_then_unlocks_each_op(tmp_path):
    col, fs = make(tmp_path, 4)
    data = R.generate(4000, seed=5)
    fs.create("f", data)
    with fs.open("f") as f:
        f.register("mergesort", mode="d2d")
        assert f.read() == R.host_sort(data)
        ops = {o["id"]: o for o in f.report["ops"]}
    # merges were issued with the sorts but started only after their inputs' sorts ended
    assert ops["merge0.0"]["issued"] < ops["sort1"]["ended"] + 0.05
    assert ops["merge0.0"]["started"] >= max(ops["sort0"]["ended"], ops["sort1"]["ended"]) - 0.01
    assert ops["merge1.0"]["started"] >= ops["merge0.1"]["ended"] - 0.01
    assert all(col.call(f"csd{i}", "nearstore", "locked") == [] for i in range(4))


def test_policy_callback_replaces_default(tmp_path):
    col, fs = make(tmp_path, 4)
    data = R.generate(1500, seed=6)
    fs.create("f", data)
    seen = []

    def policy(costa, subs):
        seen.append([s.id for s in subs])
        sequential_policy(costa, subs)

    with fs.open("f") as f:
        f.register("mergesort", mode="d2d", policy=policy)
        assert f.read() == R.host_sort(data)
    assert seen == [["sort0", "sort1", "sort2", "sort3", "merge0.0", "merge0.1", "merge1.0"]]
    with fs.open("f") as f, pytest.raises(NearStoreError):
        f.register("mergesort", mode="host", policy=policy)
        f.read()


def test_policy_that_never_unlocks_times_out(tmp_path):
    col, fs = make(tmp_path, 2, lock_timeout_s=0.3)
    fs.create("f", R.generate(300, seed=7))

    def bad(costa, subs):                     # locks the first sort's output and keeps it
        costa.lock(subs[0].output, "nobody")
        costa.wait([costa.issue(s) for s in subs])

    with fs.open("f") as f, pytest.raises(LockTimeout):
        f.register("mergesort", mode="d2d", policy=bad)
        f.read()


def test_nescafe_plain_reads_and_errors(tmp_path):
    col, fs = make(tmp_path, 3)
    data = R.generate(1000, seed=8)
    f = fs.create("f", data)
    assert f.size == len(data) and [e.device for e in f.fiemap()] == [0, 1, 2]
    assert f.read(250) + f.read(50_000) + f.read() == data
    with pytest.raises(UnknownOperation):
        f.register("compress")
    with pytest.raises(NearStoreError):
        fs.create("g", b"x" * 150)
    with pytest.raises(NearStoreError):
        fs.open("missing")
    g = fs.open("f")
    g.register("mergesort")
    assert g.read(1000) + g.read() == R.host_sort(data)      # sorted data in pieces
    with pytest.raises(NearStoreError):
        g.register("mergesort", mode="bogus")
        g.read()


def test_d2d_link_is_paced(tmp_path):
    col, fs = make(tmp_path, 2)
    fs.create("f", R.generate(4000, seed=9))                  # S/2 = 200 kB over D2D
    fs.set_links(host_gbps=None, d2d_gbps=0.008)              # 1 MB/s -> about 0.2 s
    with fs.open("f") as f:
        f.register("mergesort", mode="d2d")
        f.read()
        assert f.report["merge_s"] >= 0.13        # (200 kB - 64 KiB burst) at 1 MB/s
    assert col.call("csd1", "nearstore", "stats")["d2d_paced_s"] >= 0.1


def test_duplicate_device_ids_are_refused(tmp_path):
    spec = {f"csd{i}": {"role": "csd", "workdir": str(tmp_path),
                        "services": {"nearstore": {"device_id": 3}}} for i in range(2)}
    col = LocalColony(devices_config(spec))
    with pytest.raises(NearStoreError, match="share device id 3"):
        Nescafe(col, ["csd0", "csd1"])
    with pytest.raises(NearStoreError, match="workdir"):
        LocalColony(devices_config({"c": {"role": "csd", "services": {"nearstore": {}}}}))


def test_host_copy_modes_and_duplex(tmp_path):
    col, fs = make(tmp_path, 2)
    src = col.call("csd1", "nearstore", "allocate", 256_000)
    col.call("csd1", "nearstore", "write", src, bytes(range(256)) * 1000)
    times = {}
    for duplex, copy in (("half", "store-and-forward"), ("full", "pipelined")):
        f2 = Nescafe(col, ["csd0", "csd1"], chunk_size=CHUNK, duplex=duplex, copy=copy)
        f2.set_links(host_gbps=0.016, d2d_gbps=None)            # 2 MB/s each way
        dst = col.call("csd0", "nearstore", "allocate", 256_000)
        t = time.monotonic()
        f2.host_copy(src, dst, "merge")
        times[copy] = time.monotonic() - t
        assert col.call("csd0", "nearstore", "read", dst) == bytes(range(256)) * 1000
    # half duplex, store and forward: 2 x 256 kB at 2 MB/s; full duplex pipelined: about half
    assert times["store-and-forward"] >= 0.2
    assert times["pipelined"] < 0.8 * times["store-and-forward"]
    with pytest.raises(NearStoreError):
        Nescafe(col, ["csd0"], duplex="simplex")
    with pytest.raises(NearStoreError):
        Nescafe(col, ["csd0"], copy="teleport")
