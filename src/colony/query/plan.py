"""SQL -> optimized DataFusion logical plan -> Substrait bytes, and executing such bytes.

The client plans against the tables' schemas only (no data), so planning is cheap and the
device receives a portable plan. Execution registers each table as one DataFusion
MemTable whose partitions are the objects matched by the table's pool/key pattern, i.e.
the UNION ALL of the partitions.
"""

from __future__ import annotations

import copy
import functools
import json
import re
import time
from dataclasses import dataclass

import pyarrow as pa
from datafusion import RuntimeEnvBuilder, SessionConfig, SessionContext
from datafusion import substrait as ss

from colony.errors import QueryError, QueryMemoryExceeded, QueryTimeout, ResultTooLarge, SqlError, UnknownColumn, UnknownTable, UnsupportedFunction


@dataclass(frozen=True)
class TableSpec:
    """A SQL table name bound to the objects of one pool whose keys match a glob pattern."""

    name: str
    pool: str
    pattern: str = "*"


def _classify(msg: str) -> type[SqlError]:
    m = msg.lower()
    if "table" in m and ("not found" in m or "doesn't exist" in m):
        return UnknownTable
    if ("field" in m or "column" in m) and ("not found" in m or "no field" in m):
        return UnknownColumn
    if "invalid function" in m or "function" in m and "not found" in m:
        return UnsupportedFunction
    return SqlError


def logical_schema(schema: pa.Schema) -> pa.Schema:
    """``schema`` with each dictionary-encoded column as its value type: DataFusion's Substrait
    producer cannot encode a literal compared with a dictionary column (`city = 'Lima'` on a
    pandas categorical failed to plan), and its consumer runs a plan made for the value type
    on dictionary-encoded data unchanged."""
    if not any(pa.types.is_dictionary(f.type) for f in schema):
        return schema
    return pa.schema([f.with_type(f.type.value_type) if pa.types.is_dictionary(f.type) else f for f in schema],
                     metadata=schema.metadata)


def planning_context(schemas: dict[str, pa.Schema]) -> SessionContext:
    """A context with empty tables of the given schemas (plans need schemas, not data), each
    as :func:`logical_schema` reads it."""
    ctx = SessionContext()
    for name, schema in schemas.items():
        ctx.register_record_batches(name, [[pa.RecordBatch.from_pylist([], schema=logical_schema(schema))]])
    return ctx


def to_substrait(sql: str, schemas: dict[str, pa.Schema]) -> bytes:
    """Plan SQL with DataFusion's optimizer and encode it as Substrait bytes."""
    if not sql or not sql.strip():
        raise SqlError("empty SQL statement")
    ctx = planning_context(schemas)
    try:
        ctx.sql(sql).optimized_logical_plan()           # clear planner errors first
        return bytes(ss.Serde.serialize_bytes(sql, ctx))
    except Exception as e:  # noqa: BLE001 - DataFusion raises plain Exceptions
        msg = str(e).split("\n")[0]
        kind = _classify(msg)
        raise kind(f"{msg[:300]} (tables: {', '.join(f'{n}({list(s.names)})' for n, s in schemas.items())})") \
            from None


@functools.cache
def _tiny_plan() -> bytes:
    return to_substrait("select x from t where x > 0", {"t": pa.schema([("x", pa.int64())])})


def warm_thread() -> None:
    """Decode and print a tiny plan on this thread, as a device's decision does per query.

    DataFusion's allocator (mimalloc) commits a fresh heap the first time a thread allocates
    in it: ~4.5 ms of CPU per thread in a Ray actor's handler threads on this VM, which the
    first decisions on each thread paid (up to 9 ms of a TPC-H query's 16 ms cold estimate).
    A device pays it once per thread when it starts instead."""
    ss.Serde.deserialize_bytes(_tiny_plan()).to_json()


def execution_context(threads: int, memory_limit: int | None = None) -> SessionContext:
    """DataFusion context with the device's thread budget and a per-query memory pool."""
    cfg = SessionConfig().with_target_partitions(max(1, int(threads)))
    rt = RuntimeEnvBuilder()
    if memory_limit:
        rt = rt.with_greedy_memory_pool(int(memory_limit))
    return SessionContext(cfg, rt)


def register(ctx: SessionContext, name: str, partitions: list[list[pa.Table]], schema: pa.Schema | None = None,
             max_partitions: int | None = None):
    """Register one table as the union of its partitions (one per object).

    ``max_partitions`` (the thread budget) deals objects round-robin into at most that many
    DataFusion partitions, so a 1-thread device does not scan its objects in parallel.
    """
    parts = []
    for tables in partitions:
        batches = [b for t in tables for b in t.to_batches(max_chunksize=65_536)]
        if batches:
            parts.append(batches)
    if max_partitions and len(parts) > max_partitions:
        dealt: list[list] = [[] for _ in range(max_partitions)]
        for i, p in enumerate(parts):
            dealt[i % max_partitions].extend(p)
        parts = dealt
    if not parts:
        if schema is None:
            raise UnknownTable(f"table {name!r} has no objects and no schema")
        parts = [[pa.RecordBatch.from_pylist([], schema=schema)]]
    ctx.register_record_batches(name, parts)


# DataFusion errors whose cause is the query's, with what a user can write instead
_HINTS = (("non UTF-8 data", " (a string function read a binary column, which DataFusion reads as UTF-8 "
                             "text; encode(column, 'hex') turns bytes into text)"),)


def _hint(msg: str) -> str:
    return next((h for cue, h in _HINTS if cue in msg), "")


def execute(ctx: SessionContext, plan_bytes: bytes, timeout_s: float | None = None,
            max_result_bytes: int | None = None) -> pa.Table:
    """Run Substrait bytes, streaming batches so timeout and result cap are enforced as we go."""
    from colony.errors import BadPlan
    try:
        plan = ss.Serde.deserialize_bytes(plan_bytes)
        try:
            lp = ss.Consumer.from_substrait_plan(ctx, plan)
        except Exception as e:  # noqa: BLE001
            if "duplicate unqualified field name" not in str(e):
                raise
            plan = _unique_names(plan_bytes)
            lp = ss.Consumer.from_substrait_plan(ctx, plan)
    except Exception as e:  # noqa: BLE001
        msg = str(e).split("\n")[0][:300]
        if "decode" in msg.lower() or "protobuf" in msg.lower() or "substrait" in msg.lower() and "parse" in msg.lower():
            raise BadPlan(f"malformed Substrait plan: {msg}") from None
        raise _classify(msg)(f"plan does not bind on this device: {msg}") from None
    t0 = time.perf_counter()
    try:
        df = ctx.create_dataframe_from_logical_plan(lp)
        schema = df.schema()
        batches, total = [], 0
        for rb in df.execute_stream():
            b = rb.to_pyarrow()
            total += b.nbytes
            if max_result_bytes is not None and total > max_result_bytes:
                raise ResultTooLarge(f"result exceeds the device's cap of {max_result_bytes} bytes; "
                                     "add a filter/limit or push the query back")
            if timeout_s is not None and time.perf_counter() - t0 > timeout_s:
                raise QueryTimeout(f"query ran past the device's timeout of {timeout_s:.1f} s; "
                                   "narrow it or raise the timeout")
            batches.append(b)
    except QueryError:
        raise
    except Exception as e:  # noqa: BLE001
        msg = str(e).split("\n")[0][:300]
        if "resources exhausted" in msg.lower() or "memory" in msg.lower():
            raise QueryMemoryExceeded(f"query exceeded the device's per-query memory limit: {msg}") from None
        raise QueryError(f"query failed on the device: {msg}{_hint(msg)}") from None
    out = pa.Table.from_batches(batches, schema=schema)
    if len(set(out.column_names)) < out.num_columns:
        out = out.rename_columns(unique_names(out.column_names))
    return out


def unique_names(names: list[str]) -> list[str]:
    """``names`` with each repeat suffixed ``:2``, ``:3``... A result whose names repeat
    (`select r1.seq, r2.seq ... join`) travels under these: DataFusion's consumer refuses a
    plan that aliases its output with repeated names, and Ray's Arrow serializer looks a
    table's columns up by name. The client puts the plan's names back
    (:func:`with_plan_names`)."""
    seen: dict = {}
    out = []
    for n in names:
        seen[n] = seen.get(n, 0) + 1
        out.append(n if seen[n] == 1 else f"{n}:{seen[n]}")
    return out


def with_plan_names(table: pa.Table | None, plan_bytes: bytes) -> pa.Table | None:
    """The answer under its plan's output names (see :func:`unique_names`)."""
    if table is None or len(set(table.column_names)) < table.num_columns \
            or not any(":" in n for n in table.column_names):
        return table
    from colony.query.estimate import plan_json
    names = plan_json(plan_bytes)["relations"][0]["root"].get("names", [])
    return table.rename_columns(names) if len(names) == table.num_columns and \
        unique_names(names) == table.column_names else table


def _unique_names(plan_bytes: bytes):
    """The plan with its output names made unique (:func:`unique_names`)."""
    from colony.query.estimate import plan_json
    pj = plan_json(plan_bytes)
    root = pj["relations"][0]["root"]
    root["names"] = unique_names(list(root.get("names", [])))
    return ss.Plan.from_json(json.dumps(pj))


def run_sql_locally(sql: str, tables: dict[str, list[pa.Table]], threads: int = 1) -> pa.Table:
    """Reference answer: the same SQL over the same data in one local DataFusion context."""
    ctx = execution_context(threads)
    for name, parts in tables.items():
        register(ctx, name, [[t] for t in parts])
    return ctx.sql(sql).to_arrow_table()


# -- split plans -------------------------------------------------------------------------
SPLIT_TABLE = "__colony_split__"


def split_table(i: int) -> str:
    """Name the host reads the i-th device-side result of a split under."""
    return f"{SPLIT_TABLE}{i}"


def split_plans(plan_bytes: bytes) -> tuple[list[bytes], dict] | None:
    """Cut a plan at its single-table filter/projection subtrees (below joins too): (lower plan
    bytes per cut, upper plan JSON template).

    The upper plan reads the i-th lower result as table ``split_table(i)``; its read
    relations are filled in by :func:`upper_plan` once the lower results' schemas are known.
    """
    from colony.query.estimate import plan_json, split_points
    pj = plan_json(plan_bytes)
    cuts = split_points(pj["relations"][0]["root"]["input"])
    if not cuts or any(_width_of(sub, pj) == 0 for _, sub in cuts):
        return None
    lowers = []
    for _, sub in cuts:
        lower = copy.deepcopy(pj)
        lower["relations"][0]["root"] = {"input": sub, "names": [f"c{i}" for i in range(_width_of(sub, pj))]}
        lowers.append(bytes(ss.Plan.from_json(json.dumps(lower)).encode()))
    return lowers, {"plan": pj, "paths": [p for p, _ in cuts]}


def split_inputs(results: list) -> dict:
    """The host's inputs of a split: the i-th device result as table ``split_table(i)``."""
    return {split_table(i): [r] for i, r in enumerate(results)}


def _width_of(rel: dict, pj: dict) -> int:
    """Output column count of a read/filter/project subtree."""
    k, b = next(iter(rel.items()))
    common = b.get("common", {})
    if "emit" in common:
        return len(common["emit"].get("outputMapping", []))
    if k == "read":
        if "projection" in b:          # proto3 JSON omits an empty item list
            return len(b["projection"].get("select", {}).get("structItems", []))
        return len(b["baseSchema"]["names"])
    if k == "filter":
        return _width_of(b["input"], pj)
    if k == "project":
        return _width_of(b["input"], pj) + len(b.get("expressions", []))
    raise QueryError(f"cannot size relation {k}")


def upper_plan(template: dict, lower_schemas: list[pa.Schema]) -> bytes:
    """The host part of a split: the original plan with each cut subtree read from a table."""
    from colony.query.estimate import _get
    pj = copy.deepcopy(template["plan"])
    for i, (path, schema) in enumerate(zip(template["paths"], lower_schemas)):
        name = split_table(i)
        schema = pa.schema([pa.field(f"c{j}", f.type) for j, f in enumerate(schema)])
        ctx = planning_context({name: schema})
        read = json.loads(ss.Serde.deserialize_bytes(ss.Serde.serialize_bytes(f"select * from {name}", ctx)).to_json())
        read_rel = _find_read(read["relations"][0]["root"]["input"])
        parent = _get(pj["relations"][0]["root"]["input"], path[:-1])
        parent[path[-1]] = {"read": read_rel}
    return bytes(ss.Plan.from_json(json.dumps(pj)).encode())


def _find_read(rel: dict) -> dict:
    k, b = next(iter(rel.items()))
    if k == "read":
        return b
    return _find_read(b["input"])


def split_schema(schema: pa.Schema) -> pa.Schema:
    return pa.schema([pa.field(f"c{i}", f.type) for i, f in enumerate(schema)])


_ = re
