"""A YCSB-compatible workload generator (core workloads A–F) in Python.

Why not YCSB itself: it needs a JVM and a Java RocksDB binding; the MBWU prototype of
the seeds used YCSB through Java RMI. This module ports the parts that shape the
load: the Zipfian generator of Gray et al. as YCSB implements it (incremental zeta,
the same eta/alpha formula, including YCSB's use of the *initial* item count in eta),
the scrambled Zipfian (FNV-64 hashed, 10^10-item zeta constant 26.469...), the
skewed-latest generator, the uniform generator, the core workload proportions and
the insert-key sequence. Keys are 16 bytes ("user" + 12 hex digits of a 48-bit
bijective scramble of the record number, so hashed inserts never collide) and values
are 4 KiB by default.
"""

from __future__ import annotations

import math
import random
import threading
from dataclasses import asdict, dataclass, replace

import numpy as np

from colony.errors import InvalidParameter

ZIPFIAN_CONSTANT = 0.99
SCRAMBLED_ITEM_COUNT = 10_000_000_000
SCRAMBLED_ZETAN = 26.46902820178302   # zeta(10^10 + 1, 0.99), as hard-coded in YCSB
FNV_OFFSET_BASIS_64 = 0xCBF29CE484222325
FNV_PRIME_64 = 1099511628211
_M64 = (1 << 64) - 1
_M48 = (1 << 48) - 1


def fnvhash64(val: int) -> int:
    """YCSB Utils.fnvhash64: FNV-1a over the 8 low-order bytes, Java long semantics, abs()."""
    h = FNV_OFFSET_BASIS_64
    for _ in range(8):
        h ^= val & 0xFF
        val >>= 8
        h = (h * FNV_PRIME_64) & _M64
    if h >= 1 << 63:           # to a signed Java long, then Math.abs
        h = (1 << 64) - h
    return h


def zeta(n: int, theta: float, start: int = 0, initial: float = 0.0) -> float:
    """sum_{i=start}^{n-1} 1/(i+1)^theta (+ initial): YCSB's zetastatic, vectorized in chunks."""
    total = initial
    chunk = 1 << 22
    for lo in range(start, n, chunk):
        hi = min(n, lo + chunk)
        total += float(np.sum(1.0 / np.power(np.arange(lo + 1, hi + 1, dtype=np.float64), theta)))
    return total


class ZipfianGenerator:
    """Integers in [lo, hi], popular items first (item lo is the most popular)."""

    def __init__(self, lo: int, hi: int, constant: float = ZIPFIAN_CONSTANT, zetan: float | None = None,
                 rng: random.Random | None = None):
        if hi < lo:
            raise InvalidParameter(f"Zipfian range is empty: [{lo}, {hi}]")
        if not 0 < constant < 1:
            raise InvalidParameter(f"Zipfian constant must be in (0, 1), got {constant}")
        self.rng = rng or random.Random(0)
        self.items = hi - lo + 1
        self.base = lo
        self.theta = constant
        self.zeta2theta = zeta(2, constant)
        self.alpha = 1.0 / (1.0 - constant)
        self.zetan = zeta(self.items, constant) if zetan is None else zetan
        self.countforzeta = self.items
        self.eta = self._eta()
        self.last = self.next()

    def _eta(self) -> float:
        return (1 - math.pow(2.0 / self.items, 1 - self.theta)) / (1 - self.zeta2theta / self.zetan)

    def next(self, itemcount: int | None = None) -> int:
        itemcount = self.items if itemcount is None else itemcount
        if itemcount > self.countforzeta:      # grow incrementally, as YCSB does (no decrease)
            self.zetan = zeta(itemcount, self.theta, self.countforzeta, self.zetan)
            self.countforzeta = itemcount
            self.eta = self._eta()
        u = self.rng.random()
        uz = u * self.zetan
        if uz < 1.0:
            ret = self.base
        elif uz < 1.0 + math.pow(0.5, self.theta):
            ret = self.base + 1
        else:
            ret = self.base + int(itemcount * math.pow(self.eta * u - self.eta + 1, self.alpha))
        self.last = ret
        return ret


class ScrambledZipfianGenerator:
    """Zipfian popularity spread over the key space by FNV hashing (YCSB's default chooser)."""

    def __init__(self, lo: int, hi: int, constant: float = ZIPFIAN_CONSTANT, rng: random.Random | None = None):
        self.lo, self.itemcount = lo, hi - lo + 1
        zetan = SCRAMBLED_ZETAN if constant == ZIPFIAN_CONSTANT else None
        if zetan is None:
            zetan = zeta(SCRAMBLED_ITEM_COUNT + 1, constant)
        self.gen = ZipfianGenerator(0, SCRAMBLED_ITEM_COUNT, constant, zetan, rng)

    def next(self) -> int:
        return self.lo + fnvhash64(self.gen.next()) % self.itemcount


class UniformGenerator:
    def __init__(self, lo: int, hi: int, rng: random.Random | None = None):
        self.lo, self.hi, self.rng = lo, hi, rng or random.Random(0)

    def next(self) -> int:
        return self.rng.randint(self.lo, self.hi)


class InsertCounter:
    """The transaction insert key sequence shared by all threads of one generator process.

    Like YCSB's AcknowledgedCounterGenerator, :meth:`last` only advances over inserts that
    have completed (:meth:`acknowledge`), so a concurrent reader never picks a key that was
    handed out but is not stored yet.
    """

    def __init__(self, start: int):
        self._next = start
        self._limit = start - 1
        self._done: set[int] = set()
        self._lock = threading.Lock()

    def next(self) -> int:
        with self._lock:
            v = self._next
            self._next += 1
            return v

    def acknowledge(self, v: int) -> None:
        with self._lock:
            self._done.add(v)
            while self._limit + 1 in self._done:
                self._limit += 1
                self._done.remove(self._limit)

    def last(self) -> int:
        with self._lock:
            return self._limit


class SkewedLatestGenerator:
    """Recently inserted records are the most popular (workload D)."""

    def __init__(self, counter: InsertCounter, rng: random.Random | None = None):
        self.counter = counter
        self.zipf = ZipfianGenerator(0, max(counter.last(), 1) - 1, rng=rng)

    def next(self) -> int:
        mx = self.counter.last()
        return mx - self.zipf.next(mx)


def scramble48(x: int) -> int:
    """A bijection on [0, 2^48): odd multiply, xor-shift, odd multiply (keys spread, never collide)."""
    x = (x * 0x5DEECE66D) & _M48
    x ^= x >> 24
    x = (x * 0xB5297A4D3F) & _M48
    return x


def key_name(keynum: int, ordered: bool = False) -> bytes:
    """16-byte YCSB-style key: b"user" + 12 hex digits."""
    if not 0 <= keynum <= _M48:
        raise InvalidParameter(f"record number {keynum} does not fit the 16-byte key space (< 2^48)")
    return b"user%012x" % (keynum if ordered else scramble48(keynum))


@dataclass(frozen=True)
class Workload:
    """YCSB CoreWorkload parameters (proportions sum to 1)."""

    name: str
    read: float = 0.0
    update: float = 0.0
    insert: float = 0.0
    scan: float = 0.0
    rmw: float = 0.0
    distribution: str = "zipfian"      # zipfian | uniform | latest
    recordcount: int = 10_000
    operationcount: int = 10_000
    value_size: int = 4096
    key_size: int = 16
    max_scan: int = 100
    zipfian_constant: float = ZIPFIAN_CONSTANT
    ordered_inserts: bool = False

    def validate(self) -> "Workload":
        props = (self.read, self.update, self.insert, self.scan, self.rmw)
        if any(p < 0 for p in props) or abs(sum(props) - 1.0) > 1e-9:
            raise InvalidParameter(f"workload {self.name}: operation proportions must be >= 0 and sum to 1, "
                                   f"got read={self.read} update={self.update} insert={self.insert} "
                                   f"scan={self.scan} rmw={self.rmw}")
        if self.distribution not in ("zipfian", "uniform", "latest"):
            raise InvalidParameter(f"request distribution must be zipfian, uniform or latest, "
                                   f"got {self.distribution!r}")
        if self.recordcount < 1 or self.operationcount < 0:
            raise InvalidParameter("recordcount must be >= 1 and operationcount >= 0")
        if self.key_size != 16:
            raise InvalidParameter("keys are 16 bytes (b'user' + 12 hex digits); key_size must be 16")
        if self.value_size < 1:
            raise InvalidParameter(f"value_size must be >= 1 byte, got {self.value_size}")
        return self

    def as_dict(self) -> dict:
        return asdict(self)


#: YCSB core workloads (workloads/workloada ... workloadf).
CORE_WORKLOADS = {
    "a": Workload("a", read=0.5, update=0.5),
    "b": Workload("b", read=0.95, update=0.05),
    "c": Workload("c", read=1.0),
    "d": Workload("d", read=0.95, insert=0.05, distribution="latest"),
    "e": Workload("e", scan=0.95, insert=0.05),
    "f": Workload("f", read=0.5, rmw=0.5),
}


def workload(name: str = "a", *, read_proportion: float | None = None, **overrides) -> Workload:
    """A core workload, optionally with a custom read/write ratio (the rest become updates)."""
    key = name.lower().removeprefix("workload")
    if key not in CORE_WORKLOADS:
        raise InvalidParameter(f"unknown workload {name!r}; choose one of a, b, c, d, e, f")
    w = CORE_WORKLOADS[key]
    if read_proportion is not None:
        if not 0 <= read_proportion <= 1:
            raise InvalidParameter(f"read proportion must be in [0, 1], got {read_proportion}")
        w = replace(w, read=read_proportion, update=1 - read_proportion, insert=0.0, scan=0.0, rmw=0.0)
    return replace(w, **overrides).validate()


OPS = ("read", "update", "insert", "scan", "rmw")


class OperationStream:
    """One client thread's stream of (op, key, value|scan_len), as CoreWorkload.doTransaction."""

    def __init__(self, w: Workload, counter: InsertCounter, seed: int, pool: bytes | None = None):
        self.w = w
        self.rng = random.Random(seed)
        self.counter = counter
        self.cum = np.cumsum([getattr(w, o) for o in OPS]).tolist()
        expected_new = int(w.operationcount * w.insert * 2.0)
        if w.distribution == "zipfian":
            self.chooser = ScrambledZipfianGenerator(0, w.recordcount + expected_new - 1, w.zipfian_constant,
                                                     rng=self.rng)
        elif w.distribution == "uniform":
            self.chooser = UniformGenerator(0, w.recordcount - 1, self.rng)
        else:
            self.chooser = SkewedLatestGenerator(counter, self.rng)
        self.pool = pool if pool is not None else random.Random(seed ^ 0x5EED).randbytes(1 << 20)

    def value(self) -> bytes:
        off = self.rng.randrange(0, len(self.pool) - self.w.value_size)
        return self.pool[off:off + self.w.value_size]

    def next_keynum(self) -> int:
        last = self.counter.last()
        while True:                      # never ask for a record that was not inserted yet
            k = self.chooser.next()
            if k <= last:
                return k

    def next(self) -> tuple[str, bytes, object]:
        u = self.rng.random()
        op = OPS[-1]
        for name, c in zip(OPS, self.cum):
            if u < c:
                op = name
                break
        if op == "insert":
            self.pending_insert = self.counter.next()   # acknowledge() it once stored
            return op, key_name(self.pending_insert, self.w.ordered_inserts), self.value()
        key = key_name(self.next_keynum(), self.w.ordered_inserts)
        if op == "scan":
            return op, key, self.rng.randint(1, self.w.max_scan)
        if op in ("update", "rmw"):
            return op, key, self.value()
        return op, key, None
