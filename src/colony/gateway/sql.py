"""What the gateway does to statement text before the query client sees it: the colony's
own statements (`SET colony.placement`, `EXPLAIN`), prepared-statement parameters bound
as SQL literals, and a check that a statement is a query (no DDL, DML or settings)."""

from __future__ import annotations

import datetime as _dt
import decimal
import math
import re
from dataclasses import dataclass

import pyarrow as pa

from colony.errors import SqlError

PLACEMENTS = ("auto", "down", "back", "split")
_SET = re.compile(r"^\s*set\s+colony\.placement\s*(?:=|to)\s*'?(\w+)'?\s*;?\s*", re.IGNORECASE)
_EXPLAIN = re.compile(r"^\s*explain\s+(?!analyze\b|verbose\b)", re.IGNORECASE)


@dataclass
class Statement:
    """A statement as the gateway runs it: the query text, its placement and whether it only explains."""

    sql: str                 # the query for the colony ('' for a bare SET)
    placement: str | None    # from a SET in this statement (None: the session's)
    explain: bool = False


def parse(text: str) -> Statement:
    """Split off a leading ``SET colony.placement = 'p';`` and a leading ``EXPLAIN``."""
    placement = None
    m = _SET.match(text)
    if m:
        placement = m.group(1).lower()
        if placement not in PLACEMENTS:
            raise SqlError(f"colony.placement must be one of {list(PLACEMENTS)}, not {placement!r}")
        text = text[m.end():]
    elif re.match(r"^\s*set\s", text, re.IGNORECASE):
        raise SqlError("the only setting is colony.placement (SET colony.placement = 'auto|down|back|split')")
    explain = bool(_EXPLAIN.match(text))
    if explain:
        text = text[_EXPLAIN.match(text).end():]
    return Statement(text.strip().rstrip(";").strip(), placement, explain)


_IDENT = r'(?:"[^"]+"|[A-Za-z_][A-Za-z0-9_]*)'
_CHAIN = re.compile(r"'(?:[^']|'')*'|" + _IDENT + r"(?:\s*\.\s*" + _IDENT + r")+")


def unqualify(sql: str, tables: set[tuple[str, str]], catalog: str) -> str:
    """``catalog.pool.table`` and ``pool.table`` (quoted or not) as the bare table name the
    planner knows, for tools that qualify what the catalog listed (DBeaver, JDBC metadata)."""
    def sub(m: re.Match) -> str:
        text = m.group(0)
        if text.startswith("'"):
            return text
        parts = [p.strip() for p in re.findall(_IDENT, text)]
        names = [p[1:-1] if p.startswith('"') else p.lower() for p in parts]
        if len(names) == 3 and names[0] in (catalog, catalog.lower()) and (names[1], names[2]) in tables:
            return parts[2]
        if len(names) == 2 and (names[0], names[1]) in tables:
            return parts[1]
        return text
    return _CHAIN.sub(sub, sql)


def check_query(sql: str, schemas: dict[str, pa.Schema]) -> pa.Schema:
    """The result schema of ``sql``; anything but a query (DDL, DML, COPY, SET) is refused,
    so a client can run SQL queries and nothing else."""
    from datafusion import SQLOptions

    from colony.query.plan import planning_context
    if not sql:
        raise SqlError("empty SQL statement")
    opts = SQLOptions().with_allow_ddl(False).with_allow_dml(False).with_allow_statements(False)
    try:
        return planning_context(schemas).sql_with_options(sql, opts).schema()
    except Exception as e:  # noqa: BLE001 - DataFusion raises plain Exceptions
        msg = str(e).split("\n")[0]
        if "not supported" in msg and any(w in msg for w in ("DDL", "DML", "Statement")):
            raise SqlError(f"the gateway runs queries only ({msg}); load data with `colony load`") from None
        from colony.query.plan import _classify
        raise _classify(msg)(f"{msg[:300]} (tables: {', '.join(sorted(schemas))})") from None


def placeholders(sql: str) -> list[tuple[int, int, int | None]]:
    """(start, end, index) of each ``?`` / ``$n`` outside quotes and comments (index None for ``?``)."""
    out, i, n = [], 0, len(sql)
    while i < n:
        c = sql[i]
        if c in ("'", '"'):
            j = i + 1
            while j < n:
                if sql[j] == c:
                    if j + 1 < n and sql[j + 1] == c:    # '' inside '...'
                        j += 2
                        continue
                    break
                j += 1
            i = j + 1
        elif sql.startswith("--", i):
            j = sql.find("\n", i)
            i = n if j < 0 else j
        elif sql.startswith("/*", i):
            j = sql.find("*/", i + 2)
            i = n if j < 0 else j + 2
        elif c == "?":
            out.append((i, i + 1, None))
            i += 1
        elif c == "$" and i + 1 < n and sql[i + 1].isdigit():
            j = i + 1
            while j < n and sql[j].isdigit():
                j += 1
            out.append((i, j, int(sql[i + 1:j]) - 1))
            i = j
        else:
            i += 1
    return out


def literal(v) -> str:
    """An SQL literal for a Python value from a parameter batch."""
    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v) or math.isinf(v):
            return f"CAST('{'NaN' if math.isnan(v) else ('inf' if v > 0 else '-inf')}' AS DOUBLE)"
        return f"CAST({v!r} AS DOUBLE)"
    if isinstance(v, decimal.Decimal):
        return f"CAST('{v}' AS DECIMAL(38, {max(0, -v.as_tuple().exponent)}))"
    if isinstance(v, str):
        return "'" + v.replace("'", "''") + "'"
    if isinstance(v, _dt.datetime):
        return f"CAST('{v.isoformat(sep=' ')}' AS TIMESTAMP)"
    if isinstance(v, _dt.date):
        return f"CAST('{v.isoformat()}' AS DATE)"
    if isinstance(v, (bytes, bytearray)):
        return f"X'{bytes(v).hex()}'"
    raise SqlError(f"cannot bind a parameter of type {type(v).__name__}; use numbers, strings, dates or bytes")


def bind(sql: str, row: list) -> str:
    """``sql`` with its placeholders replaced by the literals of ``row`` (one parameter set)."""
    spots = placeholders(sql)
    out, last, seq = [], 0, 0
    for start, end, idx in spots:
        k = seq if idx is None else idx
        seq += idx is None
        if k >= len(row):
            raise SqlError(f"the statement has {len(spots)} parameter(s) but {len(row)} value(s) were bound")
        out.append(sql[last:start])
        out.append(literal(row[k]))
        last = end
    out.append(sql[last:])
    return "".join(out)


_BEFORE = re.compile(r'"?([A-Za-z_][A-Za-z0-9_]*)"?\s*(?:<=|>=|<>|!=|=|<|>|\blike\b|\bin\s*\()\s*$',
                     re.IGNORECASE)


def parameter_schema(sql: str, schemas: dict[str, pa.Schema]) -> pa.Schema:
    """One field per parameter, typed like the column it is compared with (``x < ?``);
    null where the text does not say (the client's bound type is used as it comes)."""
    spots = placeholders(sql)
    n = max([s[2] + 1 for s in spots if s[2] is not None] + [sum(1 for s in spots if s[2] is None)])
    types: list[pa.DataType] = [pa.null()] * n
    cols = {f.name.lower(): f.type for s in schemas.values() for f in s}
    seq = 0
    for start, _, idx in spots:
        k = seq if idx is None else idx
        seq += idx is None
        m = _BEFORE.search(sql[:start])
        if m and m.group(1).lower() in cols and types[k] == pa.null():
            types[k] = cols[m.group(1).lower()]
    return pa.schema([pa.field(f"${i + 1}", t) for i, t in enumerate(types)])
