"""Deterministic, vectorized particle generators (uniform, clustered, time-stepped simulation).

All randomness comes from numpy's PCG64DXSM generator (the fastest here, measured against
SFC64, Philox and MT19937) seeded by the caller, so the same arguments always give the same
table, on any machine.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

import numpy as np
import pyarrow as pa

from colony.data.schema import PARTICLE_SCHEMA
from colony.errors import DataError


def _rng(seed: int) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64DXSM(seed))


def _table(ids, time, pid, pos, vel) -> pa.Table:
    cols = [ids, time, pid, pos[0], pos[1], pos[2], vel[0], vel[1], vel[2]]
    return pa.Table.from_arrays([pa.array(c) for c in cols], schema=PARTICLE_SCHEMA)


def _check_n(n: int) -> None:
    if n < 0:
        raise DataError(f"row count must be >= 0, got {n}")


def uniform(n: int, seed: int = 0, n_particles: int | None = None, steps: int = 1,
            start_id: int = 0) -> pa.Table:
    """n records with positions uniform in [0,1]^3 and velocities uniform in [-100,100]^3.

    Each record belongs to one of ``n_particles`` particles (default: n) at one of
    ``steps`` time steps, both drawn uniformly, so low id bits are balanced.
    """
    _check_n(n)
    n_particles = n if n_particles is None else n_particles
    if n_particles <= 0 and n > 0:
        raise DataError("n_particles must be >= 1")
    rng = _rng(seed)
    cols = np.empty((6, n))
    rng.random(out=cols)          # one pass of the generator over all six float columns
    pos, vel = cols[:3], cols[3:]
    vel *= 200.0
    vel -= 100.0
    ids = np.arange(start_id, start_id + n, dtype=np.uint64)
    pid = rng.integers(0, max(n_particles, 1), size=n, dtype=np.uint64)
    time = (rng.integers(0, steps, size=n, dtype=np.uint64) if steps > 1
            else np.zeros(n, dtype=np.uint64))
    return _table(ids, time, pid, pos, vel)


def clustered(n: int, seed: int = 0, n_clusters: int = 8, skew: float = 1.2,
              spread: float = 0.03, start_id: int = 0) -> pa.Table:
    """n records in Gaussian blobs whose sizes follow a Zipf law with exponent ``skew``.

    Positions wrap around the unit box (periodic), velocities are a per-blob drift plus
    noise, clipped to [-100, 100]. Useful to break the estimator's uniformity assumption.
    """
    _check_n(n)
    if n_clusters < 1:
        raise DataError("n_clusters must be >= 1")
    rng = _rng(seed)
    weights = 1.0 / np.arange(1, n_clusters + 1) ** skew
    counts = rng.multinomial(n, weights / weights.sum())
    centers = rng.random((3, n_clusters))
    drift = rng.uniform(-60, 60, (3, n_clusters))
    pos = np.repeat(centers, counts, axis=1) + rng.standard_normal((3, n)) * spread
    np.mod(pos, 1.0, out=pos)
    vel = np.repeat(drift, counts, axis=1) + rng.standard_normal((3, n)) * 15.0
    np.clip(vel, -100.0, 100.0, out=vel)
    ids = np.arange(start_id, start_id + n, dtype=np.uint64)
    pid = rng.integers(0, max(n, 1), size=n, dtype=np.uint64)
    return _table(ids, np.zeros(n, dtype=np.uint64), pid, pos, vel)


@dataclass
class Simulation:
    """N particles moving ballistically in a periodic unit box, split over ranks by x slab.

    Each :meth:`step` advances time and returns one snapshot batch per rank, as a
    simulation would hand them to its local device: rows sorted by (time, rank),
    particles of a rank in particle-id order. Particles migrate between ranks as
    they move, so assembling a track needs data from many ranks (the sifting problem).
    """

    n_particles: int
    n_ranks: int = 4
    seed: int = 0
    dt: float = 1e-3
    time: int = 0
    _next_id: int = 0
    _pos: np.ndarray = field(init=False, repr=False)
    _vel: np.ndarray = field(init=False, repr=False)
    _pid: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.n_particles < 1 or self.n_ranks < 1:
            raise DataError("Simulation needs n_particles >= 1 and n_ranks >= 1")
        rng = _rng(self.seed)
        self._pos = rng.random((3, self.n_particles))
        self._vel = rng.uniform(-100.0, 100.0, (3, self.n_particles))
        self._pid = np.arange(self.n_particles, dtype=np.uint64)

    def step(self) -> list[tuple[int, pa.Table]]:
        """Advance one time step; return [(rank, snapshot table)] for every rank."""
        self._pos += self._vel * self.dt
        np.mod(self._pos, 1.0, out=self._pos)
        rank = (self._pos[0] * self.n_ranks).astype(np.uint16 if self.n_ranks < 65536 else np.int64)
        np.minimum(rank, self.n_ranks - 1, out=rank)
        order = np.argsort(rank, kind="stable")      # radix sort on small ints: O(n)
        bounds = np.searchsorted(rank[order], np.arange(self.n_ranks + 1))
        pos, vel, pid = self._pos[:, order], self._vel[:, order], self._pid[order]
        ids = np.arange(self._next_id, self._next_id + self.n_particles, dtype=np.uint64)
        self._next_id += self.n_particles
        time = np.full(self.n_particles, self.time, dtype=np.uint64)
        out = []
        for r in range(self.n_ranks):
            a, b = bounds[r], bounds[r + 1]
            out.append((r, _table(ids[a:b], time[a:b], pid[a:b], pos[:, a:b], vel[:, a:b])))
        self.time += 1
        return out

    def run(self, steps: int) -> Iterator[tuple[int, int, pa.Table]]:
        """Yield (time, rank, snapshot) for ``steps`` time steps."""
        for _ in range(steps):
            t = self.time
            for rank, table in self.step():
                yield t, rank, table
