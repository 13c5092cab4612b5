"""Per-device cost models, learned only from calibration runs on that device.

- Execution time from an operation vector plus a thread count. Four learners are scored
  by cross-validation on the calibration runs, each fold holding out whole query templates;
  the most structured one within one standard error of the lowest median error is kept
  (and refit on all runs), the others stay in the report as baselines:
  * ``ops``: per-operator costs, T3-shaped (time per tuple x cardinality, per operator
    family), each with a serial and a parallel part:
    t = c0 + sum_i (u_i + v_i / threads) * ops_i, non-negative least squares on relative error;
  * ``nnls``: one Amdahl fraction for the whole plan,
    t = c0 + (sum_i w_i * ops_i) * (a + (1 - a) / threads), a by grid search;
  * ``forest``: the seeds' random forest (scikit-learn) on log features, predicting log t;
  * ``blend``: the geometric mean of ``ops`` and ``forest`` (model averaging).
- :class:`LinearModel`: y = a + b * x by NNLS on relative error, used for serialization
  time (x = bytes), serialized bytes (x = rows * row width) and link transfer time (x = bytes).

All models are plain JSON (a forest as its tree arrays), so a device can hold the host's
model as data, never as code. A payload from a peer is validated before use: sizes are
capped and every tree must be a tree (children after their parent, so no cycles, bounded
depth), else :class:`~colony.errors.InvalidArgument`.
"""

from __future__ import annotations

import functools
import json
import math
import operator
from dataclasses import dataclass, field

import numpy as np

from colony.errors import InvalidArgument, StaleCalibration
from colony.query.estimate import OPS

try:
    from colony.cost import _forest       # the C walk of one vector (setup.py builds it where it can)
except ImportError:                       # pragma: no cover - no C compiler at install time
    _forest = None

FEATURES = OPS           # operation-vector order
MAX_TREES = 1000
MAX_NODES = 1 << 16      # per tree; sklearn with max_depth=10 builds at most 2047
MAX_DEPTH = 64
# cross-validation repeats (template groupings) the learner choice averages over: with 5, the
# learner kept from one record changed with the grouping seed (4.0 of 5 seeds agreed over 13
# stored calibrations; ops' median had a standard deviation of 2.5 points between seeds); with
# 20, 4.46 of 5 and 1.0 point (fiftieth stop; bench/cv_groupings.py), for ~2 s more per device
CV_REPEATS = 20
# bump when how models are fitted from the runs changes (a learner, the selection rule, CV
# repeats): a record fitted by an older rule is refitted from its stored runs when loaded
# (no new timing), so the learner it keeps is the one the current rule keeps.
# 1: one fold assignment; 2: CV_REPEATS groupings (nineteenth stop); 3: 20 groupings, not 5
FIT_REVISION = 3


def _inliers(pred: np.ndarray, y: np.ndarray, k: float = 3.0) -> np.ndarray:
    """Runs whose log residual is within k robust standard deviations (MAD): a run another
    job disturbed on a shared machine should not pull every operator's cost."""
    r = np.log(np.maximum(y, 1e-12) / np.maximum(pred, 1e-12))
    mad = 1.4826 * float(np.median(np.abs(r - np.median(r))))
    keep = np.abs(r - np.median(r)) <= k * max(mad, 0.05)
    return keep if keep.sum() >= max(8, len(y) // 2) else np.ones(len(y), bool)


_ALL_FEATURES = operator.itemgetter(*FEATURES)
# data-volume terms and the plan's size: present in every query, so they say nothing of its shape
_VOLUME = {"in_bytes", "out_bytes", "out_cells", "rows", "scan", "scan_str", "plan_rels"}
_COMPUTE = tuple(i for i, f in enumerate(FEATURES) if f not in _VOLUME)
_COMPUTE_OF = operator.itemgetter(*_COMPUTE)
# structural operators and function classes that make a query's shape (online correction key)
_SHAPE = tuple((name, tuple(FEATURES.index(f) for f in fs)) for name, fs in (
    ("agg", ("hash_agg", "groups", "agg_lg", "agg_mid", "agg_big", "scalar_agg")), ("tdigest", ("tdigest",)),
    ("distinct", ("distinct",)), ("sort", ("sort",)),
    ("topk", ("topk",)), ("topk_seq", ("topk_seq",)), ("limit", ("limit",)), ("union", ("union",)),
    ("join", ("join_build", "join_probe", "join_lg", "join_mid", "join_big", "join_out")), ("power", ("power",)), ("math", ("math",)),
    ("func", ("func",)), ("case", ("case",)), ("div", ("div",)), ("str", ("str", "str_fast", "cmp_str", "hash_str")), ("temporal", ("temporal", "temporal_tz", "trunc_tz"))))


def family(feature: str) -> tuple[str, ...]:
    """The features of ``feature``'s structural operator (``join_big`` -> the join's terms);
    () for a data-volume term, which belongs to no shape."""
    for _, idx in _SHAPE:
        names = tuple(FEATURES[i] for i in idx)
        if feature in names:
            return names
    return ()


_POSITIVE = (0.0).__lt__         # v > 0, as a C call for map()


@functools.lru_cache(maxsize=1024)
def _shape(present: tuple) -> str:
    """The structural operators of an op vector, from which of its features are positive: a
    decision asks for a handful of vectors of the few shapes a workload has, so once each."""
    return ",".join(name for name, idx in _SHAPE if any(present[i] for i in idx))


def size_class(seconds: float) -> int:
    """Factor-of-2 class of a price: k for 2^k to 2^(k+1) ms (below 0.1 ms, the class of 0.1 ms).
    Corrections learnt on one class are not spread as factors over others (:class:`Residuals`)."""
    return math.floor(math.log2(max(seconds, 1e-4) / 1e-3))


def _values(ops: dict) -> tuple:
    try:                  # an estimator's op vector has every feature: one C call, not 28 lookups
        return tuple(map(float, _ALL_FEATURES(ops)))
    except KeyError:
        return tuple(float(ops.get(k, 0.0)) for k in FEATURES)


def nnls(A: np.ndarray, b: np.ndarray):
    """scipy's non-negative least squares, imported when a model is fitted: every device
    process imports this module to price queries, and scipy.optimize alone costs ~0.6 s of
    a process's start (prediction never needs it)."""
    from scipy.optimize import nnls as solve
    return solve(A, b)


def _x(ops: dict) -> np.ndarray:
    return np.array(_values(ops), dtype=np.float64)


def _dot(a, b) -> float:
    """One prediction's sum of products in plain floats: a decision prices a handful of op
    vectors, and numpy's per-call cost (cold, in a device that just ran a query) was most of
    it. Exactly rounded (fsum), so it differs from a BLAS dot only in the last bits."""
    return math.fsum(map(operator.mul, a, b))


def ape(pred, actual) -> np.ndarray:
    pred, actual = np.asarray(pred, float), np.asarray(actual, float)
    return np.abs(pred - actual) / np.maximum(actual, 1e-9) * 100.0


@dataclass
class NNLSExec:
    coef: list
    intercept: float
    serial: float              # Amdahl serial fraction a

    @classmethod
    def fit(cls, X: np.ndarray, threads: np.ndarray, y: np.ndarray, robust: bool = True) -> "NNLSExec":
        best = None
        w = 1.0 / np.maximum(y, 1e-6)
        scale = np.maximum(X.max(axis=0), 1.0)
        keep = np.ones(len(y), bool)
        for rnd in range(2 if robust else 1):    # second round: without the disturbed runs
            best = None
            for a in np.linspace(0.0, 1.0, 11):
                f = (a + (1.0 - a) / threads)[:, None]
                A = np.hstack([np.ones((len(y), 1)), X / scale * f]) * w[:, None]
                coef, _ = nnls(A[keep], (y * w)[keep])
                pred = coef[0] + (X / scale * f) @ coef[1:]
                err = float(np.median(ape(pred[keep], y[keep])))
                if best is None or err < best[0]:
                    best = (err, a, coef, pred)
            keep = _inliers(best[3], y)
        _, a, coef, _ = best
        return cls(coef=list(coef[1:] / scale), intercept=float(coef[0]), serial=float(a))

    def __post_init__(self) -> None:
        self._coef = np.asarray(self.coef)       # once, not per prediction (estimation overhead)

    def predict(self, X: np.ndarray, threads: np.ndarray) -> np.ndarray:
        f = self.serial + (1.0 - self.serial) / np.maximum(threads, 1)
        return self.intercept + (X @ self._coef) * f

    def predict_one(self, x: tuple, threads: float) -> float:
        f = self.serial + (1.0 - self.serial) / max(threads, 1)
        return self.intercept + _dot(x, self.coef) * f

    def to_json(self) -> dict:
        return {"kind": "nnls", "coef": self.coef, "intercept": self.intercept, "serial": self.serial}


@dataclass
class OpsExec:
    """Per-operator cost with its own thread scaling: t = c0 + sum_i (u_i + v_i / threads) * ops_i."""

    serial: list
    parallel: list
    intercept: float

    @classmethod
    def fit(cls, X: np.ndarray, threads: np.ndarray, y: np.ndarray, robust: bool = True) -> "OpsExec":
        w = 1.0 / np.maximum(y, 1e-6)
        scale = np.maximum(X.max(axis=0), 1.0)
        Xs = X / scale
        A = np.hstack([np.ones((len(y), 1)), Xs, Xs / np.maximum(threads, 1)[:, None]])
        coef, _ = nnls(A * w[:, None], y * w)
        if robust:                               # refit without the disturbed runs
            keep = _inliers(A @ coef, y)
            coef, _ = nnls(A[keep] * w[keep, None], y[keep] * w[keep])
        # least squares on relative error leans low under multiplicative noise: rescale so the
        # median ratio of measured to predicted is 1 (what the median APE scores)
        coef = coef * float(np.median(y / np.maximum(A @ coef, 1e-12)))
        k = X.shape[1]
        return cls(serial=list(coef[1:k + 1] / scale), parallel=list(coef[k + 1:] / scale),
                   intercept=float(coef[0]))

    def __post_init__(self) -> None:
        self._serial, self._parallel = np.asarray(self.serial), np.asarray(self.parallel)   # once
        self._per_op: dict = {}

    def per_op(self, threads: float) -> list:
        """Seconds per unit of each operator at ``threads`` (serial + parallel / threads), kept per count."""
        w = self._per_op.get(threads)
        if w is None:
            t = max(threads, 1.0)
            w = self._per_op[threads] = [s + p / t for s, p in zip(self.serial, self.parallel)]
        return w

    def predict(self, X: np.ndarray, threads: np.ndarray) -> np.ndarray:
        X = np.atleast_2d(X)
        return self.intercept + X @ self._serial + (X @ self._parallel) / np.maximum(np.asarray(threads, float), 1)

    def predict_one(self, x: tuple, threads: float) -> float:
        """One vector's prediction: one sum over the per-operator costs at ``threads``
        (:meth:`per_op`, kept per thread count), not one each for the serial and parallel parts."""
        return self.intercept + _dot(x, self.per_op(float(threads)))

    def to_json(self) -> dict:
        return {"kind": "ops", "serial": self.serial, "parallel": self.parallel, "intercept": self.intercept}


@dataclass
class ForestExec:
    trees: list                 # each: dict of arrays (left, right, feature, threshold, value)

    # A decision walks every tree once per forest-priced vector, and cold (in a device that
    # just ran a query) each tree costs ~5 us. On the five devices' stored calibration runs
    # (run 37), the blend's template-held-out CV median with 20 trees was 0.2-0.9 points lower
    # than with 40 on every device and its p90 -0.9 to +2.1 points (host0 12.2 / 39.3 % ->
    # 12.0 / 38.4 %); the forest alone moved -0.6 to +1.0 points.
    N_TREES = 20

    @staticmethod
    def _feat(X, threads):
        return np.hstack([np.log1p(X), np.asarray(threads, float)[:, None]])

    @classmethod
    def fit(cls, X, threads, y, seed: int = 0) -> "ForestExec":
        from sklearn.ensemble import RandomForestRegressor
        rf = RandomForestRegressor(n_estimators=cls.N_TREES, max_depth=10, min_samples_leaf=2, random_state=seed, n_jobs=1)
        rf.fit(cls._feat(X, threads), np.log(np.maximum(y, 1e-7)))
        trees = []
        for est in rf.estimators_:
            t = est.tree_
            trees.append({"left": t.children_left.tolist(), "right": t.children_right.tolist(),
                          "feature": t.feature.tolist(), "threshold": t.threshold.tolist(),
                          "value": t.value[:, 0, 0].tolist()})
        return cls(trees=trees)

    def __post_init__(self) -> None:
        if not isinstance(self.trees, list) or not 0 < len(self.trees) <= MAX_TREES:
            raise InvalidArgument(f"a forest model needs 1..{MAX_TREES} trees")
        arrays = [_tree_arrays(i, t) for i, t in enumerate(self.trees)]
        # all trees in one flat node table, walked together: a prediction is a few vector steps
        # per level, not a Python loop per tree (estimation overhead). A node's children sit at
        # child[2 * node + (x <= threshold)]: the right one first, so a NaN goes right as in
        # sklearn; a leaf is its own two children, so every walk simply takes `depth` steps.
        n = max(len(a[0]) for a in arrays)
        m = len(arrays) * n
        child = np.arange(2 * m, dtype=np.int64) // 2
        fidx, thr, val = np.zeros(m, np.int64), np.full(m, np.inf), np.zeros(m)
        depth = 0
        for k, (left, right, feat, th, v, d) in enumerate(arrays):
            base, inner = k * n, left != -1
            i = base + np.flatnonzero(inner)
            child[2 * i], child[2 * i + 1] = base + right[inner], base + left[inner]
            fidx[i], thr[i] = feat[inner], th[inner]
            val[base:base + len(v)] = v
            depth = max(depth, d)
        self._child, self._fidx, self._thr, self._val = child, fidx, thr, val
        self._roots, self._depth = np.arange(len(arrays), dtype=np.int64) * n, depth
        # the same nodes as plain lists, for one vector's walk (a decision's): a leaf (its own
        # two children) gets feature -1 and ends the walk; its value is its log-seconds
        node = np.arange(m)
        leaf = (child[0::2] == node) & (child[1::2] == node)
        self._lists = (child.tolist(), np.where(leaf, -1, fidx).tolist(), thr.tolist(), val.tolist(),
                       self._roots.tolist())
        self._walk = _forest.Forest(*self._lists).predict_one if _forest is not None else self._walk_python

    def predict(self, X, threads) -> np.ndarray:
        F = self._feat(np.atleast_2d(X), np.atleast_1d(threads))
        s, nf = F.shape
        flat = F.ravel()
        node = np.repeat(self._roots[None, :], s, axis=0)            # samples x trees
        row = (np.arange(s, dtype=np.int64) * nf)[:, None]
        for _ in range(self._depth):
            node = self._child[2 * node + (flat[row + self._fidx[node]] <= self._thr[node])]
        return np.exp(self._val[node].mean(axis=1))

    def __reduce__(self):
        """Pickled as its trees (the C walk is rebuilt from them)."""
        return type(self), (self.trees,)

    def predict_one(self, x: tuple, threads: float) -> float:
        """One vector's prediction, equal to :meth:`predict` on the same vector: a decision
        prices one or two vectors, and the vector walk's numpy calls (cold, in a device that
        just ran a query) cost ~6x a plain loop. Walked in C (``_forest.c``: one 32-byte node
        a step); where the module was not built, by :meth:`_walk_python`, the same float."""
        return self._walk(x, float(threads))

    def _walk_python(self, x: tuple, threads: float) -> float:
        child, fidx, thr, val, roots = self._lists
        f = [math.log1p(v) for v in x]
        f.append(float(threads))
        s = 0.0
        for n in roots:
            k = fidx[n]
            while k >= 0:
                n = child[2 * n + (f[k] <= thr[n])]
                k = fidx[n]
            s += val[n]
        return math.exp(s / len(roots))

    def to_json(self) -> dict:
        return {"kind": "forest", "trees": self.trees}


@dataclass
class BlendExec:
    """The geometric mean of the per-operator model and the forest (model averaging): where
    their errors differ in sign or size, the mean can miss by less than either (calibration's
    cross-validation says whether it does); where a forest would leave its training range,
    :class:`DeviceModels` prices with the linear part alone."""

    linear: OpsExec
    forest: ForestExec

    @classmethod
    def fit(cls, X, threads, y, seed: int = 0) -> "BlendExec":
        return cls(OpsExec.fit(X, threads, y), ForestExec.fit(X, threads, y, seed))

    @staticmethod
    def combine(linear, forest):
        """The blend of the two parts' predictions (scalars or arrays)."""
        if isinstance(linear, float) and isinstance(forest, float):    # one vector's: without numpy
            return math.sqrt(max(linear, 1e-7) * max(forest, 1e-7))
        return np.sqrt(np.maximum(linear, 1e-7) * np.maximum(forest, 1e-7))

    def predict(self, X, threads) -> np.ndarray:
        return self.combine(self.linear.predict(X, threads), self.forest.predict(X, threads))

    def predict_one(self, x: tuple, threads: float) -> float:
        return self.combine(float(self.linear.predict_one(x, threads)), self.forest.predict_one(x, threads))

    def to_json(self) -> dict:
        return {"kind": "blend", "linear": self.linear.to_json(), "forest": self.forest.to_json()}


def _tree_arrays(i: int, t: dict) -> tuple:
    """One tree's arrays, checked: a peer's forest must terminate and stay small."""
    def bad(why: str) -> InvalidArgument:
        return InvalidArgument(f"forest tree {i}: {why}; send trees as fitted (colony.cost.models.ForestExec)")
    try:
        left, right, feat = (np.asarray(t[k], dtype=np.int64) for k in ("left", "right", "feature"))
        thr, val = (np.asarray(t[k], dtype=np.float64) for k in ("threshold", "value"))
    except (KeyError, TypeError, ValueError) as e:
        raise bad(f"arrays left/right/feature/threshold/value missing or not numeric ({e})") from None
    n = len(left)
    if not 0 < n <= MAX_NODES or any(a.shape != (n,) for a in (right, feat, thr, val)):
        raise bad(f"needs 1..{MAX_NODES} nodes and five arrays of one length")
    leaf = left == -1
    idx = np.arange(n)
    if (leaf != (right == -1)).any():
        raise bad("a node has one child")
    inner = ~leaf
    if (inner & ((left <= idx) | (right <= idx) | (left >= n) | (right >= n))).any():
        raise bad("a child does not come after its parent (a cycle or a dangling index)")
    if (inner & ((feat < 0) | (feat > len(FEATURES)))).any() or not np.isfinite(val).all():
        raise bad("a feature index is out of range or a value is not finite")
    depth = np.zeros(n, dtype=np.int64)
    for j in np.flatnonzero(inner):            # parents come first, so one pass sets every depth
        depth[left[j]] = depth[right[j]] = depth[j] + 1
    if depth.max() > MAX_DEPTH:
        raise bad(f"depth {depth.max()} exceeds {MAX_DEPTH}")
    return left, right, feat, thr, val, int(depth.max())


def exec_from_json(d: dict):
    if d["kind"] == "nnls":
        m = NNLSExec(coef=[float(c) for c in d["coef"]], intercept=float(d["intercept"]), serial=float(d["serial"]))
        if len(m.coef) != len(FEATURES) or not np.isfinite([*m.coef, m.intercept, m.serial]).all():
            raise InvalidArgument(f"an nnls model needs {len(FEATURES)} finite coefficients")
        return m
    if d["kind"] == "ops":
        m = OpsExec(serial=[float(c) for c in d["serial"]], parallel=[float(c) for c in d["parallel"]],
                    intercept=float(d["intercept"]))
        if len(m.serial) != len(FEATURES) or len(m.parallel) != len(FEATURES) or \
                not np.isfinite([*m.serial, *m.parallel, m.intercept]).all():
            raise InvalidArgument(f"an ops model needs 2 x {len(FEATURES)} finite coefficients")
        return m
    if d["kind"] == "forest":
        return ForestExec(trees=d["trees"])
    if d["kind"] == "blend":
        # the parts' kinds first: a peer's blend nested in a blend is refused, not decoded
        if not all(isinstance(d.get(k), dict) and d[k].get("kind") == want
                   for k, want in (("linear", "ops"), ("forest", "forest"))):
            raise InvalidArgument("a blend model needs an 'ops' linear part and a 'forest' part")
        return BlendExec(exec_from_json(d["linear"]), exec_from_json(d["forest"]))
    raise InvalidArgument(f"unknown execution model kind {d['kind']!r}; expected 'ops', 'nnls', 'forest' or 'blend'")


@dataclass
class LinearModel:
    """y = a + b * x, non-negative, fitted on relative error."""

    a: float
    b: float

    def __post_init__(self) -> None:
        self.a, self.b = float(self.a), float(self.b)
        if not (np.isfinite(self.a) and np.isfinite(self.b)):
            raise InvalidArgument(f"linear model coefficients must be finite, got a={self.a}, b={self.b}")

    @classmethod
    def fit(cls, x, y) -> "LinearModel":
        x, y = np.asarray(x, float), np.asarray(y, float)
        w = 1.0 / np.maximum(y, 1e-9)
        s = max(float(x.max()), 1.0)
        coef, _ = nnls(np.stack([np.ones_like(x), x / s], axis=1) * w[:, None], y * w)
        return cls(a=float(coef[0]), b=float(coef[1] / s))

    def predict(self, x):
        if isinstance(x, (int, float)):        # one value: the same two roundings, without numpy
            return self.a + self.b * float(x)
        return self.a + self.b * np.asarray(x, float)

    def to_json(self) -> dict:
        return {"a": self.a, "b": self.b}


@dataclass
class Residuals:
    """Online correction: per operator family (the op-vector feature that dominates a query's
    predicted cost), an exponentially decaying mean of log(actual / predicted) execution time,
    bounded to [1/bound, bound], on top of a device-wide one (key ``*``) that every execution
    family updates: what slows the whole device (other work on its cores) is learnt from every
    query, so a family it has not run yet starts corrected too. A family of a role
    (``split:...``, ``back:...``, see :meth:`DeviceModels.family`) also updates its role's
    entry (``split:*``): a bias of the role itself (a split's upper part over partial results,
    a shape calibration never times, took 1.3-1.7x its price on TPC-H in runs 31-33, each query
    a shape of its own) is learnt from every query of the role, not per shape. Families
    named ``total:...`` (end-to-end, per placement) stand alone. ``drift`` flags an entry whose
    correction stays beyond ``drift_at`` after ``min_n`` queries: the calibration no longer
    describes the device.

    A family that names its size class (``<shape>@<k>``, the raw price's factor-of-2 class,
    :meth:`DeviceModels.family`) shares across shapes only within that class (``*@k``,
    ``back:*@k``); its shape's own entry spans all sizes. A small query's miss is mostly a
    fixed cost, and one device-wide entry carried it over large ones as a factor: five 4-14 ms
    queries on a nested-column table, run 1.5-3.3x their raw prices, priced a 64-ms window
    query (raw price 56 ms) at the 2x bound, and it was pushed back (probe run 132)."""

    alpha: float = 0.2
    bound: float = 2.0
    drift_at: float = 1.5
    min_n: int = 10
    share: float = 0.5                                # part of each step the device-wide entry takes
    max_entries: int = 256                            # shapes kept (least recently updated dropped)
    state: dict = field(default_factory=dict)        # family -> {"log": float, "n": int}

    GLOBAL = "*"

    def _keys(self, family: str) -> tuple:
        """(entry, share of each step) the family reads and updates: shares sum to 1, so one
        step moves the family's factor by ``alpha`` times its residual however many it has."""
        role, sep, _ = family.partition(":")
        if role == "total" or family == self.GLOBAL or family.startswith(self.GLOBAL + "@"):
            return ((family, 1.0),)
        shape, at, size = family.rpartition("@")
        if not at:                        # no size class named: the entries shared by every size
            shape = family
        cls = f"@{size}" if at else ""
        if sep:
            return ((self.GLOBAL + cls, self.share / 2), (f"{role}:*{cls}", self.share / 2),
                    (shape, 1.0 - self.share))
        return (self.GLOBAL + cls, self.share), (shape, 1.0 - self.share)

    @staticmethod
    def _shared(key: str) -> bool:
        """An entry shared across shapes (device-wide or a role's, of any size class)."""
        head = key.split("@", 1)[0]
        return head == Residuals.GLOBAL or head.endswith(":*")

    def factor(self, family: str | None) -> float:
        if not family:
            return 1.0
        st, lg = self.state, 0.0
        for k, _ in self._keys(family):
            e = st.get(k)
            if e is not None:
                lg += e["log"]
        if not lg:
            return 1.0
        lim = self._lim()
        return math.exp(min(max(lg, -lim), lim))

    def _lim(self) -> float:
        if getattr(self, "_lim_of", None) != self.bound:      # log(bound), once per bound
            self._lim_of, self._lim_v = self.bound, float(np.log(self.bound))
        return self._lim_v

    def update(self, family: str, predicted: float, actual: float) -> None:
        if predicted <= 0 or actual <= 0 or not family:
            return
        r = float(np.log(actual / predicted))       # predicted already carries the current factor
        lim = float(np.log(self.bound))
        for k, w in self._keys(family):
            st = self.state.pop(k, None) or {"log": 0.0, "n": 0}
            self.state[k] = st                        # most recently updated last
            st["log"] = float(np.clip(st["log"] + self.alpha * w * r, -lim, lim))
            st["n"] += 1
        while len(self.state) > self.max_entries:     # one entry per query shape: bounded, oldest go
            old = next((k for k in self.state if not self._shared(k)), None)
            if old is None:
                break
            del self.state[old]

    def drifted(self) -> list[str]:
        lim = float(np.log(self.drift_at))
        return [f for f, st in self.state.items() if st["n"] >= self.min_n and abs(st["log"]) > lim]

    def to_json(self) -> dict:
        return {f: {"factor": round(float(np.exp(st["log"])), 4), "n": st["n"]} for f, st in self.state.items()}

    def snapshot(self) -> dict:
        """The state as data, for a copy of these models elsewhere (a device pricing host work)."""
        return {f: dict(st) for f, st in self.state.items()}

    def adopt(self, state) -> None:
        """Take the owner's state (from :meth:`snapshot`), bounded and checked: it comes from a peer."""
        if not isinstance(state, dict) or len(state) > 256:
            return
        lim = float(np.log(self.bound))
        out = {}
        for f, st in state.items():
            try:
                lg, n = float(st["log"]), int(st["n"])
            except (KeyError, TypeError, ValueError):
                continue
            if isinstance(f, str) and np.isfinite(lg) and n >= 0:
                out[f] = {"log": float(np.clip(lg, -lim, lim)), "n": n}
        self.state = out


def leg_offset(call_path: dict, name: str) -> float:
    """The offset a call-path fit (``DeviceModels.call_path``, or a device's record of it) holds
    for leg ``name`` (see :attr:`DeviceModels.LEGS`): 0 without one."""
    m = call_path.get(name)
    return float(m["a"]) if m else 0.0


@dataclass
class DeviceModels:
    """Everything the decision engine needs to price work on one device."""

    device: str
    threads: int
    exec: object                              # OpsExec | NNLSExec | BlendExec | ForestExec (the kept one)
    ser_time: LinearModel                     # seconds from result bytes
    ser_bytes: LinearModel                    # bytes from rows * row width
    deser_s: float                            # zero-copy decode of a stored object (constant)
    link: LinearModel | None = None           # transfer seconds from bytes, this device -> client
    link_host: LinearModel | None = None      # transfer seconds from bytes, this device -> host (push-back)
    report: dict = field(default_factory=dict)   # held-out errors of every learner tried
    exec_linear: object | None = None         # a linear model (OpsExec/NNLSExec), used beyond the calibrated sizes
    rows_max: float = 0.0                     # largest input calibrated
    # measured stretch of new work on the device's cores while it calibrated (1: nothing else
    # ran): the models price work at that load, so only a stretch beyond it is contention
    stretch: float = 1.0
    setup: LinearModel | None = None          # seconds to map stored objects into an engine, per batch
    # measured total = a + b * predicted total, per placement, fitted on probe queries sent
    # through the call path queries take (call, queueing, (de)serialization, pacing)
    call_path: dict = field(default_factory=dict)
    residuals: Residuals = field(default_factory=Residuals)   # online correction, not persisted
    fit_revision: int = FIT_REVISION          # the fitting rule's revision (FIT_REVISION when it was fitted)

    def family(self, ops: dict, threads: int | None = None, role: str | None = None) -> str | None:
        """The online correction's key for this op vector (see :meth:`_family`); ``role``
        (``back``, ``split``) prefixes it where one model prices two kinds of work: a host
        running a whole pushed-back plan and one running a split's upper part over partial
        results can share a shape and be mispriced in opposite directions (1M-row group-bys:
        back 30-40 % over, split 30-65 % under), so one entry would correct neither."""
        return self._family(_values(ops), threads, role)

    def _family(self, x: tuple, threads: int | None, role: str | None = None,
                price: float | None = None) -> str | None:
        """``<dominant compute operator>[<shape>]``: the operator whose predicted cost is the
        largest, leaving out the data-volume terms (bytes and rows read or written: on a host
        that receives pushed-back objects, ``in_bytes`` dominated every query, so one entry
        averaged a filter's residual with a group-by's and corrected neither), and the
        structural operators the plan has (aggregate, sort, top-k, limit, distinct, union,
        join, and the function classes), then ``@<k>``, the factor-of-2 class of the linear
        model's price (:func:`size_class`; ``price``: that price, where the caller has it).
        Queries of one shape share a correction whatever their size; a shape the device has
        not run yet starts from the device-wide one of its size class (:class:`Residuals`)."""
        lin = self._linear
        t = float(threads or self.threads)
        if isinstance(lin, OpsExec):
            w = lin.per_op(t)
        elif isinstance(lin, NNLSExec):
            w = lin.coef
        else:
            return None
        comp = list(map(operator.mul, _COMPUTE_OF(x), _COMPUTE_OF(w)))   # the compute terms first
        top = max(comp)
        if top > 0:
            dom = FEATURES[_COMPUTE[comp.index(top)]]
        else:
            share = list(map(operator.mul, x, w))
            top = max(share)
            if top <= 0:
                # the linear part prices none of this query's operators (an intercept-only fit
                # of a short calibration): the device-wide entry still learns from it
                return Residuals.GLOBAL
            dom = FEATURES[share.index(top)]      # the first largest, as argmax
        shape = _shape(tuple(map(_POSITIVE, x)))
        k = size_class(lin.predict_one(x, t) if price is None else price)
        return f"{role}:{dom}[{shape}]@{k}" if role else f"{dom}[{shape}]@{k}"

    def predict_total(self, placement: str, raw: float) -> tuple[float, str]:
        """The end-to-end total of a placement whose terms sum to ``raw``: the call-path fit,
        times the online correction learnt from the client's measured totals of this placement
        in this size class (factor-of-2 classes of the fitted total), and that correction's key.
        The client sends each total with its executions as priced (:func:`colony.decide.
        total_as_priced`): execution misses are learnt per shape, not here.

        One correction per placement spread a small query's residual, mostly fixed per-call
        cost, over large ones that a transfer dominates: the demo learnt x1.37 on a 19-ms
        filter and priced a 93-ms wide filter at 183 ms. A class the client has not measured
        yet is not corrected."""
        m = self.call_path.get(placement) or (self.call_path.get("back") if placement == "split" else None)
        fitted = float(m["a"] + m["b"] * raw) if m else raw
        key = f"total:{placement}@{size_class(fitted)}"
        return fitted * self.residuals.factor(key), key

    # the legs of a placement the host runs for this device, beyond what their link models
    # price (fitted on the call-path probes, an offset each): ``handover``, the call to the
    # host with its objects and its answer back; ``relay``, that answer's way on to the client
    LEGS = ("handover", "relay")

    def leg(self, name: str) -> float:
        """Seconds the probes measured on leg ``name`` beyond its link model (0 without a fit)."""
        return leg_offset(self.call_path, name)

    def predict_setup(self, rows: float, objects: int) -> float:
        """What the service does with stored objects before it executes (fig 5.11's raw-data
        deserialization), as calibration timed it on the device's own path: decode and register
        in process; through a worker, only gathering the buffers (the worker's decode is part of
        the execution it times). Without that fit, a zero-copy decode per object."""
        if self.setup is None:
            return self.deser_s * max(objects, 1)
        batches = rows / 65_536 + max(objects, 1)
        return float(max(self.setup.predict(batches), 0.0))

    def predict_exec(self, ops: dict, threads: int | None = None, role: str | None = None,
                     runs: int = 1) -> float:
        """One op vector's execution seconds: :meth:`predict_execs` of one item."""
        return self.predict_execs([(ops, threads, role, runs)])[0]

    def predict_execs(self, items: list, keys: list | None = None) -> list[float]:
        """Execution seconds of several op vectors, each ``(ops, threads, role, runs)``;
        ``keys`` (if given) receives each vector's online-correction key as priced (its
        threads set the size class and dominant operator), which that execution's measurement
        must update.

        Kept learner inside the calibrated sizes; a forest cannot extrapolate, so larger
        inputs than calibration saw are priced by the linear (NNLS) model. Corrected online
        by the entry of the op vector's shape (and ``role``, see :meth:`family`). Each vector is
        priced by the learner's scalar path (``predict_one``): a decision prices a handful,
        and numpy's per-call cost was most of it (estimation overhead).

        ``runs``: ``ops`` is the sum of that many plans run one after another (a split's
        cuts, each its own execution), so each after the first adds the per-run cost."""
        xs, raw, ms = [], [], []
        for ops, threads, _role, _runs in items:
            t = float(threads or self.threads)
            m = self.exec
            if (self.exec_linear is not None and isinstance(m, (ForestExec, BlendExec)) and self.rows_max
                    and ops.get("rows", 0.0) > 1.2 * self.rows_max):
                m = self.exec_linear
            x = _values(ops)
            xs.append(x)
            ms.append(m)
            raw.append(m.predict_one(x, t))
        lin = self._linear            # its price names the size class: reused where it priced
        fams = [self._family(x, threads, role, r if m is lin else None)
                for r, x, m, (_ops, threads, role, _runs) in zip(raw, xs, ms, items)]
        if keys is not None:
            keys.extend(fams)
        return [(max(r, 0.0) + max(runs - 1, 0) * self.per_run_s) * self.residuals.factor(f)
                for r, f, (_ops, _threads, _role, runs) in zip(raw, fams, items)]

    @property
    def per_run_s(self) -> float:
        """Seconds one execution costs before any operator: the calibrated intercept of the
        linear model (a worker round trip, a plan decode, a context), what every further cut
        of a split pays again."""
        return max(float(getattr(self._linear, "intercept", 0.0) or 0.0), 0.0)

    @property
    def _linear(self):
        """The linear model (OpsExec/NNLSExec): the kept one, else the one kept beside a forest."""
        return self.exec if isinstance(self.exec, (OpsExec, NNLSExec)) else self.exec_linear

    def predict_bytes(self, rows: float, width: float) -> float:
        return float(max(self.ser_bytes.predict(rows * width), 0.0))

    def predict_ser(self, nbytes: float) -> float:
        return float(max(self.ser_time.predict(nbytes), 0.0))

    def predict_transfer(self, nbytes: float) -> float:
        """Seconds to send ``nbytes`` from this device to the client (a result)."""
        return float(max(self.link.predict(nbytes), 0.0)) if self.link else 0.0

    def predict_push(self, nbytes: float) -> float:
        """Seconds to send ``nbytes`` from this device to the host (push-back objects, a split's
        lower result); the client link's fit where that leg was not calibrated."""
        m = self.link_host or self.link
        return float(max(m.predict(nbytes), 0.0)) if m else 0.0

    def to_json(self) -> dict:
        return {"device": self.device, "threads": self.threads, "features": list(FEATURES),
                "exec": self.exec.to_json(),
                "ser_time": self.ser_time.to_json(), "ser_bytes": self.ser_bytes.to_json(),
                "deser_s": self.deser_s, "link": self.link.to_json() if self.link else None,
                "link_host": self.link_host.to_json() if self.link_host else None,
                "report": self.report, "rows_max": self.rows_max, "stretch": self.stretch,
                "setup": self.setup.to_json() if self.setup else None, "call_path": self.call_path,
                "exec_linear": self.exec_linear.to_json() if self.exec_linear else None,
                "fit_revision": self.fit_revision}

    @classmethod
    def from_json(cls, d: dict) -> "DeviceModels":
        """Models from JSON data; anything malformed is :class:`InvalidArgument`, never a crash;
        models fitted on another operation vector are :class:`StaleCalibration`."""
        if isinstance(d, dict) and "features" in d and d["features"] != list(FEATURES):
            raise StaleCalibration(f"models of device {d.get('device')!r} were fitted on another operation vector "
                                   "(an older build); recalibrate the device")
        try:
            return cls._from_json(d)
        except InvalidArgument:
            raise
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise InvalidArgument(f"malformed device models ({type(e).__name__}: {e}); send "
                                  "DeviceModels.to_json() output") from None

    @classmethod
    def _from_json(cls, d: dict) -> "DeviceModels":
        return cls(device=d["device"], threads=d["threads"], exec=exec_from_json(d["exec"]),
                   ser_time=LinearModel(**d["ser_time"]), ser_bytes=LinearModel(**d["ser_bytes"]),
                   deser_s=d["deser_s"], link=LinearModel(**d["link"]) if d.get("link") else None,
                   link_host=LinearModel(**d["link_host"]) if d.get("link_host") else None,
                   report=d.get("report", {}), rows_max=d.get("rows_max", 0.0),
                   stretch=max(1.0, float(d.get("stretch", 1.0))),
                   setup=LinearModel(**d["setup"]) if d.get("setup") else None, call_path=d.get("call_path") or {},
                   exec_linear=exec_from_json(d["exec_linear"]) if d.get("exec_linear") else None,
                   fit_revision=int(d.get("fit_revision", 1)))      # records before the field: rule 1

    def save(self, path) -> None:
        with open(path, "w") as f:
            json.dump(self.to_json(), f)

    @classmethod
    def load(cls, path) -> "DeviceModels":
        with open(path) as f:
            return cls.from_json(json.load(f))


LEARNERS = {"ops": lambda X, T, y, seed: OpsExec.fit(X, T, y),
            "nnls": lambda X, T, y, seed: NNLSExec.fit(X, T, y),
            "forest": lambda X, T, y, seed: ForestExec.fit(X, T, y, seed),
            "blend": BlendExec.fit}      # last: its cross-validation combines the two before it
# most structured first: the per-operator model (T3's shape) can price an operator mix it
# never saw together; one Amdahl fraction cannot; the blend is half a forest, and a forest
# cannot leave its training range
PREFERENCE = ("ops", "nnls", "blend", "forest")


def _folds(runs: list[dict], folds: int, rng) -> tuple[np.ndarray, str]:
    """Fold of each run: whole query templates held out together when the runs name enough of
    them (what a new query shape meets: no run of its template in the fit), else runs at random."""
    tids = [r.get("template") for r in runs]
    names = sorted({t for t in tids if t is not None})
    if None not in tids and len(names) >= 2 * folds:
        of = {t: i % folds for i, t in enumerate(rng.permutation(names))}
        return np.array([of[t] for t in tids]), f"{folds}-fold cross-validation by query template " \
                                                 f"({len(names)} templates, each held out whole)"
    k = max(2, min(folds, len(runs)))
    return rng.permutation(len(runs)) % k, f"{k}-fold cross-validation on the calibration runs"


def log_err(pred, actual) -> np.ndarray:
    """``|log(predicted / measured)|``: the multiplicative miss, symmetric in over- and
    under-pricing (a 2x miss either way is log 2)."""
    pred, actual = np.asarray(pred, float), np.asarray(actual, float)
    return np.abs(np.log(np.maximum(pred, 1e-9) / np.maximum(actual, 1e-9)))


def _one_se(errs: dict, rng, boot: int = 200) -> tuple[str, dict]:
    """The first learner in :data:`PREFERENCE` whose median error is within one standard error
    of the lowest (the one-standard-error rule): a difference smaller than what resampling the
    same runs moves it is noise, and picking on noise flipped the kept learner between
    calibrations of one device. The standard error is the bootstrap spread of the paired
    difference of medians.

    The median APE, not the mean log error (:func:`log_err`, reported beside it): the mean
    weighs the linear learners' few 10-20x misses on held-out calibration templates, and
    kept the forest on both devices of run 32; on the benchmark's held-out families the
    forest then did no better than the per-operator model at 300k rows and worse at 1M
    (docs/query.md, "Runs 32-33")."""
    best = min(errs, key=lambda k: float(np.median(errs[k])))
    n = len(errs[best])
    idx = rng.integers(0, n, size=(boot, n))
    se = {}
    for name in errs:
        d = np.median(errs[name][idx], axis=1) - np.median(errs[best][idx], axis=1)
        se[name] = float(np.std(d))
    for name in [p for p in PREFERENCE if p in errs]:
        if float(np.median(errs[name])) - float(np.median(errs[best])) <= se[name]:
            return name, se
    return best, se


def cross_validated(runs: list[dict], folds: int = 5, seed: int = 0, repeats: int = CV_REPEATS,
                    rng=None) -> tuple[list[dict], str]:
    """Every learner's held-out prediction of every run, once per repeat (a dict of arrays per
    repeat, folds from :func:`_folds`), and how the folds were made: what :func:`fit_exec` scores,
    and what an offline study of a record's learners reads (bench/blend_parts.py)."""
    rng = np.random.Generator(np.random.SFC64(seed)) if rng is None else rng
    X = np.stack([_x(r["ops"]) for r in runs])
    T = np.array([r["threads"] for r in runs], float)
    y = np.array([r["exec_s"] for r in runs], float)
    out, how = [], ""
    for _ in range(max(1, repeats)):
        fold, how = _folds(runs, folds, rng)
        preds: dict = {}
        for name, fit in LEARNERS.items():
            pred = np.empty(len(y))
            if name == "blend":       # its parts' held-out predictions, combined: the same fits again
                pred = BlendExec.combine(preds["ops"], preds["forest"])
            else:
                for k in range(int(fold.max()) + 1):
                    te, tr = fold == k, fold != k
                    pred[te] = fit(X[tr], T[tr], y[tr], seed).predict(X[te], T[te])
            preds[name] = pred
        out.append(preds)
    return out, how


def fit_exec(runs: list[dict], folds: int = 5, seed: int = 0, repeats: int = CV_REPEATS) -> tuple[object, dict]:
    """Score every learner by cross-validation on the calibration runs, folds holding out whole
    query templates (the benchmark's held-out families are shapes calibration never ran); keep
    the most structured learner within one standard error of the lowest median absolute
    percentage error (:func:`_one_se`); refit it on all runs. The report says which and why.

    Repeated ``repeats`` times with different groupings of the templates into folds, each run's
    error the mean over the repeats: with one grouping, which templates were held out together
    moved a device's median by 2-4 points (nineteenth stop), as much as the learners differ.

    ``runs``: dicts with ``ops`` (estimated op vector), ``threads``, ``exec_s`` and optionally
    ``template`` (the calibration template that drew the query).
    """
    rng = np.random.Generator(np.random.SFC64(seed))
    X = np.stack([_x(r["ops"]) for r in runs])
    T = np.array([r["threads"] for r in runs], float)
    y = np.array([r["exec_s"] for r in runs], float)
    reps, how = cross_validated(runs, folds, seed, repeats, rng)
    errs_rep = {name: [ape(p[name], y) for p in reps] for name in LEARNERS}
    logs_rep = {name: [log_err(p[name], y) for p in reps] for name in LEARNERS}
    report: dict = {"selection": f"{how}, repeated {max(1, repeats)}x with other groupings (each run's error "
                                 f"the mean over them); the most structured learner ({' > '.join(PREFERENCE)}) "
                                 "within one standard error of the lowest median APE kept", "runs": int(len(y))}
    rows = X[:, FEATURES.index("rows")]
    large = rows >= 0.25 * rows.max()          # the top of the calibrated sizes, where big queries sit
    errs_all = {}
    for name in LEARNERS:
        errs = errs_all[name] = np.mean(errs_rep[name], axis=0)
        report[name] = {"ape_median": float(np.median(errs)), "ape_p90": float(np.percentile(errs, 90)),
                        "mape": float(np.mean(errs)), "log_err_mean": float(np.mean(logs_rep[name])),
                        "large": {"runs": int(large.sum()), "min_rows": float(0.25 * rows.max()),
                                  "ape_median": float(np.median(errs[large])),
                                  "ape_p90": float(np.percentile(errs[large], 90))}}
    kept, se = _one_se(errs_all, rng)
    for name in errs_all:
        report[name]["se_vs_best"] = se[name]
    report["lowest"] = min(errs_all, key=lambda k: report[k]["ape_median"])
    report["kept"] = kept
    return LEARNERS[kept](X, T, y, seed), report


def fit_exec_both(runs: list[dict], seed: int = 0):
    """(kept learner, per-operator linear learner on all runs, report, largest calibrated input rows)."""
    final, report = fit_exec(runs, seed=seed)
    X = np.stack([_x(r["ops"]) for r in runs])
    T = np.array([r["threads"] for r in runs], float)
    y = np.array([r["exec_s"] for r in runs], float)
    linear = (final if isinstance(final, (OpsExec, NNLSExec))
              else final.linear if isinstance(final, BlendExec) else OpsExec.fit(X, T, y))
    return final, linear, report, float(max(r["ops"].get("rows", 0.0) for r in runs))
