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
- Joins (and anything else not listed) raise :class:`Unsupported`; callers still decide.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from colony.errors import BadPlan, Unsupported
from colony.query.stats import TableStats

INF = math.inf
MC_SAMPLES = 20_000
DEFAULT_SEL = 1.0 / 3.0          # PostgreSQL-style default for predicates we cannot model

CMP = {"lt", "lte", "gt", "gte", "equal", "not_equal", "is_null", "is_not_null", "like", "ilike",
       "is_distinct_from", "is_not_distinct_from", "starts_with"}
LOGIC = {"and", "or", "not", "xor"}
ARITH = {"add", "subtract", "multiply", "divide", "negate", "modulus", "bitwise_and", "bitwise_or",
         "bitwise_xor", "shift_left", "shift_right"}
POWER = {"power", "sqrt", "exp", "ln", "log", "log2", "log10", "cbrt", "pow"}
FLIP = {"lt": "gt", "lte": "gte", "gt": "lt", "gte": "lte", "equal": "equal", "not_equal": "not_equal"}

# operation-vector features, in model order (see docs/query.md)
OPS = ("cmp", "logic", "arith", "power", "func", "filter", "take", "scan", "hash_agg", "groups",
       "sort", "out_cells", "rows")


def category(fn: str) -> str:
    if fn in CMP:
        return "cmp"
    if fn in LOGIC:
        return "logic"
    if fn in ARITH:
        return "arith"
    if fn in POWER:
        return "power"
    return "func"


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
# ("col", table, name) | ("lit", value) | ("fn", name, args) | ("agg", name) | ("opaque", args)

def _columns(e) -> set:
    if e[0] == "col":
        return {(e[1], e[2])}
    if e[0] in ("fn", "opaque"):
        return set().union(*[_columns(a) for a in e[-1]]) if e[-1] else set()
    return set()


def _lit(e):
    return e[1] if e[0] == "lit" and isinstance(e[1], (int, float)) and not isinstance(e[1], bool) else None


def _invert(e, S: list[Iv]):
    """Interval set on a base column such that e(col) in S, or None if not invertible."""
    if e[0] == "col":
        return (e[1], e[2]), S
    if e[0] != "fn":
        return None
    name, args = e[1], e[2]
    if name == "cast" and len(args) == 1:
        return _invert(args[0], S)
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
    if name == "multiply" or (name == "divide" and not const_left):
        k = c if name == "multiply" else (1.0 / c if c else None)
        if not k:
            return None
        return _invert(g, _map(S, _safe(lambda v: v / k), decreasing=k < 0))
    return None


def _numpy_eval(e, cols: dict):
    if e[0] == "col":
        return cols[(e[1], e[2])]
    if e[0] == "lit":
        return e[1]
    if e[0] != "fn":
        raise Unsupported("opaque expression")
    name, args = e[1], [_numpy_eval(a, cols) for a in e[2]]
    ops = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
           "power": np.power, "pow": np.power, "lt": np.less, "lte": np.less_equal, "gt": np.greater,
           "gte": np.greater_equal, "equal": np.equal, "not_equal": np.not_equal,
           "and": np.logical_and, "or": np.logical_or, "modulus": np.mod}
    one = {"sqrt": np.sqrt, "abs": np.abs, "negate": np.negative, "not": np.logical_not, "exp": np.exp,
           "ln": np.log, "log10": np.log10, "log2": np.log2, "cbrt": np.cbrt, "floor": np.floor,
           "ceil": np.ceil, "cast": lambda v: v, "cast_int": np.trunc}
    with np.errstate(all="ignore"):
        if name in ops and len(args) >= 2:
            out = args[0]
            for a in args[1:]:
                out = ops[name](out, a)
            return out
        if name in one and len(args) == 1:
            return one[name](args[0])
        if name == "round":
            return np.round(args[0], int(args[1]) if len(args) > 1 else 0)
    raise Unsupported(f"function {name!r} has no numeric model")


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


@dataclass
class Estimate:
    """What the decision engine needs about one plan."""

    rows: float                       # estimated result rows
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

    def to_dict(self) -> dict:
        return {k: v for k, v in self.__dict__.items()}


_TYPE_WIDTH = {"i64": 8, "fp64": 8, "i32": 4, "fp32": 4, "i16": 2, "i8": 1, "bool": 1, "date": 4,
               "timestamp": 8, "string": 16, "varchar": 16, "binary": 16}


class Estimator:
    def __init__(self, stats: dict[str, TableStats], seed: int = 0) -> None:
        self.stats = stats
        self.seed = seed
        self.ops: Counter = Counter()
        self.fn_names: dict[int, str] = {}
        self.node_rows: list = []

    # -- expressions --------------------------------------------------------
    def _expr(self, j: dict, inp: Node):
        if "selection" in j:
            sel = j["selection"]
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
                if k in ("i64", "i32", "i16", "i8"):
                    return ("lit", int(v))
                if k == "boolean":
                    return ("lit", bool(v))
                if k == "string":
                    return ("lit", v)
            return ("lit", None)
        if "scalarFunction" in j:
            f = j["scalarFunction"]
            name = self.fn_names.get(f.get("functionReference", 0), "?")
            args = [self._expr(a["value"], inp) for a in f.get("arguments", []) if "value" in a]
            if name in ("and", "or") and len(args) > 2:   # keep trees n-ary
                pass
            return ("fn", name, args)
        if "cast" in j:
            to = next(iter(j["cast"].get("type", {}) or {"?": 0}))
            name = "cast_int" if to in ("i8", "i16", "i32", "i64") else "cast"
            return ("fn", name, [self._expr(j["cast"]["input"], inp)])
        if "ifThen" in j or "singularOrList" in j or "switchExpression" in j:
            kids = []
            def walk(o):
                if isinstance(o, dict):
                    if "selection" in o or "literal" in o or "scalarFunction" in o:
                        kids.append(self._expr(o, inp))
                        return
                    for v in o.values():
                        walk(v)
                elif isinstance(o, list):
                    for v in o:
                        walk(v)
            walk(j)
            return ("opaque", kids)
        if "subquery" in j:
            raise Unsupported("subqueries are not modelled")
        return ("opaque", [])

    def _count(self, e, n: float) -> None:
        if e[0] == "fn":
            k = max(1, len(e[2]) - 1) if e[1] in ("and", "or") else 1
            self.ops[category(e[1])] += n * k
            for a in e[2]:
                self._count(a, n)
        elif e[0] == "opaque":
            self.ops["func"] += n
            for a in e[1]:
                self._count(a, n)

    # -- selectivity ----------------------------------------------------------
    def _colstats(self, col):
        st = self.stats.get(col[0])
        return st.columns.get(col[1]) if st else None

    def _mass(self, col, S: list[Iv]) -> float:
        cs = self._colstats(col)
        if cs is None or cs.kll is None:
            return DEFAULT_SEL
        total = 0.0
        for lo, hi, li, hinc in S:
            if lo == hi:
                total += (1.0 / cs.ndv) if cs.lo <= lo <= cs.hi else 0.0
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

    def sel(self, e) -> float:
        if e[0] == "lit":
            return 1.0 if e[1] else 0.0
        if e[0] != "fn":
            return DEFAULT_SEL
        name, args = e[1], e[2]
        if name in ("and", "or"):
            flat = []
            for a in args:   # flatten nested and/or of the same kind
                flat.extend(a[2] if a[0] == "fn" and a[1] == name else [a])
            groups: dict = {}
            rest = []
            for a in flat:
                r = self._reduce(a)
                if r is None:
                    rest.append(self.sel(a))
                elif r[0] in groups:
                    groups[r[0]] = _intersect(groups[r[0]], r[1]) if name == "and" else _norm(groups[r[0]] + r[1])
                else:
                    groups[r[0]] = r[1]
            sels = [self._mass(c, S) for c, S in groups.items()] + rest
            if name == "and":
                return float(np.prod(sels))
            return 1.0 - float(np.prod([1.0 - s for s in sels]))
        if name == "not" and len(args) == 1:
            return 1.0 - self.sel(args[0])
        if name in ("is_null", "is_not_null") and len(args) == 1 and args[0][0] == "col":
            cs = self._colstats((args[0][1], args[0][2]))
            f = cs.nulls / cs.rows if cs and cs.rows else 0.0
            return f if name == "is_null" else 1.0 - f
        r = self._reduce(e)
        if r is not None:
            return self._mass(r[0], r[1])
        return self._sample_sel(e)

    def _sample_sel(self, e) -> float:
        cols = _columns(e)
        stats = {c: self._colstats(c) for c in cols}
        if not cols or any(s is None or s.kll is None for s in stats.values()):
            return DEFAULT_SEL
        rng = np.random.Generator(np.random.SFC64(self.seed))
        sample = {c: stats[c].sample(MC_SAMPLES, rng) for c in sorted(cols)}
        try:
            v = _numpy_eval(e, sample)
        except (Unsupported, TypeError, ValueError):
            return DEFAULT_SEL
        return float(np.mean(np.asarray(v, dtype=bool))) if np.ndim(v) else float(bool(v))

    def _ndv(self, e) -> float:
        """Distinct values of a group key over its whole table."""
        cols = _columns(e)
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
                # a discretizing key (round, floor, cast to int of a linear function...): count
                # the distinct values it takes on a dense grid over the column's range
                grid = np.linspace(cs.lo, cs.hi, 200_001)
                try:
                    vals = np.asarray(_numpy_eval(e, {col: grid}), dtype=np.float64)
                    k = len(np.unique(vals[np.isfinite(vals)]))
                    if k < 100_000:
                        d = min(d, float(k))
                except (Unsupported, TypeError, ValueError):
                    pass
        return max(1.0, d)

    # -- relations --------------------------------------------------------------
    def rel(self, j: dict) -> Node:
        kind, body = next(iter((k, v) for k, v in j.items()))
        node = getattr(self, "_" + kind, None)
        if node is None:
            raise Unsupported(f"{kind} relations are not supported by the estimator (joins push back)")
        out = node(body)
        self.node_rows.append((kind, out.rows))
        return out

    def _emit(self, body: dict, exprs: list) -> list:
        common = body.get("common", {})
        if "emit" not in common:
            return exprs
        return [exprs[i] for i in common["emit"].get("outputMapping", [])]

    def _read(self, b: dict) -> Node:
        names = b.get("namedTable", {}).get("names", [])
        if not names:
            raise Unsupported("only named-table reads are supported")
        table = names[-1]
        st = self.stats.get(table)
        if st is None:
            raise Unsupported(f"no statistics for table {table!r}")
        cols = b["baseSchema"]["names"]
        if "projection" in b:          # proto3 JSON omits an empty item list
            idx = [i.get("field", 0) for i in b["projection"].get("select", {}).get("structItems", [])]
        else:
            idx = list(range(len(cols)))
        base = Node(rows=float(st.rows), exprs=[("col", table, cols[i]) for i in idx],
                    base_rows=float(st.rows), table=table)
        self.ops["scan"] += st.rows * len(idx)
        self.ops["rows"] += st.rows
        if "filter" in b:
            node = Node(rows=base.rows, exprs=[("col", table, c) for c in cols], base_rows=base.rows, table=table)
            base = self._apply_filter(node, self._expr(b["filter"], node), base.exprs)
        return Node(base.rows, self._emit(b, base.exprs), base.base_rows, base.preds, table)

    def _apply_filter(self, inp: Node, cond, out_exprs=None) -> Node:
        self._count(cond, inp.rows)
        self.ops["filter"] += inp.rows
        if inp.base_rows is not None:
            preds = inp.preds + [cond]
            rows = inp.base_rows * self.sel(("fn", "and", preds) if len(preds) > 1 else preds[0])
        else:
            preds = []
            rows = inp.rows * self.sel(cond)
        rows = min(rows, inp.rows)
        exprs = out_exprs if out_exprs is not None else inp.exprs
        self.ops["take"] += rows * len(exprs)
        return Node(rows, exprs, inp.base_rows, preds, inp.table)

    def _filter(self, b: dict) -> Node:
        inp = self.rel(b["input"])
        out = self._apply_filter(inp, self._expr(b["condition"], inp))
        return Node(out.rows, self._emit(b, out.exprs), out.base_rows, out.preds, out.table)

    def _project(self, b: dict) -> Node:
        inp = self.rel(b["input"])
        new = [self._expr(x, inp) for x in b.get("expressions", [])]
        for e in new:
            self._count(e, inp.rows)
        return Node(inp.rows, self._emit(b, inp.exprs + new), inp.base_rows, inp.preds, inp.table)

    def _fetch(self, b: dict) -> Node:
        inp = self.rel(b["input"])
        count = b.get("countExpr", {}).get("literal", {}).get("i64", b.get("count"))
        off = int(b.get("offsetExpr", {}).get("literal", {}).get("i64", b.get("offset", 0)) or 0)
        rows = max(0.0, inp.rows - off)
        if count is not None and int(count) >= 0:
            rows = min(rows, float(count))
        return Node(rows, self._emit(b, inp.exprs), None, [], inp.table)

    def _sort(self, b: dict) -> Node:
        inp = self.rel(b["input"])
        self.ops["sort"] += inp.rows * max(1.0, math.log2(max(inp.rows, 2.0)))
        return Node(inp.rows, self._emit(b, inp.exprs), inp.base_rows, inp.preds, inp.table)

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
        if len(sets) > 1:
            raise Unsupported("grouping sets / rollup are not modelled")
        measures = b.get("measures", [])
        margs = []
        for m in measures:
            for a in m.get("measure", {}).get("arguments", []):
                if "value" in a:
                    margs.append(self._expr(a["value"], inp))
        for e in keys + margs:
            self._count(e, inp.rows)
        self.ops["hash_agg"] += inp.rows * max(1, len(keys) + len(measures))
        if not keys:
            rows = 1.0
        else:
            d = 1.0
            for k in keys:
                d *= self._ndv(k)
            full = inp.base_rows if inp.base_rows else inp.rows
            d = min(d, full)
            frac = inp.rows / full if full else 0.0
            per = full / d                       # rows per distinct key, keys equally frequent
            rows = d * (1.0 - (1.0 - min(1.0, frac)) ** per) if d > 0 else 0.0
            rows = max(min(rows, inp.rows), 1.0 if inp.rows >= 1 else 0.0)
        self.ops["groups"] += rows
        exprs = keys + [("agg", self.fn_names.get(m.get("measure", {}).get("functionReference", 0), "?"), [])
                        for m in measures]
        return Node(rows, self._emit(b, exprs), None, [], inp.table)

    def _set(self, b: dict) -> Node:
        ins = [self.rel(i) for i in b["inputs"]]
        op = b.get("op", "")
        if op not in ("SET_OP_UNION_ALL", "SET_OP_UNION_DISTINCT"):
            raise Unsupported(f"set operation {op} is not modelled")
        rows = sum(i.rows for i in ins)
        return Node(rows, self._emit(b, ins[0].exprs), None, [], ins[0].table)


def plan_json(plan_bytes: bytes) -> dict:
    from datafusion import substrait as ss
    try:
        return json.loads(ss.Serde.deserialize_bytes(plan_bytes).to_json())
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
    return float(sum(8 for _ in exprs))  # particle schema and aggregates: 8-byte values


def _rowwise(b: dict) -> bool:
    """A project whose expressions look at one row at a time (no window functions)."""
    return "windowFunction" not in json.dumps(b.get("expressions", []))


def is_pure(rel: dict) -> bool:
    """Only read/filter/row-wise project: per-partition results simply concatenate."""
    k, b = next(iter(rel.items()))
    if k == "read":
        return True
    if k == "filter" or (k == "project" and _rowwise(b)):
        return is_pure(b["input"])
    return False


def split_point(rel: dict) -> tuple[list, dict] | None:
    """Path to the highest subtree made only of read/filter/project (the device part of a split).

    Returns (path of keys from the root input to the subtree, subtree) or None when the plan
    has nothing above such a subtree (then split is the same as push-down).
    """
    pure = is_pure
    path: list = []
    cur = rel
    while True:
        k, b = next(iter(cur.items()))
        if pure(cur):
            return (path, cur) if path else None
        if k in ("filter", "project", "fetch", "sort", "aggregate") and "input" in b:
            path = path + [k, "input"]
            cur = b["input"]
        else:
            return None


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
    try:
        node = est.rel(root["input"])
    except Unsupported as e:
        n = len(root.get("names", [])) or 1
        ops = dict.fromkeys(OPS, 0.0)
        ops["rows"] = in_rows
        ops["scan"] = in_rows * n
        return Estimate(rows=in_rows, out_cols=n, out_width=8.0 * n, ops=ops, input_rows=in_rows,
                        input_bytes=in_bytes, objects=objects, supported=False, reason=str(e))
    ops = {k: float(est.ops.get(k, 0.0)) for k in OPS}
    ops["out_cells"] = node.rows * len(node.exprs)
    out = Estimate(rows=node.rows, out_cols=len(node.exprs), out_width=_width(node.exprs, stats), ops=ops,
                   input_rows=in_rows, input_bytes=in_bytes, objects=objects, node_rows=est.node_rows)
    sp = split_point(root["input"])
    lnode = None
    if sp is not None:
        low = Estimator(stats, seed)
        low.fn_names = names
        lnode = low.rel(sp[1])
    if lnode is not None and lnode.exprs:      # a zero-column cut cannot be shipped: no split
        lops = {k: float(low.ops.get(k, 0.0)) for k in OPS}
        lops["out_cells"] = lnode.rows * len(lnode.exprs)
        out.split_ops = lops
        out.split_rows, out.split_cols = lnode.rows, len(lnode.exprs)
        out.split_width = _width(lnode.exprs, stats)
        up = {k: max(0.0, ops[k] - lops[k]) for k in OPS}
        up["rows"] = lnode.rows
        up["scan"] = lnode.rows * len(lnode.exprs)
        up["out_cells"] = ops["out_cells"]
        out.upper_ops = up
    return out
