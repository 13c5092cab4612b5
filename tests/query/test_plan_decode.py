"""The C plan decoder gives what DataFusion's decode gives, or hands the plan to DataFusion.

``plan_json`` reads Substrait bytes with ``_pbjson.c`` (the estimation overhead: ~25 us
against ~0.33 ms through DataFusion's JSON text). Checked here: the same dict, key order
included, on every query the benchmarks and tests plan (particles, the corpus, TPC-H) and
on literals of every type; the same marked fields; and on mutated bytes the same dict or
the same BadPlan as DataFusion's path, never a crash."""

import importlib
from importlib import resources

import orjson
import pytest

from colony.bench.query_families import read_families
from colony.data import tpch, uniform
from colony.drivers.workload import read_queries
from colony.errors import BadPlan
from colony.query import plan as qplan
from colony.query._substrait_schema import MESSAGES, VERSION
from colony.query.estimate import _decoded, _marks, plan_json

# built by setup.py where a C compiler is (optional): without it plans decode through DataFusion
_pbjson = pytest.importorskip("colony.query._pbjson", reason="the C plan decoder was not built")
Q = resources.files("colony.bench") / "queries"

LITERALS = [
    "select * from particles where x > cast(0.25 as real) and vx < -1e300",
    "select cast(id as decimal(12, 3)) * 2.5, cast(x as varchar) from particles where id between 3 and 90",
    "select date '1998-09-02' + interval '3' day, timestamp '2020-01-01 10:00:00', true, null from particles",
    "select x from particles where y is not null and vz <> 0.0 and time in (1, 2, 3) and not (z > 0.5)",
    "select particle_id, sum(x) over (partition by particle_id order by time) from particles limit 5",
    "select * from particles where particle_id in (select particle_id from particles where x < 0.1)",
    "select 'text', x'CAFE', cast(-7 as smallint), cast(1 as bigint) - 9223372036854775807 from particles",
]


@pytest.fixture(scope="module")
def plans():
    sch = {"particles": uniform(10).schema}
    tsch = {k: v.schema for k, v in tpch.tables(0.001, seed=1).items()}
    sqls = [(q["sql"], sch) for q in read_families(str(Q / "families.sql"))]
    sqls += [(s, sch) for s in read_queries(str(Q / "corpus.sql")) + LITERALS]
    sqls += [(s, tsch) for s in read_queries(str(Q / "tpch" / "queries.sql"))]
    out = []
    for sql, schemas in sqls:
        try:
            out.append((sql, qplan.to_substrait(sql, schemas)))
        except Exception:        # noqa: BLE001 - a statement DataFusion cannot encode is not ours to check
            continue
    assert len(out) > 250
    return out


def test_the_decoder_gives_datafusions_dict_key_order_included(plans):
    for sql, pb in plans:
        fast = plan_json(pb)
        fast_marks = _decoded.last[1]
        slow = plan_json(pb, native=False)
        assert orjson.dumps(fast) == orjson.dumps(slow), sql
        assert fast_marks == _decoded.last[1], sql


def test_the_decoder_ran_and_marks_windows_and_subqueries(plans):
    seen = set()
    for sql, pb in plans:
        pj, marks = _pbjson.decode(pb)
        assert pj["version"]["minorNumber"] == VERSION[1]
        text = orjson.dumps(pj).decode()
        assert {k for k, bit in (("windowFunction", 8), ("subquery", 16)) if marks & bit} == _marks(text), sql
        seen |= _marks(text)
    assert seen == {"windowFunction", "subquery"}       # both marks exercised


def test_the_decoders_marks_find_the_same_split_points_without_serializing(plans, monkeypatch):
    """The native decoder's marks are the one relation's own: split points read them as they
    are (exact) and find what serializing the relation finds, and an estimate of a plan with a
    subquery serializes nothing to find them."""
    from colony.query.stats import TableStats
    est = importlib.import_module("colony.query.estimate")     # the package exports a function of that name
    seen = 0
    for sql, pb in plans:
        pj = plan_json(pb)
        marks, exact = _decoded.last[1], _decoded.last[2]
        rel = pj["relations"][0]["root"]["input"]
        assert exact and est.split_points(rel, marks, exact) == est.split_points(rel), sql
        seen += bool(marks)
    assert seen >= 3                                   # plans with windows or subqueries among them
    sub = qplan.to_substrait(LITERALS[5], {"particles": uniform(10).schema})
    dumps = []
    real = est.json.dumps
    monkeypatch.setattr(est.json, "dumps", lambda *a, **k: dumps.append(a) or real(*a, **k))
    out = est.estimate(sub, {"particles": TableStats.build([uniform(2_000, seed=3)])})
    assert out.supported and not dumps


def test_a_message_field_twice_and_another_spec_version_go_through_datafusion(plans):
    pb = plans[0][1]
    twice = pb + b"\x32\x02\x10\x63"     # a second `version` {minor_number: 99}: protobuf merges
    with pytest.raises(NotImplementedError):
        _pbjson.decode(twice)
    assert plan_json(twice)["version"]["minorNumber"] == 99
    assert plan_json(twice) == plan_json(twice, native=False)
    # within one message the last value wins, a default too: producer "x", then "" (left out)
    last = b"\x32\x05\x2a\x01x\x2a\x00"
    assert _pbjson.decode(last)[0] == plan_json(last, native=False) == {"version": {}}
    other = b"\x32\x02\x10\x63"          # only a version the table was not generated for
    assert _pbjson.decode(other)[0] == {"version": {"minorNumber": 99}}
    assert plan_json(other) == plan_json(other, native=False)


def _field(message: str, name: str) -> int:
    spec = next(m for m in MESSAGES if m[0] == message)
    return next(n for n, f in spec[2].items() if f[0] == name)


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def _nested(depth: int) -> bytes:
    """A plan whose relation is ``depth`` filters deep (Rel.filter -> FilterRel.input -> Rel ...)."""
    rel_filter, filter_input = _field("substrait.Rel", "filter"), _field("substrait.FilterRel", "input")
    rel = b""
    for _ in range(depth):
        fil = bytes([filter_input << 3 | 2]) + _varint(len(rel)) + rel
        rel = bytes([rel_filter << 3 | 2]) + _varint(len(fil)) + fil
    plan_rel = bytes([_field("substrait.PlanRel", "rel") << 3 | 2]) + _varint(len(rel)) + rel
    return bytes([_field("substrait.Plan", "relations") << 3 | 2]) + _varint(len(plan_rel)) + plan_rel


def test_malformed_and_deep_bytes_raise_value_error_never_crash():
    for raw in (b"\x0a", b"\x0a\x05ab", b"\xff" * 11, b"\x08", b"\x00\x00"):
        with pytest.raises(ValueError):
            _pbjson.decode(raw)
    shallow = _pbjson.decode(_nested(20))[0]
    assert shallow == plan_json(_nested(20), native=False)
    with pytest.raises(ValueError, match="deeper than 100"):
        _pbjson.decode(_nested(150))       # a bound on recursion, as prost has
    with pytest.raises(BadPlan):
        plan_json(_nested(150))            # and DataFusion's path refuses it too
    with pytest.raises(BadPlan):
        plan_json(b"\x0b")                 # a group start: neither path reads it


@pytest.mark.parametrize("seed", range(4))
def test_mutated_plans_decode_alike_or_fail_alike(plans, seed):
    """Fixed budget: 300 mutations per seed (bit flips, truncations, byte splices)."""
    import random
    rng = random.Random(seed)
    agree = 0
    for _ in range(300):
        _, pb = plans[rng.randrange(len(plans))]
        b = bytearray(pb)
        kind = rng.randrange(3)
        if kind == 0:
            i = rng.randrange(len(b))
            b[i] ^= 1 << rng.randrange(8)
        elif kind == 1:
            del b[rng.randrange(len(b)):]
        else:
            i = rng.randrange(len(b))
            b[i:i] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 6)))
        raw = bytes(b)
        try:
            slow = plan_json(raw, native=False)
        except BadPlan:
            slow = BadPlan
        try:
            fast = plan_json(raw)
        except BadPlan:
            fast = BadPlan
        if slow is BadPlan or fast is BadPlan:
            assert slow is fast, raw
        else:
            assert orjson.dumps(fast) == orjson.dumps(slow), raw
            agree += 1
    assert agree > 30                     # mutations that still decode are compared, not only errors
