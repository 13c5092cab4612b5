"""The Flight SQL metadata results (schemas fixed by FlightSql.proto): catalogs, pools as
database schemas, tables with their Arrow schemas, table types, SqlInfo, key and type info."""

from __future__ import annotations

import re

import pyarrow as pa

from colony.gateway import FlightSql_pb2 as fsql

_U8, _NN = pa.utf8(), False

CATALOGS = pa.schema([pa.field("catalog_name", _U8, _NN)])
DB_SCHEMAS = pa.schema([pa.field("catalog_name", _U8), pa.field("db_schema_name", _U8, _NN)])
TABLES = pa.schema([pa.field("catalog_name", _U8), pa.field("db_schema_name", _U8),
                    pa.field("table_name", _U8, _NN), pa.field("table_type", _U8, _NN)])
TABLES_WITH_SCHEMA = TABLES.append(pa.field("table_schema", pa.binary(), _NN))
TABLE_TYPES = pa.schema([pa.field("table_type", _U8, _NN)])
PRIMARY_KEYS = pa.schema([pa.field("catalog_name", _U8), pa.field("db_schema_name", _U8),
                          pa.field("table_name", _U8, _NN), pa.field("column_name", _U8, _NN),
                          pa.field("key_name", _U8), pa.field("key_sequence", pa.int32(), _NN)])
KEYS = pa.schema([pa.field("pk_catalog_name", _U8), pa.field("pk_db_schema_name", _U8),
                  pa.field("pk_table_name", _U8, _NN), pa.field("pk_column_name", _U8, _NN),
                  pa.field("fk_catalog_name", _U8), pa.field("fk_db_schema_name", _U8),
                  pa.field("fk_table_name", _U8, _NN), pa.field("fk_column_name", _U8, _NN),
                  pa.field("key_sequence", pa.int32(), _NN), pa.field("fk_key_name", _U8),
                  pa.field("pk_key_name", _U8), pa.field("update_rule", pa.uint8(), _NN),
                  pa.field("delete_rule", pa.uint8(), _NN)])
XDBC_TYPES = pa.schema([
    pa.field("type_name", _U8, _NN), pa.field("data_type", pa.int32(), _NN), pa.field("column_size", pa.int32()),
    pa.field("literal_prefix", _U8), pa.field("literal_suffix", _U8),
    pa.field("create_params", pa.list_(pa.field("item", _U8, _NN))), pa.field("nullable", pa.int32(), _NN),
    pa.field("case_sensitive", pa.bool_(), _NN), pa.field("searchable", pa.int32(), _NN),
    pa.field("unsigned_attribute", pa.bool_()), pa.field("fixed_prec_scale", pa.bool_(), _NN),
    pa.field("auto_increment", pa.bool_()), pa.field("local_type_name", _U8), pa.field("minimum_scale", pa.int32()),
    pa.field("maximum_scale", pa.int32()), pa.field("sql_data_type", pa.int32(), _NN),
    pa.field("datetime_subcode", pa.int32()), pa.field("num_prec_radix", pa.int32()),
    pa.field("interval_precision", pa.int32())])

_VALUE_TYPES = [pa.field("string_value", _U8), pa.field("bool_value", pa.bool_()),
                pa.field("bigint_value", pa.int64()), pa.field("int32_bitmask", pa.int32()),
                pa.field("string_list", pa.list_(_U8)),
                pa.field("int32_to_int32_list_map", pa.map_(pa.int32(), pa.list_(pa.int32())))]
SQL_INFO = pa.schema([pa.field("info_name", pa.uint32(), _NN),
                      pa.field("value", pa.dense_union(_VALUE_TYPES, [0, 1, 2, 3, 4, 5]), _NN)])

# JDBC/ODBC type codes for the XDBC type list (java.sql.Types).
_XDBC = [("BOOLEAN", 16), ("TINYINT", -6), ("SMALLINT", 5), ("INTEGER", 4), ("BIGINT", -5), ("FLOAT", 6),
         ("DOUBLE", 8), ("DECIMAL", 3), ("VARCHAR", 12), ("VARBINARY", -3), ("DATE", 91), ("TIME", 92),
         ("TIMESTAMP", 93)]


def like(pattern: str | None) -> re.Pattern | None:
    """SQL LIKE (% and _, backslash escapes) as a regex; None matches everything."""
    if not pattern:
        return None
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        out.append(".*" if c == "%" else "." if c == "_" else re.escape(c))
        i += 1
    return re.compile("^" + "".join(out) + "$", re.DOTALL)


def catalogs(catalog: str) -> pa.Table:
    return pa.table({"catalog_name": [catalog]}, schema=CATALOGS)


def db_schemas(catalog: str, pools: list[str], cmd) -> pa.Table:
    pat = like(cmd.db_schema_filter_pattern if cmd.HasField("db_schema_filter_pattern") else None)
    ok = not cmd.HasField("catalog") or cmd.catalog == catalog
    rows = [p for p in sorted(set(pools)) if ok and (pat is None or pat.match(p))]
    return pa.table({"catalog_name": [catalog] * len(rows), "db_schema_name": rows}, schema=DB_SCHEMAS)


def tables(catalog: str, infos, cmd) -> pa.Table:
    """``infos``: TableInfo-like objects (name, pool, schema)."""
    ok = not cmd.HasField("catalog") or cmd.catalog == catalog
    sp = like(cmd.db_schema_filter_pattern if cmd.HasField("db_schema_filter_pattern") else None)
    tp = like(cmd.table_name_filter_pattern if cmd.HasField("table_name_filter_pattern") else None)
    types = set(cmd.table_types)
    rows = [t for t in infos if ok and (sp is None or sp.match(t.pool)) and (tp is None or tp.match(t.name))
            and (not types or "TABLE" in types)]
    data = {"catalog_name": [catalog] * len(rows), "db_schema_name": [t.pool for t in rows],
            "table_name": [t.name for t in rows], "table_type": ["TABLE"] * len(rows)}
    if cmd.include_schema:
        data["table_schema"] = [t.schema.serialize().to_pybytes() for t in rows]
        return pa.table(data, schema=TABLES_WITH_SCHEMA)
    return pa.table(data, schema=TABLES)


def table_types() -> pa.Table:
    return pa.table({"table_type": ["TABLE"]}, schema=TABLE_TYPES)


def xdbc_types(cmd) -> pa.Table:
    rows = [(n, c) for n, c in _XDBC if not cmd.HasField("data_type") or cmd.data_type == c]
    k = len(rows)
    return pa.table({
        "type_name": [r[0] for r in rows], "data_type": [r[1] for r in rows], "column_size": [None] * k,
        "literal_prefix": ["'" if r[0] in ("VARCHAR", "DATE", "TIME", "TIMESTAMP") else None for r in rows],
        "literal_suffix": ["'" if r[0] in ("VARCHAR", "DATE", "TIME", "TIMESTAMP") else None for r in rows],
        "create_params": [None] * k, "nullable": [1] * k, "case_sensitive": [r[0] == "VARCHAR" for r in rows],
        "searchable": [3] * k, "unsigned_attribute": [False] * k, "fixed_prec_scale": [False] * k,
        "auto_increment": [False] * k, "local_type_name": [r[0] for r in rows], "minimum_scale": [None] * k,
        "maximum_scale": [None] * k, "sql_data_type": [r[1] for r in rows], "datetime_subcode": [None] * k,
        "num_prec_radix": [None] * k, "interval_precision": [None] * k}, schema=XDBC_TYPES)


def sql_info(values: dict[int, object], wanted: list[int]) -> pa.Table:
    """SqlInfo rows: each value goes into the dense union's member for its Python type."""
    ids = [i for i in (wanted or sorted(values)) if i in values]
    children: list[list] = [[] for _ in range(6)]
    types, offsets = [], []
    for i in ids:
        v = values[i]
        code = (1 if isinstance(v, bool) else 4 if isinstance(v, list) else 5 if isinstance(v, dict)
                else 0 if isinstance(v, str) else 3 if isinstance(v, Int32) else 2)
        types.append(code)
        offsets.append(len(children[code]))
        children[code].append(list(v.items()) if isinstance(v, dict) else int(v) if code in (2, 3) else v)
    arrays = [pa.array(c, type=f.type) for c, f in zip(children, _VALUE_TYPES)]
    union = pa.UnionArray.from_dense(pa.array(types, pa.int8()), pa.array(offsets, pa.int32()), arrays,
                                     [f.name for f in _VALUE_TYPES], [0, 1, 2, 3, 4, 5])
    return pa.Table.from_arrays([pa.array(ids, pa.uint32()), union], schema=SQL_INFO)


class Int32(int):
    """An SqlInfo value that the protocol types as int32 (bitmasks and enums), not int64."""


def server_info(name: str, version: str) -> dict[int, object]:
    """What the gateway tells clients about itself (FlightSql.proto's SqlInfo)."""
    S = fsql.SqlInfo
    return {
        S.Value("FLIGHT_SQL_SERVER_NAME"): name, S.Value("FLIGHT_SQL_SERVER_VERSION"): version,
        S.Value("FLIGHT_SQL_SERVER_ARROW_VERSION"): pa.__version__,
        S.Value("FLIGHT_SQL_SERVER_READ_ONLY"): True, S.Value("FLIGHT_SQL_SERVER_SQL"): True,
        S.Value("FLIGHT_SQL_SERVER_SUBSTRAIT"): False, S.Value("FLIGHT_SQL_SERVER_TRANSACTION"): Int32(0),
        S.Value("FLIGHT_SQL_SERVER_CANCEL"): True, S.Value("FLIGHT_SQL_SERVER_BULK_INGESTION"): False,
        S.Value("FLIGHT_SQL_SERVER_STATEMENT_TIMEOUT"): Int32(0),
        S.Value("FLIGHT_SQL_SERVER_TRANSACTION_TIMEOUT"): Int32(0),
        S.Value("SQL_DDL_CATALOG"): False, S.Value("SQL_DDL_SCHEMA"): False, S.Value("SQL_DDL_TABLE"): False,
        S.Value("SQL_IDENTIFIER_CASE"): Int32(fsql.SQL_CASE_SENSITIVITY_LOWERCASE),
        S.Value("SQL_IDENTIFIER_QUOTE_CHAR"): '"',
        S.Value("SQL_QUOTED_IDENTIFIER_CASE"): Int32(fsql.SQL_CASE_SENSITIVITY_UNKNOWN),   # quoted names keep their case
        S.Value("SQL_ALL_TABLES_ARE_SELECTABLE"): True,
        S.Value("SQL_NULL_ORDERING"): Int32(fsql.SQL_NULLS_SORTED_HIGH),
        S.Value("SQL_KEYWORDS"): ["EXPLAIN", "SET"],
        S.Value("SQL_NUMERIC_FUNCTIONS"): ["abs", "ceil", "floor", "round", "sqrt", "power", "exp", "ln", "log"],
        S.Value("SQL_STRING_FUNCTIONS"): ["lower", "upper", "length", "substr", "concat", "trim"],
        S.Value("SQL_SYSTEM_FUNCTIONS"): [], S.Value("SQL_DATETIME_FUNCTIONS"): ["now", "date_trunc", "date_part"],
        S.Value("SQL_SEARCH_STRING_ESCAPE"): "\\", S.Value("SQL_EXTRA_NAME_CHARACTERS"): "",
        S.Value("SQL_SUPPORTS_COLUMN_ALIASING"): True, S.Value("SQL_NULL_PLUS_NULL_IS_NULL"): True,
        S.Value("SQL_SUPPORTS_CONVERT"): {},
        S.Value("SQL_SUPPORTS_TABLE_CORRELATION_NAMES"): True,
        S.Value("SQL_SUPPORTS_DIFFERENT_TABLE_CORRELATION_NAMES"): False,
        S.Value("SQL_SUPPORTS_EXPRESSIONS_IN_ORDER_BY"): True, S.Value("SQL_SUPPORTS_ORDER_BY_UNRELATED"): True,
        S.Value("SQL_SUPPORTED_GROUP_BY"): Int32(1 << fsql.SQL_GROUP_BY_UNRELATED),
        S.Value("SQL_SUPPORTS_LIKE_ESCAPE_CLAUSE"): False, S.Value("SQL_SUPPORTS_NON_NULLABLE_COLUMNS"): True,
        S.Value("SQL_SUPPORTED_GRAMMAR"): Int32(1 << fsql.SQL_CORE_GRAMMAR),
        S.Value("SQL_ANSI92_SUPPORTED_LEVEL"): Int32(1 << fsql.ANSI92_ENTRY_SQL),
        S.Value("SQL_SUPPORTS_INTEGRITY_ENHANCEMENT_FACILITY"): False,
        S.Value("SQL_OUTER_JOINS_SUPPORT_LEVEL"): Int32(fsql.SQL_FULL_OUTER_JOINS),
        S.Value("SQL_SCHEMA_TERM"): "pool", S.Value("SQL_PROCEDURE_TERM"): "", S.Value("SQL_CATALOG_TERM"): "colony",
        S.Value("SQL_CATALOG_AT_START"): True, S.Value("SQL_SELECT_FOR_UPDATE_SUPPORTED"): False,
        S.Value("SQL_STORED_PROCEDURES_SUPPORTED"): False, S.Value("SQL_TRANSACTIONS_SUPPORTED"): False,
        S.Value("SQL_MAX_STATEMENTS"): 0, S.Value("SQL_MAX_CONNECTIONS"): 0,
    }
