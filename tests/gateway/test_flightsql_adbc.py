"""The Flight SQL gateway through real clients: the ADBC Flight SQL driver (DBAPI cursor,
fetch_arrow_table, pandas, polars) and a raw pyarrow Flight client for the protocol's
cancel action; an in-process colony behind it (same QueryClient path as `colony query`)."""

import json
import threading
import time

import adbc_driver_flightsql.dbapi as fdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.flight as flight
import pytest
from adbc_driver_flightsql import DatabaseOptions

from colony.config.builders import devices as devices_config
from colony.data import uniform
from colony.drivers.catalog import Catalog, ensure_query_service
from colony.gateway import Flight_pb2 as fpb
from colony.gateway import FlightSql_pb2 as fsql
from colony.gateway.server import Gateway, pack
from colony.query import plan as qplan
from colony.runtime.local import LocalColony

TOKEN = "t0ken-for-the-gateway-tests-0123456789"
N = 40_000


@pytest.fixture(scope="module")
def gw(tmp_path_factory):
    lc = LocalColony(devices_config({"host": {"role": "host", "threads": 2, "services": {"query": {"timeout_s": 4}}},
                                     "nic0": {"pools": ["data"], "services": {"query": {"timeout_s": 20}}},
                                     "nic1": {"pools": ["data"], "services": {"query": {"timeout_s": 20}}}},
                                    name="testcolony"))
    ensure_query_service(lc, str(tmp_path_factory.mktemp("models")), calib_runs=10, max_rows=40_000)
    t = uniform(N, seed=7, n_particles=400)
    for i in range(4):                                       # particles: 4 objects, all on nic0 (tags 0,2,4,6)
        lc.put("data", f"particles/{2 * i:06d}", t.slice(i * N // 4, N // 4))
    lc.put("data", "small/000001", pa.table({"k": [1, 2, 3], "name": ["a", "b", "c"]}))   # on nic1
    lc.put("data", "heavy/000001", uniform(160_000, seed=1, n_particles=10))   # a self-join of 2.6 G pairs
    server = Gateway(Catalog(lc, ttl_s=0.5), "grpc://127.0.0.1:0", token=TOKEN, name="testcolony")
    threading.Thread(target=server.serve, daemon=True).start()
    yield server, lc, t
    server.shutdown()


def _connect(server, **kw):
    db = {DatabaseOptions.AUTHORIZATION_HEADER.value: f"Bearer {TOKEN}"}
    db.update(kw)
    return fdb.connect(f"grpc://127.0.0.1:{server.port}", db_kwargs=db, autocommit=True)


def _same(got: pa.Table, ref: pa.Table):
    assert got.num_rows == ref.num_rows and got.column_names == ref.column_names
    keys = [(n, "ascending") for n in ref.column_names]
    got, ref = got.sort_by(keys), ref.sort_by(keys)
    for a, b in zip(got.columns, ref.columns):
        if pa.types.is_floating(b.type):
            assert pc.max(pc.abs(pc.subtract(a.cast(pa.float64()), b))).as_py() in (None,) or \
                pc.max(pc.abs(pc.subtract(a.cast(pa.float64()), b))).as_py() < 1e-9
        else:
            assert a.to_pylist() == b.to_pylist()


def test_catalog_listing(gw):
    server, _, t = gw
    with _connect(server) as conn:
        objs = conn.adbc_get_objects(depth="all").read_all().to_pylist()
        assert [o["catalog_name"] for o in objs] == ["testcolony"]
        schemas = objs[0]["catalog_db_schemas"]
        assert [s["db_schema_name"] for s in schemas] == ["data"]
        tables = {x["table_name"]: x for x in schemas[0]["db_schema_tables"]}
        assert set(tables) == {"particles", "small", "heavy"} and tables["particles"]["table_type"] == "TABLE"
        assert [c["column_name"] for c in tables["particles"]["table_columns"]] == t.schema.names
        assert conn.adbc_get_table_schema("particles", db_schema_filter="data").equals(t.schema)
        assert conn.adbc_get_table_types() == ["TABLE"]
        info = conn.adbc_get_info()
        assert info["vendor_name"] == "colony" and info["vendor_arrow_version"] == pa.__version__


SQL = ["select x, y, z from particles where x >= 0.7 and y < 0.3 and z <= 0.1",
       "select particle_id % 8 as g, count(*) as n, avg(vx) as m from particles where x < 0.5 group by g",
       "select count(*) as n, max(z) as mz from particles where sqrt(abs(vy)) > 9"]


@pytest.mark.parametrize("placement", ["auto", "down", "back", "split"])
def test_a_query_per_placement_equals_local_datafusion(gw, placement):
    server, _, t = gw
    with _connect(server) as conn, conn.cursor() as cur:
        for sql in SQL:
            ref = qplan.run_sql_locally(sql, {"particles": [t]})
            cur.execute(f"SET colony.placement = '{placement}'; {sql}")
            _same(cur.fetch_arrow_table(), ref)


def test_session_placement_explain_and_dataframe_readers(gw):
    import pandas as pd
    import polars as pl
    server, _, t = gw
    sql = SQL[1]
    ref = qplan.run_sql_locally(sql, {"particles": [t]})
    with _connect(server) as conn:
        with conn.cursor() as cur:
            cur.execute("SET colony.placement = 'back'")
            assert cur.fetchall() == [("colony.placement", "back")]
            cur.execute("EXPLAIN " + SQL[1])               # a group-by: down, back and split priced
            ex = cur.fetch_arrow_table().to_pylist()
            assert {r["placement"] for r in ex} == {"down", "back", "split"}
            assert all(r["predicted_total_ms"] > 0 and r["estimated_rows"] > 0 for r in ex)
            assert sum(r["chosen"] for r in ex) == 1                 # forced by the session: back
            assert next(r for r in ex if r["chosen"])["placement"] == "back"
            assert {"exec", "transfer"} <= set(json.loads(next(r for r in ex if r["placement"] == "down")
                                                          ["predicted_terms_ms"]))
            cur.execute("SET colony.placement = 'auto'")
            cur.execute(sql)
            _same(pa.Table.from_pandas(cur.fetch_df(), preserve_index=False), ref)
        df = pd.read_sql(sql, conn)
        assert len(df) == ref.num_rows and df["n"].sum() == pc.sum(ref["n"]).as_py()
        pdf = pl.read_database(sql, connection=conn)
        assert pdf.height == ref.num_rows and pdf["n"].sum() == pc.sum(ref["n"]).as_py()


def test_prepared_statement_with_parameters(gw):
    server, _, t = gw
    sql = "select count(*) as n, sum(x) as sx from particles where x < ? and particle_id % 7 = ?"
    with _connect(server) as conn, conn.cursor() as cur:
        for bound in ((0.25, 3), (0.8, 0)):
            cur.execute(sql, parameters=bound)
            got = cur.fetch_arrow_table()
            ref = qplan.run_sql_locally(sql.replace("?", "{}").format(*bound), {"particles": [t]})
            _same(got, ref)
        cur.adbc_prepare("select name from small where k >= ?")
        assert cur.adbc_prepare("select name from small where k >= ?").field(0).type == pa.int64()
        cur.execute("select name from small where k >= ?", parameters=(2,))
        assert sorted(cur.fetchall()) == [("b",), ("c",)]


# pushed back (a join), run by the host's query worker: ~14 s of work, stopped by the cancel (4 s deadline)
LONG = "select count(*) as n from heavy a join heavy b on a.particle_id = b.particle_id where a.x < b.y"
MEDIUM = LONG + " and a.id < 8000"          # ~1.5 s


def test_a_cancelled_long_query_stops_on_the_device_which_stays_healthy(gw):
    server, lc, t = gw
    before = server.stats["cancelled"]
    killed = len(lc.call("host", "query", "workers")["killed"])
    stopped = len(lc.call("host", "query", "workers")["cancelled"])
    cancelled_at = []
    with _connect(server) as conn, conn.cursor() as cur:
        cur.execute("SET colony.placement = 'back'")   # the join runs on the host, whatever the engine decides
        def cancel_once_running():                     # the join is running in the host's query worker
            stop = time.monotonic() + 60                # generous: a loaded 2-core machine starts workers slowly
            while not lc.call("host", "query", "workers")["live"] and time.monotonic() < stop:
                time.sleep(0.05)
            cancelled_at.append(time.perf_counter())
            cur.adbc_cancel()
        timer = threading.Thread(target=cancel_once_running)
        timer.start()
        t0 = time.perf_counter()
        with pytest.raises(Exception, match="(?i)cancel"):
            cur.execute(LONG)
            cur.fetchall()
        answered = time.perf_counter()
        timer.join()
        assert answered - cancelled_at[0] < 2.0 and answered - t0 < 60      # answered at once, not at the deadline
    deadline = time.monotonic() + 15                # the server sees the cancel a poll (0.25 s) after the client (slower on a loaded CI)
    while server.stats["cancelled"] == before and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.stats["cancelled"] == before + 1
    # the cancel reaches the device: the worker running the join is stopped by it, not by the deadline
    deadline = time.monotonic() + 10
    while len(lc.call("host", "query", "workers")["cancelled"]) == stopped and time.monotonic() < deadline:
        time.sleep(0.05)
    w = lc.call("host", "query", "workers")
    assert len(w["cancelled"]) == stopped + 1 and w["cancelled"][-1]["query_id"].startswith("flightsql-")
    assert len(w["killed"]) == killed and w["cancelled"][-1]["pid"] not in w["live"]
    with _connect(server) as conn, conn.cursor() as cur:       # the colony keeps answering
        cur.execute(SQL[2])
        _same(cur.fetch_arrow_table(), qplan.run_sql_locally(SQL[2], {"particles": [t]}))
    assert all(lc.call(d, "query", "health")["ok"] for d in ("host", "nic0", "nic1"))


def test_cancel_flight_info_action_cancels_a_running_statement(gw):
    server, _, _ = gw
    client = flight.FlightClient(f"grpc://127.0.0.1:{server.port}")
    opts = flight.FlightCallOptions(headers=[(b"authorization", f"Bearer {TOKEN}".encode())])
    info = client.get_flight_info(flight.FlightDescriptor.for_command(
        pack(fsql.CommandStatementQuery(query=MEDIUM))), opts)
    res = list(client.do_action(flight.Action("CancelFlightInfo", fpb.CancelFlightInfoRequest(
        info=fpb.FlightInfo.FromString(info.serialize())).SerializeToString()), opts))
    assert fpb.CancelFlightInfoResult.FromString(res[0].body.to_pybytes()).status == fpb.CANCEL_STATUS_CANCELLED
    with pytest.raises(flight.FlightServerError, match="cancelled"):
        client.do_get(info.endpoints[0].ticket, opts).read_all()
    # the deprecated Flight SQL form too
    info = client.get_flight_info(flight.FlightDescriptor.for_command(
        pack(fsql.CommandStatementQuery(query=MEDIUM))), opts)
    res = list(client.do_action(flight.Action("CancelQuery", pack(fsql.ActionCancelQueryRequest(
        info=info.serialize()))), opts))
    assert res and server.stats["cancelled"] >= 2


def test_wrong_token_is_refused_and_basic_auth_with_the_token_works(gw):
    server, _, _ = gw
    for kw in ({DatabaseOptions.AUTHORIZATION_HEADER.value: "Bearer wrong"}, {"username": "u", "password": "nope"}):
        with pytest.raises(Exception, match="UNAUTHENTICATED"):
            conn = fdb.connect(f"grpc://127.0.0.1:{server.port}", db_kwargs=kw, autocommit=True)
            with conn.cursor() as cur:
                cur.execute("select 1")
    client = flight.FlightClient(f"grpc://127.0.0.1:{server.port}")
    with pytest.raises(flight.FlightUnauthenticatedError):
        client.get_flight_info(flight.FlightDescriptor.for_command(pack(fsql.CommandGetCatalogs())))
    with fdb.connect(f"grpc://127.0.0.1:{server.port}", db_kwargs={"username": "any", "password": TOKEN},
                     autocommit=True) as conn, conn.cursor() as cur:
        cur.execute("select k from small where k = 2")
        assert cur.fetchall() == [(2,)]


def test_malformed_sql_and_writes_come_back_as_flight_errors_with_the_colonys_message(gw):
    server, _, _ = gw
    with _connect(server) as conn, conn.cursor() as cur:
        with pytest.raises(Exception, match=r"UnknownColumn: .*nope"):
            cur.execute("select nope from particles")
        with pytest.raises(Exception, match=r"SqlError"):
            cur.execute("selec x fro particles")
        with pytest.raises(Exception, match="queries only"):
            cur.execute("create external table e stored as csv location '/etc/passwd'")
        with pytest.raises(Exception, match="queries only"):
            cur.execute("copy (select 1) to '/tmp/colony-gateway-test.csv'")
        with pytest.raises(Exception, match="colony.placement must be"):
            cur.execute("SET colony.placement = 'sideways'")
        cur.execute("select count(*) from small")                     # the connection still works
        assert cur.fetchall() == [(3,)]
        cur.execute('select count(*) from "testcolony"."data".small s where s.k > 1')   # as JDBC tools qualify
        assert cur.fetchall() == [(2,)]
        cur.execute("select k from data.small where name = 'data.small'")
        assert cur.fetchall() == []
    client = flight.FlightClient(f"grpc://127.0.0.1:{server.port}")
    opts = flight.FlightCallOptions(headers=[(b"authorization", f"Bearer {TOKEN}".encode())])
    with pytest.raises(flight.FlightServerError, match="read-only"):
        client.get_flight_info(flight.FlightDescriptor.for_command(
            pack(fsql.CommandStatementUpdate(query="insert into small values (4, 'd')"))), opts)
