"""A small, deterministic TPC-H-shaped schema (8 tables, dbgen-style columns).

Not TPC-H's dbgen (not its text grammar or exact distributions), but the same tables,
keys, cardinality ratios, decimal(15,2) money columns, date32 dates, dictionary-like
string columns and key relationships (every lineitem (partkey, suppkey) is a partsupp
row; a third of customers place no orders), so joins, decimals, dates and LIKE predicates
are exercised the way the 22 TPC-H queries exercise them. Same ``sf`` and ``seed`` ->
same tables on any machine.
"""

from __future__ import annotations

import datetime as dt

import numpy as np
import pyarrow as pa

from colony.data.layout import write_tables
from colony.errors import DataError

MONEY = pa.decimal128(15, 2)
REGIONS = ["AFRICA", "AMERICA", "ASIA", "EUROPE", "MIDDLE EAST"]
NATIONS = [("ALGERIA", 0), ("ARGENTINA", 1), ("BRAZIL", 1), ("CANADA", 1), ("EGYPT", 4), ("ETHIOPIA", 0),
           ("FRANCE", 3), ("GERMANY", 3), ("INDIA", 2), ("INDONESIA", 2), ("IRAN", 4), ("IRAQ", 4),
           ("JAPAN", 2), ("JORDAN", 4), ("KENYA", 0), ("MOROCCO", 0), ("MOZAMBIQUE", 0), ("PERU", 1),
           ("CHINA", 2), ("ROMANIA", 3), ("SAUDI ARABIA", 4), ("VIETNAM", 2), ("RUSSIA", 3),
           ("UNITED KINGDOM", 3), ("UNITED STATES", 1)]
SEGMENTS = ["AUTOMOBILE", "BUILDING", "FURNITURE", "MACHINERY", "HOUSEHOLD"]
PRIORITIES = ["1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECIFIED", "5-LOW"]
INSTRUCT = ["DELIVER IN PERSON", "COLLECT COD", "NONE", "TAKE BACK RETURN"]
MODES = ["REG AIR", "AIR", "RAIL", "SHIP", "TRUCK", "MAIL", "FOB"]
COLORS = ["almond", "antique", "aquamarine", "azure", "beige", "bisque", "black", "blanched", "blue", "blush",
          "brown", "burlywood", "burnished", "chartreuse", "chiffon", "chocolate", "coral", "cornflower",
          "cornsilk", "cream", "cyan", "dark", "deep", "dim", "dodger", "drab", "firebrick", "floral", "forest",
          "frosted", "gainsboro", "ghost", "goldenrod", "green", "grey", "honeydew", "hot", "indian", "ivory",
          "khaki", "lace", "lavender", "lawn", "lemon", "light", "lime", "linen", "magenta", "maroon", "medium",
          "metallic", "midnight", "mint", "misty", "moccasin", "navajo", "navy", "olive", "orange", "orchid",
          "pale", "papaya", "peach", "peru", "pink", "plum", "powder", "puff", "purple", "red", "rose", "rosy",
          "royal", "saddle", "salmon", "sandy", "seashell", "sienna", "sky", "slate", "smoke", "snow", "spring",
          "steel", "tan", "thistle", "tomato", "turquoise", "violet", "wheat", "white", "yellow"]
TYPE1 = ["STANDARD", "SMALL", "MEDIUM", "LARGE", "ECONOMY", "PROMO"]
TYPE2 = ["ANODIZED", "BURNISHED", "PLATED", "POLISHED", "BRUSHED"]
TYPE3 = ["TIN", "NICKEL", "BRASS", "STEEL", "COPPER"]
CONT1 = ["SM", "LG", "MED", "JUMBO", "WRAP"]
CONT2 = ["CASE", "BOX", "BAG", "JAR", "PKG", "PACK", "CAN", "DRUM"]
WORDS = ["furiously", "quickly", "carefully", "blithely", "slyly", "regular", "express", "final", "ironic",
         "pending", "bold", "even", "special", "requests", "deposits", "packages", "accounts", "theodolites",
         "instructions", "foxes", "pinto", "beans", "dependencies", "asymptotes", "platelets", "ideas"]
EPOCH = dt.date(1970, 1, 1)
START = (dt.date(1992, 1, 1) - EPOCH).days
END = (dt.date(1998, 8, 2) - EPOCH).days
CURRENT = (dt.date(1995, 6, 17) - EPOCH).days


def _money(cents: np.ndarray) -> pa.Array:
    """decimal(15,2) straight from integer cents (16-byte little-endian two's complement)."""
    cents = np.asarray(cents, dtype=np.int64)
    words = np.stack([cents, np.where(cents < 0, -1, 0).astype(np.int64)], axis=1)
    return pa.Array.from_buffers(MONEY, len(cents), [None, pa.py_buffer(words.tobytes())])


def _date(days: np.ndarray) -> pa.Array:
    return pa.array(np.asarray(days, dtype=np.int32), pa.date32())


def _pick(rng, words: list[str], n: int) -> np.ndarray:
    return np.asarray(words, dtype=object)[rng.integers(0, len(words), n)]


def _text(rng, n: int, k: int = 4, special: tuple[str, float] | None = None) -> pa.Array:
    """k random words per row; ``special`` = (phrase, fraction) planted for LIKE '%a%b%' filters."""
    w = np.asarray(WORDS, dtype=object)
    cols = [w[rng.integers(0, len(WORDS), n)] for _ in range(k)]
    out = cols[0]
    for c in cols[1:]:
        out = out + " " + c
    if special:
        hit = rng.random(n) < special[1]
        out = np.where(hit, out + " " + special[0], out)
    return pa.array(out.tolist(), pa.string())


def _names(prefix: str, keys: np.ndarray) -> pa.Array:
    return pa.array([f"{prefix}#{k:09d}" for k in keys.tolist()], pa.string())


def _phones(rng, nation: np.ndarray) -> pa.Array:
    a, b, c = rng.integers(100, 1000, len(nation)), rng.integers(100, 1000, len(nation)), rng.integers(
        1000, 10000, len(nation))
    return pa.array([f"{n + 10}-{x}-{y}-{z}" for n, x, y, z in zip(nation.tolist(), a.tolist(), b.tolist(),
                                                                    c.tolist())], pa.string())


def _party(rng, p: str, label: str, n: int, extra: dict) -> pa.Table:
    """supplier / customer: key, name, address, nation, phone (country code = nation + 10), balance."""
    keys = np.arange(1, n + 1)
    nat = rng.integers(0, 25, n)
    return pa.table({f"{p}_{p}{'uppkey' if p == 's' else 'ustkey'}": pa.array(keys, pa.int64()),
                     f"{p}_name": _names(label, keys), f"{p}_address": _text(rng, n, 2),
                     f"{p}_nationkey": pa.array(nat, pa.int64()), f"{p}_phone": _phones(rng, nat),
                     f"{p}_acctbal": _money(rng.integers(-99_999, 999_999, n)), **extra})


def tables(sf: float = 0.01, seed: int = 0) -> dict[str, pa.Table]:
    """The 8 tables at scale factor ``sf`` (sf=1: 6 M lineitems; sf=0.01: about 60 k)."""
    if not 0 < sf <= 10:
        raise DataError(f"scale factor {sf} out of range; use 0 < sf <= 10")
    rng = np.random.Generator(np.random.PCG64DXSM(seed))
    n_s, n_c, n_p = max(10, int(10_000 * sf)), max(30, int(150_000 * sf)), max(40, int(200_000 * sf))
    n_o = max(100, int(1_500_000 * sf))
    out: dict[str, pa.Table] = {}
    out["region"] = pa.table({"r_regionkey": pa.array(range(5), pa.int64()), "r_name": REGIONS,
                              "r_comment": _text(rng, 5)})
    out["nation"] = pa.table({"n_nationkey": pa.array(range(25), pa.int64()),
                              "n_name": [n for n, _ in NATIONS],
                              "n_regionkey": pa.array([r for _, r in NATIONS], pa.int64()),
                              "n_comment": _text(rng, 25)})
    out["supplier"] = _party(rng, "s", "Supplier", n_s,
                             {"s_comment": _text(rng, n_s, 5, ("Customer Complaints", 0.01))})
    out["customer"] = _party(rng, "c", "Customer", n_c, {
        "c_mktsegment": pa.array(_pick(rng, SEGMENTS, n_c).tolist(), pa.string()), "c_comment": _text(rng, n_c, 5)})
    pk = np.arange(1, n_p + 1)
    names = _pick(rng, COLORS, n_p)
    for _ in range(4):
        names = names + " " + _pick(rng, COLORS, n_p)
    m = rng.integers(1, 6, n_p)
    retail = (90_000 + (pk // 10) % 20_001 + 100 * (pk % 1_000))     # dbgen's formula, in cents
    out["part"] = pa.table({
        "p_partkey": pa.array(pk, pa.int64()), "p_name": pa.array(names.tolist(), pa.string()),
        "p_mfgr": pa.array([f"Manufacturer#{v}" for v in m.tolist()], pa.string()),
        "p_brand": pa.array([f"Brand#{a}{b}" for a, b in zip(m.tolist(), rng.integers(1, 6, n_p).tolist())],
                            pa.string()),
        "p_type": pa.array((_pick(rng, TYPE1, n_p) + " " + _pick(rng, TYPE2, n_p) + " "
                            + _pick(rng, TYPE3, n_p)).tolist(), pa.string()),
        "p_size": pa.array(rng.integers(1, 51, n_p), pa.int32()),
        "p_container": pa.array((_pick(rng, CONT1, n_p) + " " + _pick(rng, CONT2, n_p)).tolist(), pa.string()),
        "p_retailprice": _money(retail), "p_comment": _text(rng, n_p, 2)})
    # four suppliers per part, dbgen's spread
    ps_p = np.repeat(pk, 4)
    i = np.tile(np.arange(4), n_p)
    ps_s = (ps_p + i * (n_s // 4 + (ps_p - 1) // n_s)) % n_s + 1
    out["partsupp"] = pa.table({
        "ps_partkey": pa.array(ps_p, pa.int64()), "ps_suppkey": pa.array(ps_s, pa.int64()),
        "ps_availqty": pa.array(rng.integers(1, 10_000, len(ps_p)), pa.int32()),
        "ps_supplycost": _money(rng.integers(100, 100_001, len(ps_p))), "ps_comment": _text(rng, len(ps_p), 5)})
    # orders: sparse keys like dbgen (8 of every 32), customers with custkey % 3 != 0
    ok = (np.arange(n_o) // 8) * 32 + np.arange(n_o) % 8 + 1
    ck = np.arange(1, n_c + 1)
    active = ck[ck % 3 != 0]
    o_cust = active[rng.integers(0, len(active), n_o)]
    o_date = rng.integers(START, END - 151, n_o)
    nl = rng.integers(1, 8, n_o)
    lo = np.repeat(np.arange(n_o), nl)
    n_l = len(lo)
    l_line = np.arange(n_l) - np.repeat(np.cumsum(nl) - nl, nl) + 1
    l_part = rng.integers(1, n_p + 1, n_l)
    j = rng.integers(0, 4, n_l)
    l_supp = (l_part + j * (n_s // 4 + (l_part - 1) // n_s)) % n_s + 1
    qty = rng.integers(1, 51, n_l)
    price = qty * retail[l_part - 1]
    disc = rng.integers(0, 11, n_l)
    tax = rng.integers(0, 9, n_l)
    ship = o_date[lo] + rng.integers(1, 122, n_l)
    commit = o_date[lo] + rng.integers(30, 91, n_l)
    receipt = ship + rng.integers(1, 31, n_l)
    rflag = np.where(receipt <= CURRENT, np.where(rng.random(n_l) < 0.5, "R", "A"), "N")
    lstatus = np.where(ship > CURRENT, "O", "F")
    out["lineitem"] = pa.table({
        "l_orderkey": pa.array(ok[lo], pa.int64()), "l_partkey": pa.array(l_part, pa.int64()),
        "l_suppkey": pa.array(l_supp, pa.int64()), "l_linenumber": pa.array(l_line, pa.int32()),
        "l_quantity": _money(qty * 100), "l_extendedprice": _money(price), "l_discount": _money(disc),
        "l_tax": _money(tax), "l_returnflag": pa.array(rflag.tolist(), pa.string()),
        "l_linestatus": pa.array(lstatus.tolist(), pa.string()), "l_shipdate": _date(ship),
        "l_commitdate": _date(commit), "l_receiptdate": _date(receipt),
        "l_shipinstruct": pa.array(_pick(rng, INSTRUCT, n_l).tolist(), pa.string()),
        "l_shipmode": pa.array(_pick(rng, MODES, n_l).tolist(), pa.string()), "l_comment": _text(rng, n_l, 3)})
    # order totals and status from their lines
    gross = price * (100 - disc) * (100 + tax) // 10_000
    total = np.bincount(lo, weights=gross, minlength=n_o).astype(np.int64)
    n_f = np.bincount(lo, weights=(lstatus == "F"), minlength=n_o)
    status = np.where(n_f == nl, "F", np.where(n_f == 0, "O", "P"))
    out["orders"] = pa.table({
        "o_orderkey": pa.array(ok, pa.int64()), "o_custkey": pa.array(o_cust, pa.int64()),
        "o_orderstatus": pa.array(status.tolist(), pa.string()), "o_totalprice": _money(total),
        "o_orderdate": _date(o_date), "o_orderpriority": pa.array(_pick(rng, PRIORITIES, n_o).tolist(), pa.string()),
        "o_clerk": _names("Clerk", rng.integers(1, max(2, int(1000 * sf)) + 1, n_o)),
        "o_shippriority": pa.array(np.zeros(n_o, np.int32), pa.int32()),
        "o_comment": _text(rng, n_o, 4, ("special requests", 0.02))})
    return out


def write(directory: str, sf: float = 0.01, seed: int = 0) -> dict[str, str]:
    """The tables in the ``--data DIR`` layout (:func:`colony.data.layout.write_tables`)."""
    return write_tables(directory, tables(sf, seed))
