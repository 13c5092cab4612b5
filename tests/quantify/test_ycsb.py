"""YCSB-compatible workload generator."""

import random
from collections import Counter

import pytest

from colony.errors import InvalidParameter
from colony.quantify import ycsb


def test_fnvhash64_is_java_abs_of_fnv1a():
    # reference: FNV-1a 64 over 8 little-endian bytes, as a signed long, abs()
    def ref(v):
        h = 0xCBF29CE484222325
        for b in v.to_bytes(8, "little"):
            h = ((h ^ b) * 1099511628211) % 2 ** 64
        s = h - 2 ** 64 if h >= 2 ** 63 else h
        return abs(s)
    for v in (0, 1, 2, 255, 256, 123456789, 2 ** 40 + 7):
        assert ycsb.fnvhash64(v) == ref(v)
        assert 0 <= ycsb.fnvhash64(v) < 2 ** 63


def test_zipfian_head_probabilities():
    n = 1000
    g = ycsb.ZipfianGenerator(0, n - 1, rng=random.Random(1))
    zetan = ycsb.zeta(n, 0.99)
    draws = 200_000
    c = Counter(g.next() for _ in range(draws))
    # P(0) = 1/zeta(n), P(1) = 0.5^theta / zeta(n) by construction of the generator
    assert c[0] / draws == pytest.approx(1 / zetan, rel=0.03)
    assert c[1] / draws == pytest.approx(0.5 ** 0.99 / zetan, rel=0.05)
    assert min(c) >= 0 and max(c) <= n - 1
    assert c[0] > c[10] > c[500]


def test_zeta_incremental_equals_direct():
    assert ycsb.zeta(5000, 0.99, 2000, ycsb.zeta(2000, 0.99)) == pytest.approx(ycsb.zeta(5000, 0.99))


def test_scrambled_zipfian_spreads_hot_keys():
    g = ycsb.ScrambledZipfianGenerator(0, 9999, rng=random.Random(2))
    c = Counter(g.next() for _ in range(50_000))
    assert all(0 <= k <= 9999 for k in c)
    hottest = [k for k, _ in c.most_common(5)]
    assert hottest != [0, 1, 2, 3, 4]                 # hashed, not the low record numbers
    assert c.most_common(1)[0][1] > 50_000 / 10_000 * 20   # still skewed


def test_latest_prefers_recent_inserts():
    cnt = ycsb.InsertCounter(10_000)
    g = ycsb.SkewedLatestGenerator(cnt, random.Random(3))
    vals = [g.next() for _ in range(20_000)]
    assert max(vals) <= 9_999
    assert sum(v >= 9_900 for v in vals) / len(vals) > 0.5


def test_latest_only_reaches_acknowledged_inserts():
    cnt = ycsb.InsertCounter(100)
    a, b = cnt.next(), cnt.next()          # 100, 101 handed out, not stored yet
    assert cnt.last() == 99
    cnt.acknowledge(b)                     # 101 stored first: 100 is still missing
    assert cnt.last() == 99
    cnt.acknowledge(a)
    assert cnt.last() == 101
    g = ycsb.SkewedLatestGenerator(cnt, random.Random(1))
    c = cnt.next()                         # 102 in flight: never read
    assert max(g.next() for _ in range(5_000)) <= 101 < c


def test_keys_are_16_bytes_and_unique():
    keys = {ycsb.key_name(i) for i in range(100_000)}
    assert len(keys) == 100_000 and all(len(k) == 16 and k.startswith(b"user") for k in keys)
    assert ycsb.key_name(5, ordered=True) == b"user000000000005"
    with pytest.raises(InvalidParameter):
        ycsb.key_name(2 ** 48)


def test_core_workloads_and_custom_ratio():
    assert ycsb.workload("a").read == 0.5 and ycsb.workload("workloadd").distribution == "latest"
    w = ycsb.workload("a", read_proportion=0.8, recordcount=100)
    assert (w.read, w.update, w.recordcount) == (0.8, pytest.approx(0.2), 100)
    with pytest.raises(InvalidParameter, match="unknown workload"):
        ycsb.workload("g")
    with pytest.raises(InvalidParameter, match="sum to 1"):
        ycsb.Workload("x", read=0.7).validate()
    with pytest.raises(InvalidParameter, match="distribution"):
        ycsb.workload("a", distribution="pareto")


@pytest.mark.parametrize("name", list("abcdef"))
def test_operation_mix(name):
    w = ycsb.workload(name, recordcount=1000, operationcount=4000)
    s = ycsb.OperationStream(w, ycsb.InsertCounter(1000), seed=11)
    ops = Counter()
    for _ in range(4000):
        op, key, arg = s.next()
        ops[op] += 1
        assert len(key) == 16
        if op in ("update", "insert", "rmw"):
            assert len(arg) == 4096
        if op == "scan":
            assert 1 <= arg <= 100
    for op in ycsb.OPS:
        assert ops[op] / 4000 == pytest.approx(getattr(w, op), abs=0.03)


from hypothesis import given, strategies as st


@given(st.integers(min_value=0, max_value=2 ** 48 - 1), st.integers(min_value=0, max_value=2 ** 48 - 1))
def test_scramble48_is_injective(a, b):
    assert (ycsb.scramble48(a) == ycsb.scramble48(b)) == (a == b)
    assert 0 <= ycsb.scramble48(a) < 2 ** 48
