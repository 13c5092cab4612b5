"""Fixed-width sort records (the sort-benchmark layout: 100-byte records, 10-byte keys).

Keys compare as unsigned bytes (memcmp order). numpy has no fast memcmp sort for raw
bytes ('S' strips trailing NULs, 'V' sorts slowly), so a 10-byte key is split into a
big-endian uint64 (bytes 0-7) and uint16 (bytes 8-9) and sorted with the stable
``np.lexsort``. Ties keep input order, so a distributed sort whose merges prefer the
left input on ties is byte-identical to one host sort of the whole file.
"""

from __future__ import annotations

import numpy as np

from colony.errors import DataError

RECORD_SIZE = 100
KEY_SIZE = 10


def _check(record_size: int, key_size: int) -> None:
    if key_size != 10:
        raise DataError(f"key_size={key_size}: only 10-byte keys are supported (sort-benchmark layout)")
    if record_size < key_size:
        raise DataError(f"record_size={record_size} is smaller than the key ({key_size} bytes)")


def as_records(buf, record_size: int = RECORD_SIZE) -> np.ndarray:
    """Bytes -> (n, record_size) uint8 view (no copy)."""
    a = np.frombuffer(buf, dtype=np.uint8)
    if a.size % record_size:
        raise DataError(f"{a.size} bytes is not a whole number of {record_size}-byte records")
    return a.reshape(-1, record_size)


def keys(recs: np.ndarray, key_size: int = KEY_SIZE) -> tuple[np.ndarray, np.ndarray]:
    """(hi uint64, lo uint16) so that (hi, lo) order == memcmp order of the key bytes."""
    _check(recs.shape[1] if recs.ndim == 2 else RECORD_SIZE, key_size)
    hi = np.ascontiguousarray(recs[:, :8]).view(">u8").reshape(-1).astype(np.uint64)
    lo = np.ascontiguousarray(recs[:, 8:10]).view(">u2").reshape(-1).astype(np.uint16)
    return hi, lo


def sort_records(recs: np.ndarray) -> np.ndarray:
    """Stable sort of records by key (returns a new contiguous array)."""
    if len(recs) <= 1:
        return np.array(recs, copy=True)
    hi, lo = keys(recs)
    return recs[np.lexsort((lo, hi))]


def host_sort(buf, record_size: int = RECORD_SIZE) -> bytes:
    """The reference: one stable sort of the whole file on the host."""
    return sort_records(as_records(buf, record_size)).tobytes()


def merge_two(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Stable merge of two key-sorted record arrays; ties take ``a`` first."""
    if len(a) == 0:
        return np.array(b, copy=True)
    if len(b) == 0:
        return np.array(a, copy=True)
    both = np.concatenate([a, b])
    hi, lo = keys(both)
    return both[np.lexsort((lo, hi))]


def count_le(hi: np.ndarray, lo: np.ndarray, key: tuple[int, int], strict: bool = False) -> int:
    """How many leading records of a sorted (hi, lo) run have key <= ``key`` (< if strict)."""
    h, l = key
    i = int(np.searchsorted(hi, np.uint64(h), side="left"))
    j = int(np.searchsorted(hi, np.uint64(h), side="right"))
    if i == j:
        return i
    return i + int(np.searchsorted(lo[i:j], np.uint16(l), side="left" if strict else "right"))


def generate(n: int, seed: int = 0, distinct_keys: int | None = None,
             record_size: int = RECORD_SIZE) -> bytes:
    """n records: random 10-byte keys (or drawn from ``distinct_keys`` values, to force ties)
    and a payload that names the record's input position, so order mistakes are visible."""
    rng = np.random.default_rng(seed)
    recs = np.empty((n, record_size), dtype=np.uint8)
    if distinct_keys:
        pool = rng.integers(0, 256, (distinct_keys, KEY_SIZE), dtype=np.uint8)
        recs[:, :KEY_SIZE] = pool[rng.integers(0, distinct_keys, n)]
    else:
        recs[:, :KEY_SIZE] = rng.integers(0, 256, (n, KEY_SIZE), dtype=np.uint8)
    idx = np.arange(n, dtype=">u8").view(np.uint8).reshape(n, 8)
    recs[:, KEY_SIZE:KEY_SIZE + 8] = idx
    recs[:, KEY_SIZE + 8:] = (np.arange(n, dtype=np.uint64)[:, None] % 251).astype(np.uint8)
    return recs.tobytes()
