"""The Flight SQL server: Arrow Flight (pyarrow.flight) carrying FlightSql.proto messages.

Statements run through the colony's query client (:class:`colony.drivers.catalog.Catalog`,
so plan, estimate, decide and execute are exactly `colony query`'s). ``GetFlightInfo``
plans the statement (errors come back at once, with the result schema) and starts it;
``DoGet`` waits for it and streams the result. A statement is cancelled when the client
cancels its call, or by ``CancelFlightInfo`` / ``CancelQuery``: the client is answered at
once and the result dropped, and the statement's query id is cancelled on every device
working on it: the device kills the worker process running it and starts a fresh one
(see docs/gateway.md).
"""

from __future__ import annotations

import base64
import binascii
import hmac
import json
import logging
import threading
import time
import uuid
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.flight as flight
from google.protobuf import any_pb2

from colony.errors import ColonyError, GatewayError, QueryTimeout, UnknownTable
from colony.gateway import Flight_pb2 as fpb
from colony.gateway import FlightSql_pb2 as fsql
from colony.gateway import metadata, sql as gsql
from colony.gateway import session as gsession

log = logging.getLogger(__name__)

_COMMANDS = {m.DESCRIPTOR.full_name: m for m in (
    fsql.CommandStatementQuery, fsql.CommandPreparedStatementQuery, fsql.TicketStatementQuery,
    fsql.CommandGetCatalogs, fsql.CommandGetDbSchemas, fsql.CommandGetTables, fsql.CommandGetTableTypes,
    fsql.CommandGetSqlInfo, fsql.CommandGetPrimaryKeys, fsql.CommandGetExportedKeys, fsql.CommandGetImportedKeys,
    fsql.CommandGetCrossReference, fsql.CommandGetXdbcTypeInfo, fsql.ActionCreatePreparedStatementRequest,
    fsql.ActionClosePreparedStatementRequest, fsql.ActionCancelQueryRequest, fsql.CommandStatementUpdate,
    fsql.CommandPreparedStatementUpdate, fsql.CommandStatementIngest, fsql.CommandStatementSubstraitPlan,
    fsql.ActionBeginTransactionRequest, fsql.ActionEndTransactionRequest, fsql.ActionBeginSavepointRequest,
    fsql.ActionEndSavepointRequest, fsql.ActionCreatePreparedSubstraitPlanRequest)}
_WRITES = (fsql.CommandStatementUpdate, fsql.CommandPreparedStatementUpdate, fsql.CommandStatementIngest)
EXPLAIN_SCHEMA = pa.schema([("placement", pa.utf8()), ("chosen", pa.bool_()), ("predicted_total_ms", pa.float64()),
                            ("predicted_terms_ms", pa.utf8()), ("estimated_rows", pa.float64()),
                            ("device", pa.utf8()), ("reason", pa.utf8())])


def unpack(buf: bytes):
    """The FlightSql.proto message inside a descriptor command, ticket or action body."""
    a = any_pb2.Any()
    try:
        a.ParseFromString(bytes(buf))
    except Exception:  # noqa: BLE001 - protobuf's DecodeError
        raise flight.FlightServerError("not a Flight SQL message (expected a protobuf Any)") from None
    cls = _COMMANDS.get(a.type_url.rsplit("/", 1)[-1])
    if cls is None:
        raise pa.ArrowNotImplementedError(f"unsupported Flight SQL message {a.type_url!r}")
    m = cls()
    a.Unpack(m)
    return m


def pack(msg) -> bytes:
    a = any_pb2.Any()
    a.Pack(msg)
    return a.SerializeToString()


def to_flight_error(e: BaseException) -> Exception:
    """A Colony error as the Flight status a client shows: the colony's class and message.

    Flight errors, not Arrow ones: pyarrow sends an Arrow exception's Python traceback
    along with it (INVALID_ARGUMENT + traceback), a Flight error's message alone."""
    msg = f"{type(e).__name__}: {e}"
    if isinstance(e, QueryTimeout):
        return flight.FlightTimedOutError(msg)
    return flight.FlightServerError(msg)


# -- authentication --------------------------------------------------------------------
class _Session(flight.ServerMiddleware):
    def __init__(self, send: str | None) -> None:
        self.send = send

    def sending_headers(self):
        return {"authorization": self.send} if self.send else {}


class TokenAuth(flight.ServerMiddlewareFactory):
    """Every call carries ``authorization: Bearer <token>``, or ``Basic`` credentials whose
    password is the token (any user name); a Basic handshake is answered with the Bearer
    header that ADBC and JDBC clients then send on every call."""

    def __init__(self, token: str) -> None:
        self.token = token

    def start_call(self, info, headers):
        for v in headers.get("authorization", []) + headers.get("Authorization", []):
            v = v.decode() if isinstance(v, bytes) else v
            scheme, _, cred = v.strip().partition(" ")
            if scheme.lower() == "bearer" and hmac.compare_digest(cred.strip().encode(), self.token.encode()):
                return _Session(None)
            if scheme.lower() == "basic":
                try:
                    c = cred.strip()
                    _, _, pw = base64.b64decode(c + "=" * (-len(c) % 4)).decode().partition(":")   # Go omits padding
                except (binascii.Error, UnicodeDecodeError):
                    continue
                if hmac.compare_digest(pw.encode(), self.token.encode()):
                    return _Session(f"Bearer {self.token}")
        raise flight.FlightUnauthenticatedError(
            "the colony gateway needs its token: 'authorization: Bearer <token>' or basic auth with the token as "
            "password (the token is the colony's, see `colony serve --help`)")


class _Handshake(flight.ServerAuthHandler):
    """Lets the Handshake RPC through; the TokenAuth middleware checks its headers."""

    def authenticate(self, outgoing, incoming):
        return None

    def is_valid(self, token):
        return ""


# -- statements ---------------------------------------------------------------------------
@dataclass
class _Run:
    handle: bytes
    schema: pa.Schema
    future: Future | None = None
    table: pa.Table | None = None
    sql: str = ""
    placement: str = "auto"
    cancelled: threading.Event = field(default_factory=threading.Event)
    settled: threading.Event = field(default_factory=threading.Event)     # finished or cancelled
    created: float = field(default_factory=time.monotonic)

    @property
    def query_id(self) -> str:
        """The id devices know the statement's query by (their ``cancel`` names it)."""
        return "flightsql-" + self.handle.hex()


@dataclass
class _Prepared:
    sql: str
    schema: pa.Schema
    params: list | None = None
    placement: str | None = None


class Gateway(flight.FlightServerBase):
    """Flight SQL over a :class:`Catalog`. ``token=None`` turns authentication off."""

    def __init__(self, catalog, location: str = "grpc://127.0.0.1:0", token: str | None = None,
                 tls: tuple[bytes, bytes] | None = None, name: str = "colony", version: str = "0.1.0",
                 max_workers: int = 32, statement_ttl_s: float = 600.0, poll_s: float = 0.25) -> None:
        kw: dict = {"middleware": {gsession.MIDDLEWARE: gsession.SessionCookies()}}
        if token:
            kw["auth_handler"] = _Handshake()
            kw["middleware"]["auth"] = TokenAuth(token)
        if tls:
            kw["tls_certificates"] = [flight.CertKeyPair(tls[0], tls[1])]
        super().__init__(location, **kw)
        self.catalog = catalog
        self.catalog_name = name
        self.info = metadata.server_info("colony", version)
        self.statement_ttl_s = statement_ttl_s
        self.poll_s = poll_s
        self._pool = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="gateway-stmt")
        self._lock = threading.Lock()
        self._runs: dict[bytes, _Run] = {}
        self._prepared: dict[bytes, _Prepared] = {}
        self._sessions = gsession.Sessions()          # per connection (cookie, else peer): SET colony.placement
        self._schema_cache: dict[tuple[str, int], tuple[dict, pa.Schema]] = {}
        self.stats = {"statements": 0, "cancelled": 0, "errors": 0}

    # -- helpers -----------------------------------------------------------------------
    def _guard(self, fn, *args):
        try:
            return fn(*args)
        except (flight.FlightError, pa.ArrowException):
            raise
        except ColonyError as e:
            self.stats["errors"] += 1
            raise to_flight_error(e) from None

    def _schemas(self, refresh: bool = False) -> dict[str, pa.Schema]:
        return self.catalog.client(refresh, wait=refresh).locate()["schemas"]   # statements never wait for a scan

    def _plan_schema(self, sql: str) -> pa.Schema:
        """The statement's result schema (it must be a query), cached per catalog scan: tools
        and dashboards repeat the same statements."""
        schemas = self._schemas()
        key = (sql, id(schemas))
        with self._lock:
            hit = self._schema_cache.get(key)
        if hit is not None and hit[0] is schemas:
            return hit[1]
        try:
            schema = gsql.check_query(sql, schemas)
        except UnknownTable:
            schemas = self._schemas(refresh=True)
            schema = gsql.check_query(sql, schemas)
        with self._lock:
            if len(self._schema_cache) >= 1024:
                self._schema_cache.pop(next(iter(self._schema_cache)))
            self._schema_cache[(sql, id(schemas))] = (schemas, schema)
        return schema

    def _sweep(self) -> None:
        now = time.monotonic()
        with self._lock:
            expired = [r for r in self._runs.values() if now - r.created > self.statement_ttl_s]
        for run in expired:              # never fetched: its work stops on the devices too
            self._cancel(run)

    def _register(self, run: _Run) -> _Run:
        with self._lock:
            self._runs[run.handle] = run
        return run

    def _parse(self, text: str) -> gsql.Statement:
        """The statement with qualified table names (catalog.pool.table) made bare."""
        st = gsql.parse(text)
        if st.sql and "." in st.sql:
            st.sql = gsql.unqualify(st.sql, {(t.pool, t.name) for t in self.catalog.tables(wait=False)},
                                    self.catalog_name)
        return st

    def _statement(self, text: str, context, placement: str | None = None) -> _Run:
        """Parse the colony's own statements, plan the query, and start it."""
        st = self._parse(text)
        self.stats["statements"] += 1
        handle = uuid.uuid4().bytes
        if not st.sql:                                       # bare SET: the connection's placement
            self._sessions.set(context, "colony.placement", st.placement or "auto")
            t = pa.table({"setting": ["colony.placement"], "value": [st.placement]})
            return self._register(_Run(handle, t.schema, table=t))
        pl = st.placement or placement or self._sessions.get(context).get("colony.placement", "auto")
        if st.explain:
            return self._register(_Run(handle, EXPLAIN_SCHEMA, table=explain_table(
                self.catalog.query(st.sql, pl, explain=True)), sql=st.sql, placement=pl))
        schema = self._plan_schema(st.sql)
        run = _Run(handle, schema, sql=st.sql, placement=pl)
        run.future = self._pool.submit(self._execute, run)
        run.future.add_done_callback(lambda _, ev=run.settled: ev.set())
        return self._register(run)

    def _execute(self, run: _Run) -> pa.Table:
        if run.cancelled.is_set():
            raise flight.FlightCancelledError("statement cancelled before it started")
        r = self.catalog.query(run.sql, run.placement, query_id=run.query_id)
        t = r.table if r.table is not None else run.schema.empty_table()
        log.info("statement %s: %s on %s (%s rows)", run.handle.hex()[:8], r.placement, r.device, t.num_rows)
        return conform(t, run.schema)

    def _wait(self, context, run: _Run) -> pa.Table:
        if run.table is not None:
            return run.table
        while True:
            # woken at once by the result or a cancel action; the client's own cancel of this call
            # (gRPC) is only seen by asking, every poll_s: asking holds the GIL while gRPC takes its
            # lock, so 32 waiting calls asking every 20 ms held the GIL more than anything else did
            if run.cancelled.is_set() or context.is_cancelled():
                self._cancel(run)
                raise flight.FlightCancelledError("statement cancelled; the devices running it stopped its work")
            if not run.settled.wait(self.poll_s) or run.cancelled.is_set():
                continue
            try:
                return run.future.result()
            except flight.FlightError:
                raise
            except ColonyError as e:
                self.stats["errors"] += 1
                raise to_flight_error(e) from None
            except Exception as e:  # noqa: BLE001 - an engine's plain exception: its message, no traceback
                self.stats["errors"] += 1
                raise flight.FlightInternalError(f"{type(e).__name__}: {str(e).splitlines()[0][:300]}") from None

    def _cancel(self, run: _Run) -> int:
        """Cancel a statement: CANCELLED if it had not finished, else NOT_CANCELLABLE."""
        done = run.table is not None or (run.future is not None and run.future.done())
        run.cancelled.set()
        run.settled.set()
        if run.future is not None:
            run.future.cancel()
        with self._lock:
            self._runs.pop(run.handle, None)
        if done:
            return fpb.CANCEL_STATUS_NOT_CANCELLABLE
        if run.future is not None:
            try:
                self.catalog.cancel(run.query_id)
            except ColonyError as e:        # the client is answered anyway; the deadline still stops it
                log.warning("cancel of %s did not reach every device: %s", run.query_id, e)
        with self._lock:
            self.stats["cancelled"] += 1
        return fpb.CANCEL_STATUS_CANCELLED

    def _info(self, descriptor, schema: pa.Schema, ticket: bytes, rows: int = -1) -> flight.FlightInfo:
        return flight.FlightInfo(schema, descriptor, [flight.FlightEndpoint(ticket, [])], rows, -1)

    def _metadata(self, cmd) -> pa.Table:
        if isinstance(cmd, fsql.CommandGetCatalogs):
            return metadata.catalogs(self.catalog_name)
        if isinstance(cmd, fsql.CommandGetDbSchemas):
            return metadata.db_schemas(self.catalog_name, [t.pool for t in self.catalog.tables()], cmd)
        if isinstance(cmd, fsql.CommandGetTables):
            return metadata.tables(self.catalog_name, self.catalog.tables(), cmd)
        if isinstance(cmd, fsql.CommandGetTableTypes):
            return metadata.table_types()
        if isinstance(cmd, fsql.CommandGetSqlInfo):
            return metadata.sql_info(self.info, list(cmd.info))
        if isinstance(cmd, fsql.CommandGetPrimaryKeys):
            return metadata.PRIMARY_KEYS.empty_table()
        if isinstance(cmd, (fsql.CommandGetExportedKeys, fsql.CommandGetImportedKeys, fsql.CommandGetCrossReference)):
            return metadata.KEYS.empty_table()
        if isinstance(cmd, fsql.CommandGetXdbcTypeInfo):
            return metadata.xdbc_types(cmd)
        raise pa.ArrowNotImplementedError(f"{type(cmd).__name__} is not supported by the colony gateway")

    def _prepared_sql(self, handle: bytes) -> _Prepared:
        with self._lock:
            p = self._prepared.get(handle)
        if p is None:
            raise GatewayError("unknown or closed prepared statement handle")
        return p

    # -- Flight RPCs ----------------------------------------------------------------------------
    def get_flight_info(self, context, descriptor):
        return self._guard(self._get_flight_info, context, descriptor)

    def _get_flight_info(self, context, descriptor):
        self._sweep()
        cmd = unpack(descriptor.command)
        if isinstance(cmd, fsql.CommandStatementQuery):
            run = self._statement(cmd.query, context)
        elif isinstance(cmd, fsql.CommandPreparedStatementQuery):
            p = self._prepared_sql(cmd.prepared_statement_handle)
            text = p.sql
            if gsql.placeholders(text):
                if not p.params:
                    raise GatewayError("the prepared statement has parameters; bind them (DoPut) first")
                if len(p.params) != 1:
                    raise GatewayError("bind one parameter set per execution")
                text = gsql.bind(text, p.params[0])
            run = self._statement(text, context, p.placement)
        elif isinstance(cmd, _WRITES):
            raise GatewayError("the colony gateway is read-only: it runs SQL queries; load data with `colony load`")
        else:
            t = self._metadata(cmd)
            return self._info(descriptor, t.schema, bytes(descriptor.command), t.num_rows)
        ticket = pack(fsql.TicketStatementQuery(statement_handle=run.handle))
        return self._info(descriptor, run.schema, ticket, -1 if run.table is None else run.table.num_rows)

    def get_schema(self, context, descriptor):
        return self._guard(self._get_schema, context, descriptor)

    def _get_schema(self, context, descriptor):
        cmd = unpack(descriptor.command)
        if isinstance(cmd, fsql.CommandStatementQuery):
            st = self._parse(cmd.query)
            schema = EXPLAIN_SCHEMA if st.explain else self._plan_schema(st.sql) if st.sql else \
                pa.schema([("setting", pa.utf8()), ("value", pa.utf8())])
        elif isinstance(cmd, fsql.CommandPreparedStatementQuery):
            schema = self._prepared_sql(cmd.prepared_statement_handle).schema
        else:
            schema = self._metadata(cmd).schema
        return flight.SchemaResult(schema)

    def do_get(self, context, ticket):
        return self._guard(self._do_get, context, ticket)

    def _do_get(self, context, ticket):
        cmd = unpack(ticket.ticket)
        if isinstance(cmd, fsql.TicketStatementQuery):
            with self._lock:
                run = self._runs.get(cmd.statement_handle)
            if run is None:
                raise GatewayError("unknown, cancelled or already fetched statement; execute it again")
            try:
                table = self._wait(context, run)
            finally:
                with self._lock:
                    self._runs.pop(run.handle, None)
            return flight.RecordBatchStream(table)
        return flight.RecordBatchStream(self._metadata(cmd))

    def do_put(self, context, descriptor, reader, writer):
        return self._guard(self._do_put, context, descriptor, reader, writer)

    def _do_put(self, context, descriptor, reader, writer):
        cmd = unpack(descriptor.command)
        if not isinstance(cmd, fsql.CommandPreparedStatementQuery):
            raise GatewayError("the colony gateway is read-only: it runs SQL queries; load data with `colony load`")
        p = self._prepared_sql(cmd.prepared_statement_handle)
        params = reader.read_all()
        p.params = [[params.column(i)[r].as_py() for i in range(params.num_columns)] for r in range(params.num_rows)]
        writer.write(pa.py_buffer(fsql.DoPutPreparedStatementResult(
            prepared_statement_handle=cmd.prepared_statement_handle).SerializeToString()))

    def list_actions(self, context):
        return [("CreatePreparedStatement", "prepare a SQL query (parameters: ? or $n)"),
                ("ClosePreparedStatement", "close a prepared statement"),
                ("CancelFlightInfo", "cancel a running statement"),
                ("CancelQuery", "cancel a running statement (Flight SQL, deprecated form)"),
                ("SetSessionOptions", "set this connection's options (colony.placement)"),
                ("GetSessionOptions", "this connection's options"),
                ("CloseSession", "forget this connection's options")]

    def do_action(self, context, action):
        return self._guard(self._do_action, context, action)

    def _do_action(self, context, action):
        body = action.body.to_pybytes() if action.body is not None else b""
        kind = action.type
        if kind == "CreatePreparedStatement":
            req = unpack(body)
            st = self._parse(req.query)
            schema = EXPLAIN_SCHEMA if st.explain else (self._plan_schema(st.sql) if st.sql else
                                                        pa.schema([("setting", pa.utf8()), ("value", pa.utf8())]))
            handle = uuid.uuid4().bytes
            with self._lock:
                self._prepared[handle] = _Prepared(req.query, schema)
            pschema = gsql.parameter_schema(st.sql, self._schemas()) if st.sql else pa.schema([])
            return [flight.Result(pack(fsql.ActionCreatePreparedStatementResult(
                prepared_statement_handle=handle, dataset_schema=schema.serialize().to_pybytes(),
                parameter_schema=pschema.serialize().to_pybytes())))]
        if kind == "ClosePreparedStatement":
            req = unpack(body)
            with self._lock:
                self._prepared.pop(req.prepared_statement_handle, None)
            return []
        if kind in ("CancelFlightInfo", "CancelQuery"):
            if kind == "CancelFlightInfo":
                info = fpb.CancelFlightInfoRequest.FromString(body).info
            else:
                info = fpb.FlightInfo.FromString(unpack(body).info)
            status = fpb.CANCEL_STATUS_NOT_CANCELLABLE
            for ep in info.endpoint:
                t = unpack(ep.ticket.ticket)
                with self._lock:
                    run = self._runs.get(t.statement_handle) if isinstance(t, fsql.TicketStatementQuery) else None
                if run is not None:
                    status = self._cancel(run)
            if kind == "CancelFlightInfo":
                return [flight.Result(fpb.CancelFlightInfoResult(status=status).SerializeToString())]
            return [flight.Result(pack(fsql.ActionCancelQueryResult(result=status)))]
        if kind in ("SetSessionOptions", "GetSessionOptions", "CloseSession"):
            return [flight.Result(self._session_action(context, kind, body).SerializeToString())]
        raise pa.ArrowNotImplementedError(f"action {kind!r} is not supported by the colony gateway "
                                          "(it runs SQL queries only)")

    def _session_action(self, context, kind: str, body: bytes):
        """Flight's session actions over the connection's options (plain Flight.proto messages)."""
        if kind == "CloseSession":
            self._sessions.close(context)
            return fpb.CloseSessionResult(status=fpb.CloseSessionResult.CLOSED)
        if kind == "SetSessionOptions":
            out = fpb.SetSessionOptionsResult()
            for name, v in fpb.SetSessionOptionsRequest.FromString(body).session_options.items():
                which = v.WhichOneof("option_value")
                if name not in gsession.OPTIONS:
                    out.errors[name].value = fpb.SetSessionOptionsResult.INVALID_NAME
                elif which is None:                          # no value: erase it
                    self._sessions.erase(context, name)
                else:
                    try:
                        self._sessions.set(context, name, getattr(v, which))
                    except ColonyError:
                        out.errors[name].value = fpb.SetSessionOptionsResult.INVALID_VALUE
            return out
        out = fpb.GetSessionOptionsResult()
        for name, value in {"colony.placement": "auto", **self._sessions.get(context)}.items():
            out.session_options[name].string_value = value
        return out

    def shutdown(self):
        super().shutdown()
        self._pool.shutdown(wait=False, cancel_futures=True)


def conform(t: pa.Table, schema: pa.Schema) -> pa.Table:
    """The result under the schema announced in FlightInfo (names and types; the engine that
    ran it may name or widen columns differently)."""
    if t.schema.equals(schema, check_metadata=False) or t.num_columns != len(schema):
        return t
    try:
        return pa.Table.from_arrays([c.cast(f.type) if c.type != f.type else c for c, f in zip(t.columns, schema)],
                                    names=schema.names)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return t.rename_columns(schema.names)


def explain_table(r) -> pa.Table:
    """EXPLAIN's answer: one row per placement the engine priced, with every predicted term."""
    pred = r.decision.get("predicted") or {}
    rows = [(pl, pl == r.placement, terms.get("total", float("nan")) * 1e3,
             json.dumps({k: round(v * 1e3, 4) for k, v in terms.items() if isinstance(v, (int, float))}))
            for pl, terms in pred.items()] or [(r.placement, True, None, json.dumps(r.decision.get("per_device", {}),
                                                                                 default=str))]
    n = len(rows)
    return pa.table({"placement": [x[0] for x in rows], "chosen": [x[1] for x in rows],
                     "predicted_total_ms": [x[2] for x in rows], "predicted_terms_ms": [x[3] for x in rows],
                     "estimated_rows": [float(r.est_rows)] * n, "device": [r.device] * n,
                     "reason": [r.decision.get("reason", "")] * n}, schema=EXPLAIN_SCHEMA)

