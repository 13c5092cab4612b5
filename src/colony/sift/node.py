"""One device's share of a sifting pipeline: a PE per stage, an outbox, final bins.

Exactly-once hand-off, in three rules:

1. **Idempotent acceptance.** Every object travels under a unique key (see
   :mod:`colony.sift.plan`). A node remembers every key it ever accepted; a second
   delivery of the same key is acknowledged but not stored again, so a retried
   delivery is never counted twice, even after the first copy was compacted away.
2. **Keep until acknowledged.** Compaction writes its parts to the outbox and only
   then drops the consumed inputs; a part leaves the outbox only when its receiver
   acknowledged it (the receiver acknowledges after it stored the part).
3. **Durable when there is a workdir.** With ``workdir`` set, every pool object, the
   accepted-key journal and the per-stage compaction counters live on local disk too;
   a compaction commits by atomically writing a manifest of the inputs it consumed.
   A node restarted on the same workdir (a restarted device actor) reloads all of it,
   finishes interrupted commits and throws away uncommitted parts, so it resumes
   exactly where the acknowledged state says it was.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections import defaultdict
from pathlib import Path
from urllib.parse import quote, unquote

import numpy as np
import pyarrow as pa

from colony import codec
from colony.sift.partition import id_array, routing_value, split_by_ids
from colony.errors import SiftError
from colony.sift.plan import BINS_STAGE, SiftPlan, make_key, parse_key
from colony.store import ObjectStore
from colony.errors import UnknownKey

OUTBOX = "sift.out"
BINS = "sift.bins"
TRACK_ORDER = [("particle_id", "ascending"), ("time", "ascending")]


def stage_pool(stage: int | str) -> str:
    return BINS if stage == BINS_STAGE else f"sift.s{stage}"


def sort_tracks(table: pa.Table) -> pa.Table:
    """Rows ordered by (particle_id, time): one contiguous, time-ordered track per particle."""
    keys = [(c, o) for c, o in TRACK_ORDER if c in table.column_names]
    return table.sort_by(keys) if table.num_rows else table


def _concat(tables: list[pa.Table]) -> pa.Table:
    try:
        return pa.concat_tables(tables)
    except pa.ArrowInvalid as e:
        raise SiftError(f"objects sifted together have different schemas ({e}); inject one dataset "
                        "per sifting run, or cast batches to one schema first") from e


class _Disk:
    """Mirror of the node's pools, journal and counters on local disk (atomic renames)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        (root / "objects").mkdir(parents=True, exist_ok=True)
        (root / "commits").mkdir(exist_ok=True)
        self._journal = open(root / "accepted.log", "a", encoding="utf-8")

    def _path(self, pool: str, key: str) -> Path:
        return self.root / "objects" / pool / quote(key, safe="")

    def write(self, pool: str, key: str, buf: pa.Buffer) -> None:
        p = self._path(pool, key)
        p.parent.mkdir(exist_ok=True)
        tmp = p.with_name(p.name + ".tmp")
        with open(tmp, "wb") as f:
            f.write(memoryview(buf))
        os.replace(tmp, p)

    def remove(self, pool: str, key: str) -> None:
        try:
            self._path(pool, key).unlink()
        except FileNotFoundError:
            pass

    def accepted(self, key: str) -> None:
        self._journal.write(key + "\n")
        self._journal.flush()

    def write_json(self, name: str, obj) -> None:
        p = self.root / name
        tmp = p.with_name(p.name + ".tmp")
        tmp.write_text(json.dumps(obj))
        os.replace(tmp, p)

    def load(self):
        """(objects {pool: {key: bytes}}, accepted keys, counters, commits {name: manifest})."""
        objects: dict[str, dict[str, pa.Buffer]] = defaultdict(dict)
        for pool_dir in (self.root / "objects").iterdir():
            for f in pool_dir.iterdir():
                if f.name.endswith(".tmp"):
                    f.unlink()
                    continue
                objects[pool_dir.name][unquote(f.name)] = pa.py_buffer(f.read_bytes())
        log = self.root / "accepted.log"
        accepted = set(log.read_text(encoding="utf-8").split()) if log.exists() else set()
        cpath = self.root / "counters.json"
        counters = json.loads(cpath.read_text()) if cpath.exists() else {}
        commits = {f.name: json.loads(f.read_text()) for f in (self.root / "commits").iterdir()
                   if f.suffix == ".json"}
        return objects, accepted, counters, commits

    def commit(self, name: str, manifest: dict) -> None:
        self.write_json(f"commits/{name}", manifest)

    def done(self, name: str) -> None:
        try:
            (self.root / "commits" / name).unlink()
        except FileNotFoundError:
            pass

    def close(self) -> None:
        self._journal.close()


class SiftNode:
    """The PEs of one device. Pure: it moves no data itself; callers deliver its outbox."""

    def __init__(self, device: str, plan: SiftPlan, store: ObjectStore | None = None,
                 workdir: str | os.PathLike | None = None, threshold_rows: int = 1 << 20,
                 threshold_bytes: int | None = None, threads: int = 1) -> None:
        self.device = device
        self.plan = plan
        self.index = plan.index(device)
        self.store = store or ObjectStore(device)
        self.threshold_rows = threshold_rows
        self.threshold_bytes = threshold_bytes
        self.threads = threads
        self._lock = threading.RLock()
        self._accepted: set[str] = set()
        self._seq: dict[str, int] = {}
        for s in range(1, plan.stages + 1):
            self.store.create_pool(stage_pool(s))
        self.store.create_pool(OUTBOX)
        self.store.create_pool(BINS)
        self._disk = _Disk(Path(workdir) / "sift" / device) if workdir else None
        self.recovered = self._recover() if self._disk else {}

    # -- durability ----------------------------------------------------------
    def _recover(self) -> dict:
        objects, accepted, counters, commits = self._disk.load()
        self._accepted = accepted
        self._seq = {k: int(v) for k, v in counters.items()}
        committed_outputs: set[str] = set()
        finished = 0
        for name, man in commits.items():
            committed_outputs.update(man["outputs"])
            for pool, key in man["inputs"]:           # finish the interrupted commit
                objects.get(pool, {}).pop(key, None)
                self._disk.remove(pool, key)
            self._disk.done(name)
            finished += 1
        dropped = 0
        pending = self._uncommitted_outputs()
        for pool, objs in objects.items():
            for key, buf in objs.items():
                if pool == OUTBOX and key not in committed_outputs and key in pending:
                    dropped += 1
                    self._disk.remove(pool, key)
                    continue
                self.store.create_pool(pool)
                self.store.put(pool, key, buf)
        return {"objects": sum(len(o) for o in objects.values()) - dropped, "accepted": len(accepted),
                "commits_finished": finished, "uncommitted_parts_dropped": dropped}

    def _uncommitted_outputs(self) -> set[str]:
        p = self._disk.root / "pending.json"
        return set(json.loads(p.read_text())) if p.exists() else set()

    def _next_seq(self, name: str) -> int:
        seq = self._seq.get(name, 0)
        self._seq[name] = seq + 1
        if self._disk:
            self._disk.write_json("counters.json", self._seq)   # before use: never reused
        return seq

    def _put(self, pool: str, key: str, obj) -> int:
        entry = self.store.put(pool, key, obj)
        if self._disk:
            self._disk.write(pool, key, self.store.get(pool, key))
        return entry.rows

    def _drop(self, pool: str, key: str) -> None:
        try:
            self.store.drop(pool, key)
        except UnknownKey:
            pass
        if self._disk:
            self._disk.remove(pool, key)

    # -- input ---------------------------------------------------------------
    def accept(self, key: str, obj) -> bool:
        """Store an incoming object once. True: stored now; False: a duplicate, already counted."""
        k = parse_key(key)
        if k.stage != BINS_STAGE and not 1 <= k.stage <= self.plan.stages:
            raise SiftError(f"{key!r} is for stage {k.stage}; this plan has stages 1..{self.plan.stages}")
        owner = self.plan.owner_of(k.tag)
        if owner != self.device:
            raise SiftError(f"{key!r} belongs to device {owner!r}, not {self.device!r}: misrouted delivery")
        with self._lock:
            if key in self._accepted:
                return False
            self._put(stage_pool(k.stage), key, obj)
            self._accepted.add(key)
            if self._disk:
                self._disk.accepted(key)
            return True

    def seen(self, key: str) -> bool:
        """Was ``key`` accepted before (by this node or before a restart)?"""
        return key in self._accepted

    def inject(self, table: pa.Table | list[pa.Table], source: str, seq: int) -> str:
        """Hand a snapshot from a simulation rank to this device's stage-1 PE."""
        tables = table if isinstance(table, list) else [table]
        for t in tables:
            if not isinstance(t, pa.Table) or not tables:
                raise SiftError(f"inject needs Arrow tables, got {type(t).__name__}")
            id_array(t)   # refuse tables without usable particle ids now, not mid-pipeline
        key = make_key(1, 0, 0, source, seq, self.index)
        self.accept(key, tables)
        return key

    # -- compaction ----------------------------------------------------------
    def held(self, stage: int) -> tuple[int, int]:
        """(rows, bytes) waiting in a stage's PE."""
        es = self.store.entries(stage_pool(stage))
        return sum(e.rows for e in es), sum(e.nbytes for e in es)

    def due(self, stage: int) -> bool:
        rows, nbytes = self.held(stage)
        if rows == 0:
            return False
        return rows >= self.threshold_rows or (self.threshold_bytes is not None and nbytes >= self.threshold_bytes)

    def compact(self, stage: int, force: bool = False, codec_name: str = "none") -> dict:
        """Split everything a stage's PE holds into 2^k parts per matched prefix; park them in the outbox.

        Returns timings: ``split_s`` (concat + partition kernel), ``pack_s`` (serializing parts).
        """
        stats = {"stage": stage, "rows": 0, "inputs": 0, "parts": 0, "split_s": 0.0, "pack_s": 0.0}
        with self._lock:
            if not (force or self.due(stage)):
                return stats
            pool = stage_pool(stage)
            keys = self.store.list(pool)
            if not keys:
                return stats
            groups: dict[tuple[int, int], list[str]] = defaultdict(list)
            for key in keys:
                groups[parse_key(key).prefix].append(key)
            seq = self._next_seq(f"s{stage}")
            last = stage >= self.plan.stages
            outputs: list[tuple[str, list[pa.Table]]] = []
            shift = self.plan.shift(stage)
            for (nbits, matched), gkeys in sorted(groups.items()):
                t0 = time.perf_counter()
                table = _concat([t for key in gkeys for t in self.store.get_tables(pool, key)])
                rv = routing_value(id_array(table), self.plan.routing)
                pids = ((rv >> np.uint64(shift)) & np.uint64(self.plan.fanout - 1)).astype(
                    np.uint8 if self.plan.k <= 8 else np.uint16)
                parts = split_by_ids(table, pids, self.plan.fanout, threads=self.threads)
                stats["split_s"] += time.perf_counter() - t0
                stats["rows"] += table.num_rows
                for p, part in enumerate(parts):
                    if part.num_rows == 0:
                        continue
                    m = matched | (p << shift)
                    nb = nbits + self.plan.k
                    tag = self.plan.next_tag(stage, self.index, p, m)
                    nxt = BINS_STAGE if last else stage + 1
                    outputs.append((make_key(nxt, nb, m, self.device, seq, tag), [part]))
            stats["inputs"] = len(keys)
            t0 = time.perf_counter()
            out_keys = [k for k, _ in outputs]
            if self._disk:
                self._disk.write_json("pending.json", out_keys)
            for key, tables in outputs:
                self._put(OUTBOX, key, codec.pack(tables, codec_name))
            stats["pack_s"] = time.perf_counter() - t0
            stats["parts"] = len(outputs)
            name = f"s{stage}-c{seq}.json"
            if self._disk:                                # commit point
                self._disk.commit(name, {"inputs": [[pool, k] for k in keys], "outputs": out_keys})
            for key in keys:
                self._drop(pool, key)
            if self._disk:
                self._disk.done(name)
                self._disk.write_json("pending.json", [])
        return stats

    # -- hand-off ------------------------------------------------------------
    def outbox(self, stage: int | str | None = None) -> list[tuple[str, str]]:
        """[(key, owner device)] of parts not yet acknowledged (optionally only those for ``stage``)."""
        keys = self.store.list(OUTBOX)
        if stage is not None:
            keys = [k for k in keys if parse_key(k).stage == stage]
        return [(k, self.plan.owner_of(parse_key(k).tag)) for k in keys]

    def outgoing(self, key: str) -> pa.Buffer:
        return self.store.get(OUTBOX, key)

    def ack(self, key: str) -> None:
        """The receiver stored ``key``: it may leave the outbox."""
        self._drop(OUTBOX, key)

    # -- final bins ----------------------------------------------------------
    def bins(self) -> dict[int, int]:
        """{bin id: rows} of the final bins held here."""
        out: dict[int, int] = defaultdict(int)
        for e in self.store.entries(BINS):
            out[parse_key(e.key).matched] += e.rows
        return dict(out)

    def bin_table(self, bin_id: int) -> pa.Table | None:
        """All rows of one final bin, as tracks (sorted by particle_id, time); None when empty."""
        keys = [k for k in self.store.list(BINS) if parse_key(k).matched == bin_id]
        if not keys:
            return None
        return sort_tracks(_concat([t for k in keys for t in self.store.get_tables(BINS, k)]))

    def track(self, particle_id: int) -> pa.Table | None:
        """The time-ordered records of one particle (None when its bin is empty here)."""
        if not 0 <= particle_id < 1 << 64:
            raise SiftError(f"particle id {particle_id} is not a uint64; ids are 0..2**64-1")
        b = int(self.bin_of(particle_id))
        t = self.bin_table(b)
        if t is None:
            return None
        ids = t.column("particle_id").to_numpy()
        lo, hi = np.searchsorted(ids, np.uint64(particle_id), "left"), np.searchsorted(ids, np.uint64(particle_id), "right")
        return t.slice(int(lo), int(hi - lo))

    def bin_of(self, particle_id: int) -> int:
        v = routing_value(np.array([particle_id], dtype=np.uint64), self.plan.routing)
        return int(v[0] & np.uint64(self.plan.total_bins - 1))

    def status(self) -> dict:
        stages = {s: dict(zip(("rows", "bytes"), self.held(s))) for s in range(1, self.plan.stages + 1)}
        bins = self.bins()
        return {"device": self.device, "stages": stages, "outbox": len(self.store.list(OUTBOX)),
                "bins": len(bins), "bin_rows": sum(bins.values()), "accepted": len(self._accepted)}

    def close(self) -> None:
        if self._disk:
            self._disk.close()
