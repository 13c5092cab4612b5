"""Computational-storage operations, run chunk by chunk with a context (Intel OAS Harvest
style): the device reads an input in chunks (1 MiB by default), hands each to the
operation with the context it keeps between chunks, and writes what it emits to the
output blocks. Inputs are fetched through COSTA, so an operation never knows whether a
chunk came from its own disk or from a peer device.

New operations subclass :class:`Operation` and are registered with :func:`operation`;
devices only run registered operations, never code sent by a client.
"""

from __future__ import annotations

from typing import Any, Callable, ClassVar, Iterator

import numpy as np

from colony.errors import DataError, UnknownOperation
from colony.nearstore import records as R

DEFAULT_CHUNK = 1 << 20
Emit = Callable[[bytes], None]


class Operation:
    name: ClassVar[str] = ""
    arity: ClassVar[int | None] = 1       # number of inputs; None = any
    in_place: ClassVar[bool] = False      # output overwrites the (single, local) input

    def __init__(self, **params: Any) -> None:
        self.params = params

    def alignment(self) -> int:
        """Chunks are cut at multiples of this many bytes (a record)."""
        return 1

    def output_size(self, input_sizes: list[int]) -> int:
        return sum(input_sizes)

    def begin(self) -> Any:
        return {}

    def step(self, ctx: Any, chunk: bytes, emit: Emit) -> None:
        raise NotImplementedError

    def finish(self, ctx: Any, emit: Emit) -> None:
        pass

    def run(self, inputs: list[Iterator[bytes]], emit: Emit) -> Any:
        """Default driver for one input: step on each chunk, then finish."""
        ctx = self.begin()
        for chunk in inputs[0]:
            self.step(ctx, chunk, emit)
        self.finish(ctx, emit)
        return ctx


_OPS: dict[str, type[Operation]] = {}


def operation(cls: type[Operation]) -> type[Operation]:
    if not cls.name:
        raise UnknownOperation(f"{cls.__name__} needs a class attribute 'name'")
    _OPS[cls.name] = cls
    return cls


def get_operation(name: str, **params: Any) -> Operation:
    try:
        cls = _OPS[name]
    except KeyError:
        raise UnknownOperation(f"no operation {name!r}; registered: {sorted(_OPS)}") from None
    return cls(**params)


def operation_names() -> list[str]:
    return sorted(_OPS)


def chunk_size_for(op: Operation, chunk_size: int) -> int:
    a = op.alignment()
    c = (chunk_size // a) * a
    if c <= 0:
        raise DataError(f"chunk size {chunk_size} is smaller than one record ({a} bytes)")
    return c


class _RecordOp(Operation):
    def alignment(self) -> int:
        return int(self.params.get("record_size", R.RECORD_SIZE))

    def _recs(self, chunk: bytes) -> np.ndarray:
        R._check(self.alignment(), int(self.params.get("key_size", R.KEY_SIZE)))
        return R.as_records(chunk, self.alignment())


@operation
class SortOp(_RecordOp):
    """Local sort: each chunk becomes a sorted run in the context; finish merges the runs
    (stable) and emits the sorted part. The output goes to new blocks on the same device
    (``in_place=True`` in params writes it back over the input, as OAS Harvest does)."""

    name = "sort"

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self.in_place = bool(params.get("in_place", False))

    def begin(self) -> dict:
        return {"runs": [], "chunks": 0}

    def step(self, ctx: dict, chunk: bytes, emit: Emit) -> None:
        ctx["runs"].append(R.sort_records(self._recs(chunk)))
        ctx["chunks"] += 1

    def finish(self, ctx: dict, emit: Emit) -> None:
        runs = ctx.pop("runs")
        if not runs:
            return
        out = runs[0] if len(runs) == 1 else R.sort_records(np.concatenate(runs))
        del runs
        emit(out.tobytes())


@operation
class MergeOp(_RecordOp):
    """Streaming two-way merge of two key-sorted inputs, chunk by chunk.

    The context holds one buffered chunk per input. A record of the left input is safe to
    emit once its key <= the last buffered key of the right input (no later right record
    can precede it); a right record once its key < the last buffered left key (ties go
    left). At least one side always drains, so memory stays at about two chunks.
    """

    name = "merge"
    arity = 2

    def run(self, inputs: list[Iterator[bytes]], emit: Emit) -> dict:
        ctx = {"chunks": [0, 0], "emitted": 0}
        its = [iter(inputs[0]), iter(inputs[1])]
        bufs: list[np.ndarray | None] = [None, None]
        keys: list[tuple[np.ndarray, np.ndarray] | None] = [None, None]
        done = [False, False]
        rs = self.alignment()
        empty = np.empty((0, rs), dtype=np.uint8)

        def refill(i: int) -> None:
            while not done[i] and (bufs[i] is None or len(bufs[i]) == 0):
                chunk = next(its[i], None)
                if chunk is None:
                    done[i] = True
                    bufs[i] = empty
                else:
                    ctx["chunks"][i] += 1
                    bufs[i] = self._recs(chunk)
                keys[i] = R.keys(bufs[i]) if len(bufs[i]) else (np.empty(0, np.uint64), np.empty(0, np.uint16))

        while True:
            refill(0)
            refill(1)
            a, b = bufs[0], bufs[1]
            if len(a) == 0 and len(b) == 0:
                break
            if len(b) == 0:          # right input exhausted
                na, nb = len(a), 0
            elif len(a) == 0:        # left input exhausted
                na, nb = 0, len(b)
            else:
                last_a = (int(keys[0][0][-1]), int(keys[0][1][-1]))
                last_b = (int(keys[1][0][-1]), int(keys[1][1][-1]))
                # an exhausted side puts no bound on the other (its last key is +inf)
                na = len(a) if done[1] else R.count_le(*keys[0], last_b)
                nb = len(b) if done[0] else R.count_le(*keys[1], last_a, strict=True)
            out = R.merge_two(a[:na], b[:nb])
            if len(out):
                emit(out.tobytes())
                ctx["emitted"] += len(out)
            bufs[0], bufs[1] = a[na:], b[nb:]
            keys[0] = (keys[0][0][na:], keys[0][1][na:])
            keys[1] = (keys[1][0][nb:], keys[1][1][nb:])
        return ctx
