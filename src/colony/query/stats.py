"""Per object and column statistics: KLL quantile sketches and Theta distinct counts.

Built when an object is put (ObjectStore ``on_put`` hook), merged across the objects a
query reads, and persisted next to the object in the store's ``__stats__`` pool so they
live and die with it. The estimator only sees :class:`TableStats`.
"""

from __future__ import annotations

import bisect
import hashlib

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field

import datasketches as ds
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from colony.errors import ColonyError, StatsError

KLL_K = 400          # rank error ~0.7 %: small selectivities (Q1-like 1 %) stay usable
# a string column's sketch is also the weighted sample LIKE, substring etc. are evaluated on:
# at k=400 it kept ~1,100 of 40k keys and a 3 % LIKE's estimate ranged 0.44-1.8x over 1,500
# sketch builds (sd 20 %); at 800, 0.64-1.45x (sd 11 %). 1600 (0.80-1.27x) doubled the
# Python-side cost of reading its items back (TPC-H sf 0.05: stats load 77 -> 191 ms, a
# query's first look at its string columns up to +15 ms)
KLL_ITEMS_K = 800
THETA_LG_K = 12      # 4096 retained hashes, ~1.6 % relative error on distinct counts
# frequent items (Misra-Gries): a value's count is known within 3.5 / 2^10 of the values fed,
# so any value above 0.34 % of a column is kept with bounds on its count
FREQ_LG_K = 10
# an object's values are all fed when it has at most this many distinct values (exact counts);
# above it only its most frequent ones: those above the average count, or above the power of
# two times it that leaves at most FREQ_ALL, which the sketch holds without purging. A point
# estimate reads only those from the sketch (the rest get 1/NDV); feeding every value of a
# 1M-row column cost ~0.45 s, a quarter of its statistics
FREQ_ALL = 512
HIST_BINS = 512      # equi-depth bins drawn from the KLL sketch; uniform within a bin
# the smallest and largest values of a number column kept exactly (ColumnStats.low/high): a
# KLL sketch cannot tell ranks beyond ~1/1000 apart, and the histogram's outer bins, uniform,
# put the one-in-100,000 tail of a long-tailed column at 10-100x its rows
TAIL_K = 1024
# an object of at most this many rows keeps its number columns' values, in row order
# (ColumnStats.values): the joint distribution of a small table's columns, which independent
# sketches lose. A range join on a 30-row windows table (`r.ts >= w.start and r.ts < w.stop`)
# drew start and stop independently and priced 8x the rows it makes; dimension tables (TPC-H's
# supplier, nation; nycflights13's airports, planes) are this size. 4096 values are 32 kB
SMALL_ROWS = 4096
# rows of every table drawn at random and kept whole, every column's value from the same row
# (TableStats.sample): what a filter on a dimension keeps of its key (TPC-DS filters date_dim
# on d_year or d_moy, and which d_date_sk survive decides how much of a fact table joins)
SAMPLE_ROWS = 4096
# Monte-Carlo draws kept per column (see ColumnStats._drawn): 160k draws are 1.3 MB
DRAWS_KEPT = 2
_draws_lock = threading.Lock()
STATS_POOL = "__stats__"


class Utf8SerDe(ds.PyObjectSerDe):
    """Strings of a KLL items sketch as UTF-8 with their byte length. datasketches' own
    ``PyStringsSerDe`` writes a character count and one byte a character: a string with a
    character past U+00FF could not be persisted (a put of TPC-DS-like data with a CJK name
    failed) and one with an accented letter was not read back (TPC-DS ``customer``'s
    "CÔTE D'IVOIRE"). ASCII is written the same way by both; a string one of those older
    statistics stored in Latin-1 is read as Latin-1."""

    def get_size(self, item: str) -> int:
        return 4 + len(item.encode())

    def to_bytes(self, item: str) -> bytes:
        b = item.encode()
        return len(b).to_bytes(4, "little") + b

    def from_bytes(self, data: bytes, offset: int) -> tuple[str, int]:
        n = int.from_bytes(data[offset:offset + 4], "little")
        raw = bytes(data[offset + 4:offset + 4 + n])
        if len(raw) != n:
            raise StatsError("a string sketch's item runs past its buffer")
        try:
            return raw.decode(), 4 + n
        except UnicodeDecodeError:
            return raw.decode("latin-1"), 4 + n


def _numeric(t: pa.DataType) -> bool:
    """Types whose values map onto a number line (KLL doubles sketch)."""
    return (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)
            or pa.types.is_decimal(t) or pa.types.is_temporal(t))


def _stringy(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t)


def sketchable(t: pa.DataType) -> bool:
    """A column type statistics sketch: not nested (its values are not one number or string)."""
    if isinstance(t, pa.ExtensionType):
        t = t.storage_type
    if pa.types.is_dictionary(t):
        t = t.value_type
    return not pa.types.is_nested(t)


def _in_row_order(arr: pa.Array, vals: np.ndarray) -> np.ndarray:
    """``vals`` (:func:`as_numbers` of ``arr``: its non-null values) back in row order, NaN for null."""
    if not arr.null_count:
        return vals.copy()
    out = np.full(len(arr), np.nan)
    out[arr.is_valid().to_numpy(zero_copy_only=False)] = vals
    return out


def _micros(arr: pa.Array, us_type: pa.DataType) -> np.ndarray:
    return pc.cast(arr, us_type, safe=False).cast(pa.int64()).to_numpy(zero_copy_only=False).astype(np.float64)


def as_numbers(arr: pa.Array) -> np.ndarray:
    """Non-null values as float64 on the number line literals are read on: decimals by value,
    dates in days since 1970-01-01, timestamps/times/durations in microseconds."""
    t = arr.type
    arr = pc.drop_null(arr)
    if pa.types.is_date32(t):
        return arr.cast(pa.int32()).to_numpy(zero_copy_only=False).astype(np.float64)
    if pa.types.is_date64(t):
        return arr.cast(pa.int64()).to_numpy(zero_copy_only=False) / 86_400_000.0
    # nanoseconds truncated to microseconds (a safe cast refused pandas' nanosecond timestamps)
    if pa.types.is_timestamp(t):
        return _micros(arr, pa.timestamp("us", t.tz))
    if pa.types.is_time(t):
        return _micros(arr, pa.time64("us"))
    if pa.types.is_duration(t):
        return _micros(arr, pa.duration("us"))
    if pa.types.is_decimal(t) or pa.types.is_boolean(t):
        return arr.cast(pa.float64()).to_numpy(zero_copy_only=False)
    return arr.to_numpy(zero_copy_only=False).astype(np.float64)


def _smallest(parts: list) -> np.ndarray:
    """The TAIL_K smallest of the values in ``parts`` (arrays), ascending (all when no more)."""
    vals = np.asarray(parts[0] if len(parts) == 1 else np.concatenate(parts), dtype=np.float64)
    return np.sort(vals if len(vals) <= TAIL_K else np.partition(vals, TAIL_K - 1)[:TAIL_K])


def _largest(parts: list) -> np.ndarray:
    """The TAIL_K largest of the values in ``parts`` (arrays), ascending (all when no more)."""
    vals = np.asarray(parts[0] if len(parts) == 1 else np.concatenate(parts), dtype=np.float64)
    k = len(vals)
    return np.sort(vals if k <= TAIL_K else np.partition(vals, k - TAIL_K)[k - TAIL_K:])


def _frequent(values, counts: np.ndarray, key) -> ds.frequent_strings_sketch:
    """A frequent-items sketch of one object's distinct values (a NumPy or Arrow array) and
    their counts (see FREQ_ALL)."""
    sk = ds.frequent_strings_sketch(FREQ_LG_K)
    n = len(counts)
    if n <= FREQ_ALL:
        pick = np.arange(n)
    else:
        floor = counts.sum() / n            # doubled until at most FREQ_ALL values are above it
        pick = np.flatnonzero(counts > floor)
        while len(pick) > FREQ_ALL:
            floor *= 2
            pick = pick[counts[pick] > floor]
    if len(pick):
        vals = values.take(pick)
        vals = vals.tolist() if isinstance(vals, np.ndarray) else vals.to_pylist()
        up = sk.update
        for v, c in zip(vals, counts[pick].tolist()):
            up(key(v) if key is not None else v, c)
    return sk


def _interp(x: float, xp: list, fp: list) -> float:
    """np.interp of one value, step for step (numpy's arr_interp; the same float operations,
    so the same result), without numpy's per-call cost: an estimate reads a few of these."""
    if x != x:
        return x
    j = bisect.bisect_right(xp, x) - 1
    if j < 0:
        return fp[0]
    if j >= len(xp) - 1:
        return fp[-1]
    if xp[j] == x:
        return fp[j]
    slope = (fp[j + 1] - fp[j]) / (xp[j + 1] - xp[j])
    out = slope * (x - xp[j]) + fp[j]
    if out != out:                            # nan one way: numpy tries the other
        out = slope * (x - xp[j + 1]) + fp[j + 1]
        if out != out and fp[j] == fp[j + 1]:
            out = fp[j]
    return out


def stored_order(vals: np.ndarray) -> tuple:
    """(rising pairs, falling pairs, new highs, new lows) of ``vals`` in stored order: adjacent
    pairs that rise or fall, and values above every value before them, or below. Mergeable
    over objects read one after another (:func:`_merge_order`)."""
    n = len(vals)
    if n < 2:
        return (0, 0, n, n)
    d = np.diff(vals)
    up, down = int(np.count_nonzero(d > 0)), int(np.count_nonzero(d < 0))
    hi = np.fmax.accumulate(vals)
    highs = 1 + int(np.count_nonzero(vals[1:] > hi[:-1]))
    lo = np.fmin.accumulate(vals, out=hi)
    lows = 1 + int(np.count_nonzero(vals[1:] < lo[:-1]))
    return (up, down, highs, lows)


def _merge_order(parts: list) -> tuple | None:
    """The stored order of objects read one after another (in ``parts``' order, the order the
    engine registers them): pairs add up (the pairs across objects are left out); an object's
    new highs count where they beat the objects before it, the share of its values above their
    highest (all when it starts above it, none when it ends below it), lows alike."""
    if any(p.order is None for p in parts):
        return None
    up = sum(p.order[0] for p in parts)
    down = sum(p.order[1] for p in parts)
    highs = lows = 0.0
    top, bottom = -np.inf, np.inf
    for p in parts:
        if p.kll is None or p.kll.is_empty():
            continue
        lo, hi = p.kll.get_min_value(), p.kll.get_max_value()
        if lo > top:
            highs += p.order[2]
        elif hi > top:
            highs += p.order[2] * (1.0 - p.kll.get_rank(top))
        if hi < bottom:
            lows += p.order[3]
        elif lo < bottom:
            lows += p.order[3] * p.kll.get_rank(bottom)
        top, bottom = max(top, hi), min(bottom, lo)
    return (up, down, round(highs), round(lows))


@dataclass
class ColumnStats:
    """One column's sketches (mergeable) plus a cached equi-depth histogram."""

    kll: ds.kll_doubles_sketch | None
    theta: object                     # update_theta_sketch or compact_theta_sketch
    rows: int
    nulls: int = 0
    items: ds.kll_items_sketch | None = None   # strings: quantiles, and a weighted sample for LIKE etc.
    freq: ds.frequent_strings_sketch | None = None   # heavy hitters' counts (numbers keyed by repr(float))
    # the stored order of a number column (see :func:`stored_order`): (rising pairs, falling
    # pairs, new highs, new lows); None for strings and for statistics persisted before it
    order: tuple | None = None
    # numbers: the TAIL_K smallest and largest non-null values, each ascending (all of them
    # when the column has no more); None for strings and statistics persisted before them
    low: np.ndarray | None = None
    high: np.ndarray | None = None
    # numbers of an object of at most SMALL_ROWS rows: every value in row order, NaN for null
    # (aligned across the object's columns, and across a merge of such objects); else None
    values: np.ndarray | None = None
    _edges: np.ndarray | None = field(default=None, repr=False)
    _ranks: np.ndarray | None = field(default=None, repr=False)
    _derived: dict = field(default_factory=dict, repr=False)   # estimator results that depend on this column only
    _lists: tuple | None = field(default=None, repr=False)     # the histogram as Python lists (cdf)

    @classmethod
    def build(cls, arr: pa.ChunkedArray | pa.Array) -> "ColumnStats":
        arr = arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr
        if pa.types.is_dictionary(arr.type):      # sketched as its values (a categorical's strings)
            arr = arr.dictionary_decode()
        nulls = arr.null_count
        theta = ds.update_theta_sketch(THETA_LG_K)
        kll = items = freq = order = low = high = values = None
        if _numeric(arr.type):
            vals = as_numbers(arr)
            if len(arr) <= SMALL_ROWS:             # every value in row order, NaN for null
                values = _in_row_order(arr, vals)
            kll = ds.kll_doubles_sketch(KLL_K)
            if len(vals):
                kll.update(np.array(vals, dtype=np.float64, copy=True))
            up = theta.update
            # hash every number as a float64, so equal keys of different integer/decimal types meet;
            # each distinct value once (Theta ignores repeats anyway)
            uniq, counts = np.unique(vals, return_counts=True)
            for v in uniq.tolist():
                up(v)
            freq = _frequent(uniq, counts, key=repr)      # float64 already (as_numbers)
            order = stored_order(vals)
            low, high = _smallest([vals]), _largest([vals])
        elif pa.types.is_binary(arr.type) or pa.types.is_large_binary(arr.type) \
                or pa.types.is_fixed_size_binary(arr.type):
            up = theta.update          # bytes are not text: count distinct values by a digest
            for v in pc.drop_null(arr).to_pylist():
                up(hashlib.blake2b(v, digest_size=8).hexdigest())
        else:
            strs = pc.drop_null(arr)
            if _stringy(arr.type):
                items = ds.kll_items_sketch(KLL_ITEMS_K)
                iup = items.update
            else:
                strs, iup = strs.cast(pa.string()) if not pa.types.is_binary(arr.type) else strs, None
            up = theta.update
            vc = pc.value_counts(strs)
            for v in vc.field("values").to_pylist():
                up(v)
            if iup is not None:
                freq = _frequent(vc.field("values"), vc.field("counts").to_numpy(), key=None)
                for v in strs.to_pylist():
                    iup(v)
        return cls(kll=kll, theta=theta.compact(), rows=len(arr), nulls=nulls, items=items, freq=freq,
                   order=order, low=low, high=high, values=values)

    # -- combination ---------------------------------------------------------
    @staticmethod
    def merge_all(parts: list["ColumnStats"]) -> "ColumnStats":
        union = ds.theta_union(THETA_LG_K)
        kll = items = freq = None
        for p in parts:
            union.update(p.theta)
            if p.freq is not None:
                if freq is None:
                    freq = ds.frequent_strings_sketch(FREQ_LG_K)
                freq.merge(p.freq)
            if p.kll is not None:
                if kll is None:
                    kll = ds.kll_doubles_sketch(KLL_K)
                kll.merge(p.kll)
            if p.items is not None:
                if items is None:
                    items = ds.kll_items_sketch(KLL_ITEMS_K)
                items.merge(p.items)
        low = high = values = None
        if parts and all(p.high is not None for p in parts):
            low, high = _smallest([p.low for p in parts]), _largest([p.high for p in parts])
        if parts and all(p.values is not None for p in parts) and sum(map(len, (p.values for p in parts))) \
                <= SMALL_ROWS:
            values = np.concatenate([p.values for p in parts])
        return ColumnStats(kll=kll, theta=union.get_result(), rows=sum(p.rows for p in parts),
                           nulls=sum(p.nulls for p in parts), items=items, freq=freq, order=_merge_order(parts),
                           low=low, high=high, values=values)

    # -- queries ------------------------------------------------------------
    @property
    def ndv(self) -> float:
        return max(1.0, float(self.theta.get_estimate())) if self.rows else 0.0

    @property
    def lo(self) -> float:
        return float(self.kll.get_min_value()) if self.kll is not None and not self.kll.is_empty() else float("nan")

    @property
    def hi(self) -> float:
        return float(self.kll.get_max_value()) if self.kll is not None and not self.kll.is_empty() else float("nan")

    def _hist(self) -> tuple[np.ndarray, np.ndarray]:
        if self._edges is None:
            ranks = np.linspace(0.0, 1.0, HIST_BINS + 1)
            q = np.asarray(self.kll.get_quantiles(ranks[1:-1].tolist()), dtype=np.float64)
            edges = np.concatenate([[self.lo], q, [self.hi]])
            # collapse repeated edges (heavy values) so interpolation stays monotone
            edges, idx = np.unique(edges, return_index=True)
            r = ranks[idx]
            if len(edges) == 1:          # constant column
                edges = np.array([edges[0], np.nextafter(edges[0], np.inf)])
                r = np.array([0.0, 1.0])
            r[-1] = 1.0
            self._edges, self._ranks = edges, r
        return self._edges, self._ranks

    def cdf(self, v: float) -> float:
        """Fraction of non-null values < v (uniform within equi-depth bins)."""
        if self.kll is None or self.kll.is_empty():
            return 0.5
        if self._lists is None:
            e, r = self._hist()
            self._lists = (e.tolist(), r.tolist())
        e, r = self._lists
        v = float(v)
        if v <= e[0]:
            return 0.0
        if v > e[-1]:
            return 1.0
        if self._tails is not None:
            low, high, n = self._tails
            if v > high[0]:         # every value >= v is among the largest kept: counted exactly
                return 1.0 - (len(high) - bisect.bisect_left(high, v)) / n
            if v <= low[-1]:        # every value < v is among the smallest kept
                return bisect.bisect_left(low, v) / n
        return _interp(v, e, r)

    def cdfs(self, v: np.ndarray) -> np.ndarray:
        """:meth:`cdf` of many values at once, off the histogram alone (not the kept extremes)."""
        if self.kll is None or self.kll.is_empty():
            return np.full(np.shape(v), 0.5)
        e, r = self._hist()
        return np.interp(np.asarray(v, dtype=np.float64), e, r)

    def quantile(self, levels: np.ndarray) -> np.ndarray:
        """The values at fractions ``levels`` of the non-null values (the inverse of
        :meth:`cdf`): a kept extreme where the level falls among them, the histogram between."""
        levels = np.asarray(levels, dtype=np.float64)
        e, r = self._hist()
        out = np.interp(levels, r, e)
        if self._tails is not None:          # the kept extremes themselves (arrays), not cdf's lists
            n, low, high = self._tails[2], self.low, self.high
            rank = np.minimum((levels * n).astype(np.int64), n - 1)
            top = rank >= n - len(high)
            out[top] = high[rank[top] - (n - len(high))]
            bottom = rank < len(low)
            out[bottom] = low[rank[bottom]]
        return out

    @property
    def _tails(self):
        """(smallest, largest, non-null count) as lists for :meth:`cdf`, kept; None without them."""
        got = self._derived.get("tails", False)
        if got is False:
            n = self.rows - self.nulls
            got = self._derived["tails"] = ((self.low.tolist(), self.high.tolist(), n)
                                            if self.high is not None and len(self.high) and n > 0 else None)
        return got

    def few_valued(self) -> bool:
        """At most 200 distinct numbers: the quantile sketch holds each one's mass, so ranges
        are read as sums of masses, not off a histogram that is uniform within a bin."""
        got = self._derived.get("few")
        if got is None:
            got = self._derived["few"] = self.kll is not None and self.ndv <= 200
        return got

    def rank(self, v: float, inclusive: bool) -> float:
        """Fraction of non-null values <= v (inclusive) or < v, from the quantile sketch."""
        if v == float("inf"):
            return 1.0
        if v == float("-inf"):
            return 0.0
        return float(self.kll.get_rank(float(v), inclusive))

    def weighted_items(self) -> tuple[np.ndarray, np.ndarray]:
        """The string sketch's retained items and their weights (a weighted sample)."""
        if getattr(self, "_witems", None) is None:
            pairs = list(self.items) if self.items is not None and not self.items.is_empty() else []
            self._witems = (np.array([p[0] for p in pairs], dtype=object),
                            np.array([p[1] for p in pairs], dtype=np.float64))
        return self._witems

    def heavy_strings(self) -> frozenset:
        """The string values the frequent-items sketch holds (each object's values above its
        mean count), kept: the values a row-weighted sample over-represents."""
        got = self._derived.get("heavy")
        if got is None:
            got = frozenset() if self.freq is None or self.kll is not None else frozenset(
                it[0] for it in self.freq.get_frequent_items(ds.frequent_items_error_type.NO_FALSE_NEGATIVES))
            self._derived["heavy"] = got
        return got

    def mean_str_len(self) -> float | None:
        """Mean length of the strings in the weighted sample (None without one), kept: the
        estimator prices result widths with it on every projection it walks."""
        if getattr(self, "_mean_len", False) is False:
            items, w = self.weighted_items()
            self._mean_len = float(np.dot([len(x) for x in items], w) / w.sum()) if len(items) else None
        return self._mean_len

    def str_cdf(self, v: str) -> float:
        """Fraction of non-null strings < v."""
        if self.items is None or self.items.is_empty():
            return 0.5
        return float(self.items.get_rank(v))

    def point(self, v) -> float:
        """Fraction of non-null values equal to v. A value the frequent-items sketch holds with a
        count gets 1/NDV's count clamped into its bounds (a heavy hitter its own count); a value
        it does not hold while its counts are exact (nothing dropped) 0; any other value 1/NDV,
        numbers inside [min, max] only, and those of a column with at most 200 values their mass
        in the quantile sketch."""
        nonnull = self.rows - self.nulls
        if self.kll is not None:
            if not self.lo <= float(v) <= self.hi:
                return 0.0
            if self.few_valued():
                return max(self.rank(v, True) - self.rank(v, False), 0.0)
            key = repr(float(v))
        elif isinstance(v, str):
            key = v
        else:
            key = None
        if not nonnull:
            return 0.0
        uniform = nonnull / self.ndv
        if self.freq is not None and key is not None:
            lb = self.freq.get_lower_bound(key)
            if lb > 0:
                return min(1.0, max(lb, min(self.freq.get_upper_bound(key), uniform)) / nonnull)
            if self.freq.get_upper_bound(key) == 0 and self.freq.total_weight >= nonnull:
                # every value went in with its count (at most FREQ_ALL of them an object) and
                # none was dropped: a value the sketch does not hold is not in the column (TPC-DS
                # at sf 0.1 asks for `r_reason_desc = 'reason 28'` of 3 reasons and
                # `c_birth_country` values no customer has: 1/NDV made q93's join 38k rows where
                # there are none)
                return 0.0
        return 1.0 / self.ndv

    def _drawn(self, kind: str, n: int, rng: np.random.Generator, draw) -> np.ndarray:
        """``draw(n, rng)``, kept: the estimator seeds a fresh generator for every Monte-Carlo
        selectivity, so a column is drawn from the same generator state again and again (each
        query of a template, a filter's pre-selection and its selectivity, TPC-H's joins over
        one table: 160k draws a column cost 0.5-3.5 ms). Keyed by the generator's state, and
        the generator is left where the draw would have left it, so the values and every later
        draw are exactly those a fresh draw makes. Read-only arrays: none is changed in place."""
        bg = rng.bit_generator
        if DRAWS_KEPT <= 0 or not isinstance(bg, np.random.SFC64):
            return draw(n, rng)
        st = bg.state
        key = (kind, n, st["state"]["state"].tobytes(), st["has_uint32"], st["uinteger"])
        kept = self._derived.get("draws")
        hit = kept.get(key) if kept is not None else None
        if hit is not None:
            bg.state = hit[1]
            return hit[0]
        out = draw(n, rng)
        out.flags.writeable = False
        with _draws_lock:
            kept = self._derived.setdefault("draws", {})
            if len(kept) >= DRAWS_KEPT:
                kept.pop(next(iter(kept)))
            kept[key] = (out, bg.state)
        return out

    def sample_codes(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """n draws of indices into :meth:`weighted_items` (:meth:`_draw_codes`), kept per
        generator state (:meth:`_drawn`)."""
        return self._drawn("codes", n, rng, self._draw_codes)

    def _draw_codes(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """n draws of indices into :meth:`weighted_items`, exactly those ``Generator.choice``
        draws from the same stream, by a guide table: a uniform's bucket of width 1/M names its
        index outright unless a step of the cdf falls inside that bucket, and only those few
        draws are searched (searching all of them cost ~10 ms per 160k draws)."""
        items, w = self.weighted_items()
        if not len(items):
            raise StatsError("column has no values to sample")
        if getattr(self, "_cdf", None) is None:
            # Generator.choice(m, n, p=p) is cdf = p.cumsum(); cdf /= cdf[-1];
            # cdf.searchsorted(random(n), side="right")
            cdf = (w / w.sum()).cumsum()
            cdf /= cdf[-1]
            m = 1 << max(12, (16 * len(cdf)).bit_length())      # a power of two: u * m and j / m are exact
            self._cdf = cdf
            self._guide = (m, cdf.searchsorted(np.arange(m + 1) / m, side="right"))
        m, guide = self._guide
        u = rng.random(n)
        j = (u * m).astype(np.int64)
        out = guide[j]
        amb = np.flatnonzero(out != guide[j + 1])
        if len(amb):
            out[amb] = self._cdf.searchsorted(u[amb], side="right")
        return out

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """Draw n values from the histogram (for multi-column predicates), by a 4096-step
        inverse-CDF table so sampling costs O(1) per value; strings from the weighted sample.
        Kept per generator state (:meth:`_drawn`)."""
        if self.kll is None:
            return self.weighted_items()[0][self.sample_codes(n, rng)]
        return self._drawn("values", n, rng, self._draw_values)

    def _draw_values(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``inv[i] * (1 - f) + inv[min(i + 1, 4096)] * f`` for u = 4096 * random(n) = i + f,
        with the same roundings, in place and by ``take`` with the next step's table kept
        (160k draws: 3.3 -> 1.5 ms)."""
        if getattr(self, "_inv", None) is None:
            e, r = self._hist()
            inv = np.interp(np.linspace(0.0, 1.0, 4097), r, e)
            self._inv_next = inv[np.minimum(np.arange(4097) + 1, 4096)]
            self._inv = inv
        u = rng.random(n)
        u *= 4096.0
        i = u.astype(np.int64)
        u -= i                      # f, the fraction within step i
        v = self._inv.take(i)
        v *= 1.0 - u
        nxt = self._inv_next.take(i)
        nxt *= u
        v += nxt
        return np.round(v, out=v) if self.integral else v

    @property
    def integral(self) -> bool:
        """Whole numbers only (an integer column: its sketch's quantiles are its own values):
        samples are drawn as whole numbers, so ``id % 10 = 3`` is not estimated at zero."""
        if self.kll is None:
            return False
        got = self._derived.get("integral")
        if got is None:
            e = self._hist()[0]
            e = e[:-1] if len(e) == 2 and e[1] == np.nextafter(e[0], np.inf) else e    # a constant column
            got = self._derived["integral"] = bool(np.all(np.isfinite(e)) and np.all(e == np.round(e)))
        return got

    @property
    def disorder(self) -> float:
        """How far the stored order is from the column's: 0 when stored sorted (either way,
        ties aside), ~1 in no particular order, 1 when unknown. A predicate on a column
        stored sorted keeps one stretch of rows, not rows scattered among dropped ones."""
        if self.order is None:
            return 1.0
        got = self._derived.get("disorder")
        if got is None:
            up, down = self.order[0], self.order[1]
            # against one way (a rise for every fall: none) and against how often adjacent
            # values differ in random order (a column of 12 months stored by date changes 11
            # times in 336k rows, whatever the order of its months)
            pairs = max(self.rows - self.nulls - 1, 1) * (1.0 - 1.0 / max(self.ndv, 1.0))
            got = 0.0 if not up + down else min(2.0 * min(up, down) / (up + down), (up + down) / max(pairs, 1.0))
            got = self._derived["disorder"] = min(got, 1.0)
        return got

    def new_extremes(self, highs: bool) -> float | None:
        """In stored order, how many values exceed every value before them (``highs``), or
        fall below (lows): ~ln(rows) + 0.58 in no particular order, every row when stored
        rising (highs) and one (lows). A top-k's heap takes rows as they beat its bound, so
        this counts its entries (None: unknown)."""
        return None if self.order is None else float(self.order[2 if highs else 3])

    # -- persistence ----------------------------------------------------------
    def to_row(self) -> dict:
        return {"kll": self.kll.serialize() if self.kll is not None else None,
                "theta": self.theta.serialize(), "rows": self.rows, "nulls": self.nulls,
                "items": self.items.serialize(Utf8SerDe()) if self.items is not None else None,
                "freq": self.freq.serialize() if self.freq is not None else None,
                "order": list(self.order) if self.order is not None else None,
                "low": self.low.tobytes() if self.low is not None else None,
                "high": self.high.tobytes() if self.high is not None else None,
                "values": self.values.tobytes() if self.values is not None else None}

    @classmethod
    def from_row(cls, row: dict) -> "ColumnStats":
        kll = ds.kll_doubles_sketch.deserialize(row["kll"]) if row["kll"] is not None else None
        items = row.get("items")
        items = ds.kll_items_sketch.deserialize(items, Utf8SerDe()) if items is not None else None
        freq = row.get("freq")
        freq = ds.frequent_strings_sketch.deserialize(freq) if freq is not None else None
        order = row.get("order")
        low, high, values = row.get("low"), row.get("high"), row.get("values")
        return cls(kll=kll, theta=ds.compact_theta_sketch.deserialize(row["theta"]),
                   rows=row["rows"], nulls=row["nulls"], items=items, freq=freq,
                   order=tuple(order) if order is not None else None,
                   low=np.frombuffer(low, dtype=np.float64) if low is not None else None,
                   high=np.frombuffer(high, dtype=np.float64) if high is not None else None,
                   values=np.frombuffer(values, dtype=np.float64) if values is not None else None)


class MergedColumns(Mapping):
    """The column statistics of several objects' merge, each column merged on first use: a
    query reads a few of a table's columns, and merging them all (TPC-H ``lineitem``'s 16:
    ~3 ms, its comment column alone 0.5 ms) was what the first query on a table paid."""

    def __init__(self, parts: list["TableStats"]) -> None:
        self._parts = parts
        self._names = list(parts[0].columns)
        self._done: dict[str, ColumnStats] = {}
        self._lock = threading.Lock()

    def __getitem__(self, name: str) -> ColumnStats:
        got = self._done.get(name)
        if got is None:
            if name not in self._parts[0].columns:
                raise KeyError(name)
            with self._lock:          # one merge per column, however many threads ask
                got = self._done.get(name)
                if got is None:
                    parts = [p.columns[name] for p in self._parts if name in p.columns]
                    got = ColumnStats.merge_all(parts)
                    if len(parts) < len(self._parts):   # rows of objects without it: not aligned
                        got.values = None
                    self._done[name] = got
        return got

    def get(self, name: str, default=None):
        """Mapping.get without its KeyError round trip: the estimator asks ~20 times a plan."""
        got = self._done.get(name)
        if got is not None:
            return got
        return self[name] if name in self._parts[0].columns else default

    def __iter__(self):
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


def _sample_column(arr: pa.Array) -> np.ndarray | None:
    """A sampled column as the estimator evaluates predicates on it (``_numpy_eval``): numbers
    on the literals' number line (:func:`as_numbers`), NaN for null; strings as Python strings,
    None for null; other types (binary) not kept."""
    if isinstance(arr.type, pa.ExtensionType):
        arr = arr.storage
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    if _numeric(arr.type):
        return _in_row_order(arr, as_numbers(arr))
    if pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type) or pa.types.is_string_view(arr.type):
        return np.array(arr.to_pylist(), dtype=object)
    return None


def row_sample(t: pa.Table, seed: int = 0) -> dict[str, np.ndarray]:
    """Up to :data:`SAMPLE_ROWS` rows of ``t`` in random order (all of a smaller table), each
    kept column's values from the same rows: the joint distribution the per-column sketches
    lose. Random order, so a merge takes a prefix of each object's sample."""
    n = t.num_rows
    rng = np.random.Generator(np.random.SFC64(seed))
    idx = rng.choice(n, SAMPLE_ROWS, replace=False) if n > SAMPLE_ROWS else rng.permutation(n)
    s = t.take(pa.array(idx, pa.int64()))
    out = {}
    for name, f in zip(s.column_names, s.schema):
        if sketchable(f.type):
            v = _sample_column(s.column(name).combine_chunks())
            if v is not None:
                out[name] = v
    return out


def merge_samples(parts: list["TableStats"]) -> dict[str, np.ndarray] | None:
    """The sample of several objects' merge: from each object's sample a prefix in proportion
    to its rows (up to :data:`SAMPLE_ROWS` in all); the columns every one of them keeps. None
    when an object has no sample (statistics persisted before samples)."""
    parts = [p for p in parts if p.rows]
    samples = [p.sample for p in parts]
    if not samples or any(s is None for s in samples):
        return None
    total = sum(p.rows for p in parts)
    take = [int(round(SAMPLE_ROWS * p.rows / total)) for p in parts]     # a prefix past the end is the whole
    names = [n for n in samples[0] if all(n in s for s in samples)]
    return {n: np.concatenate([s[n][:k] for s, k in zip(samples, take)]) for n in names}


@dataclass
class TableStats:
    """Statistics of one logical table (one object, or the merge of many)."""

    rows: int
    columns: Mapping[str, ColumnStats]
    nbytes: int = 0          # serialized (stored) size of the objects
    objects: int = 1
    # rows drawn at random, kept whole (:func:`row_sample`); a merge's is drawn from its
    # parts' on first use. None for statistics persisted before samples
    sample_rows: dict | None = field(default=None, repr=False)
    _parts: list | None = field(default=None, repr=False)
    _sorted: dict = field(default_factory=dict, repr=False)    # column -> its sampled values, sorted
    _derived: dict = field(default_factory=dict, repr=False)   # facts the estimator read off the sample, by key

    @property
    def sample(self) -> dict[str, np.ndarray] | None:
        if self.sample_rows is None and self._parts:
            self.sample_rows, self._parts = merge_samples(self._parts), None
        return self.sample_rows

    def sample_sorted(self, name: str) -> np.ndarray | None:
        """Column ``name``'s non-null sampled values, sorted (once per column)."""
        got = self._sorted.get(name)
        if got is None:
            smp = self.sample
            if not smp or name not in smp or smp[name].dtype == object:
                return None
            v = smp[name]
            got = self._sorted[name] = np.sort(v[~np.isnan(v)])
        return got

    @classmethod
    def build(cls, tables: list[pa.Table], nbytes: int = 0) -> "TableStats":
        """Sketches of every column of a primitive type; a nested one (list, struct, map,
        union) gets none, so the estimator bounds what reads it instead of the whole table
        failing (a list column made every query on its table unplannable)."""
        t = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
        return cls(rows=t.num_rows, columns={n: ColumnStats.build(t.column(n)) for n, f in zip(t.column_names, t.schema)
                                             if sketchable(f.type)},
                   nbytes=nbytes or t.nbytes, objects=1, sample_rows=row_sample(t))

    @staticmethod
    def merge(parts: list["TableStats"]) -> "TableStats":
        if not parts:
            raise StatsError("no statistics to merge: the table has no objects")
        return TableStats(rows=sum(p.rows for p in parts), columns=MergedColumns(parts),
                          nbytes=sum(p.nbytes for p in parts), objects=sum(p.objects for p in parts),
                          _parts=list(parts))

    def to_table(self) -> pa.Table:
        names = list(self.columns)
        rows = [self.columns[n].to_row() for n in names]
        return pa.table({"column": names,
                         "kll": pa.array([r["kll"] for r in rows], pa.binary()),
                         "theta": pa.array([r["theta"] for r in rows], pa.binary()),
                         "items": pa.array([r["items"] for r in rows], pa.binary()),
                         "freq": pa.array([r["freq"] for r in rows], pa.binary()),
                         "rows": pa.array([r["rows"] for r in rows], pa.int64()),
                         "nulls": pa.array([r["nulls"] for r in rows], pa.int64()),
                         "order": pa.array([r["order"] for r in rows], pa.list_(pa.int64())),
                         "low": pa.array([r["low"] for r in rows], pa.binary()),
                         "high": pa.array([r["high"] for r in rows], pa.binary()),
                         "values": pa.array([r["values"] for r in rows], pa.binary())},
                        metadata={"nbytes": str(self.nbytes), "objects": str(self.objects),
                                  **({"sample": _sample_ipc(self.sample)} if self.sample is not None else {})})

    @classmethod
    def from_table(cls, t: pa.Table) -> "TableStats":
        md = t.schema.metadata or {}
        cols = {}
        for r in t.to_pylist():
            cols[r["column"]] = ColumnStats.from_row(r)
        rows = max((c.rows for c in cols.values()), default=0)
        return cls(rows=rows, columns=cols, nbytes=int(md.get(b"nbytes", 0)),
                   objects=int(md.get(b"objects", 1)),
                   sample_rows=_sample_from_ipc(md[b"sample"]) if b"sample" in md else None)


def _sample_ipc(sample: dict) -> bytes:
    """A sample as Arrow IPC bytes (schema metadata of the persisted statistics)."""
    t = pa.table({n: pa.array(v, pa.float64() if v.dtype != object else pa.string()) for n, v in sample.items()})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, t.schema) as w:
        w.write_table(t)
    return sink.getvalue().to_pybytes()


def _sample_from_ipc(data: bytes) -> dict[str, np.ndarray]:
    t = pa.ipc.open_stream(data).read_all()
    return {n: (t.column(n).to_numpy() if pa.types.is_floating(t.schema.field(n).type)
                else np.array(t.column(n).to_pylist(), dtype=object)) for n in t.column_names}


class StatsIndex:
    """Keeps statistics in step with a device's ObjectStore (built on put, dropped on drop)."""

    def __init__(self, store) -> None:
        self.store = store
        self._cache: dict[tuple[str, str], TableStats] = {}
        self._merged: dict[tuple, TableStats] = {}
        self._lock = threading.Lock()
        store.create_pool(STATS_POOL)
        store.on_put(self._on_put)
        store.on_drop(self._on_drop)

    @staticmethod
    def _skey(pool: str, key: str) -> str:
        return f"{pool}/{key}"

    def _on_put(self, pool: str, key: str, tables: list[pa.Table]) -> None:
        if pool == STATS_POOL:
            return
        nbytes = self.store.get(pool, key).size
        st = TableStats.build(tables, nbytes=nbytes) if tables and sum(t.num_rows for t in tables) else \
            TableStats(rows=0, columns={}, nbytes=nbytes)
        with self._lock:
            self._cache[(pool, key)] = st
            self._forget_merged(pool)
        if st.columns:
            self.store.put(STATS_POOL, self._skey(pool, key), st.to_table())

    def _on_drop(self, pool: str, key: str) -> None:
        if pool == STATS_POOL:
            return
        with self._lock:
            self._cache.pop((pool, key), None)
            self._forget_merged(pool)
        try:
            self.store.drop(STATS_POOL, self._skey(pool, key))
        except ColonyError:
            pass

    def _forget_merged(self, pool: str) -> None:
        """Drop the merged statistics of ``pool`` (the caller holds the lock): a put or drop
        there changes them; another pool's stay, with the per-column caches they have built."""
        for ck in [ck for ck in self._merged if ck[0] == pool]:
            del self._merged[ck]

    def get(self, pool: str, key: str) -> TableStats:
        with self._lock:
            st = self._cache.get((pool, key))
        if st is None:       # persisted next to the object, or build it now (object put before the hook)
            try:
                t = self.store.get_tables(STATS_POOL, self._skey(pool, key))[0]
                if not {"freq", "order", "high"} <= set(t.column_names):
                    raise StatsError("statistics persisted before the frequent-items sketch, the stored order "
                                     "or the extremes")
                st = TableStats.from_table(t)
                st.nbytes = self.store.get(pool, key).size
            except ColonyError:
                tables = self.store.get_tables(pool, key)
                st = TableStats.build(tables, nbytes=self.store.get(pool, key).size)
                if st.columns:      # kept, so the object is not read again (best effort)
                    try:
                        self.store.put(STATS_POOL, self._skey(pool, key), st.to_table())
                    except ColonyError:
                        pass
            with self._lock:
                self._cache[(pool, key)] = st
        return st

    def table(self, pool: str, keys: list[str]) -> TableStats:
        """Merged statistics of the objects ``keys`` (cached until a put or drop)."""
        ck = (pool, tuple(keys))
        with self._lock:
            hit = self._merged.get(ck)
        if hit is not None:
            return hit
        merged = self._table(pool, keys)
        with self._lock:
            self._merged[ck] = merged
        return merged

    def _table(self, pool: str, keys: list[str]) -> TableStats:
        parts = [self.get(pool, k) for k in keys]
        parts = [p for p in parts if p.columns]
        if not parts:
            raise StatsError(f"no statistics for pool {pool!r} keys {keys[:3]}...: the table is empty")
        return TableStats.merge(parts) if len(parts) > 1 else parts[0]
