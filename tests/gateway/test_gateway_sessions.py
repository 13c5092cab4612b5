"""Per-connection session state in the Flight SQL gateway (issue 16): `SET colony.placement`
and Flight's session actions belong to one connection, named by the gateway's session
cookie (ADBC with its cookie middleware) or, for clients without cookies, by the peer
address; another connection is never affected."""

import json
import threading
import time

import adbc_driver_flightsql.dbapi as fdb
import pyarrow.flight as flight
import pytest
from adbc_driver_flightsql import ConnectionOptions, DatabaseOptions

from colony.config.builders import devices as devices_config
from colony.data import uniform
from colony.drivers.catalog import Catalog, ensure_query_service
from colony.gateway import Flight_pb2 as fpb
from colony.gateway import FlightSql_pb2 as fsql
from colony.gateway.server import Gateway, pack
from colony.runtime.local import LocalColony

TOKEN = "t0ken-for-the-session-tests-0123456789"
SQL = "select particle_id % 8 as g, count(*) as n from particles where x < 0.5 group by g"
OPT = ConnectionOptions.OPTION_SESSION_OPTION_PREFIX.value + "colony.placement"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    lc = LocalColony(devices_config({"host": {"role": "host", "threads": 1},
                                     "nic0": {"threads": 1, "pools": ["data"]}}, name="sesscolony"))
    ensure_query_service(lc, str(tmp_path_factory.mktemp("models")), calib_runs=10, max_rows=40_000)
    lc.put("data", "particles/000001", uniform(20_000, seed=5, n_particles=100))
    gw = Gateway(Catalog(lc, ttl_s=5), "grpc://127.0.0.1:0", token=TOKEN, name="sesscolony")
    threading.Thread(target=gw.serve, daemon=True).start()
    yield gw
    gw.shutdown()


def _connect(server, cookies: bool):
    db = {DatabaseOptions.AUTHORIZATION_HEADER.value: f"Bearer {TOKEN}"}
    if cookies:
        db[DatabaseOptions.WITH_COOKIE_MIDDLEWARE.value] = "true"
    return fdb.connect(f"grpc://127.0.0.1:{server.port}", db_kwargs=db, autocommit=True)


def _chosen(conn) -> str:
    with conn.cursor() as cur:
        cur.execute("EXPLAIN " + SQL)
        return next(r["placement"] for r in cur.fetch_arrow_table().to_pylist() if r["chosen"])


def _options(conn) -> dict:
    return json.loads(conn.adbc_connection.get_option(ConnectionOptions.OPTION_SESSION_OPTIONS.value))


@pytest.mark.parametrize("cookies", [True, False], ids=["cookie", "peer-address"])
def test_set_placement_belongs_to_one_connection(server, cookies):
    with _connect(server, cookies) as a, _connect(server, cookies) as b:
        free = _chosen(b)                                   # what the engine picks by itself
        forced = next(p for p in ("down", "back", "split") if p != free)
        with a.cursor() as cur:
            cur.execute(f"SET colony.placement = '{forced}'")    # the first statement of its connection
        assert _chosen(a) == forced and _options(a)["colony.placement"] == forced
        assert _chosen(b) == free and _options(b)["colony.placement"] == "auto"
        # Flight's SetSessionOptions through the driver: b's own, a keeps its SET
        b.adbc_connection.set_options(**{OPT: "down"})
        assert _options(b)["colony.placement"] == "down" and _chosen(b) == "down"
        assert _options(a)["colony.placement"] == forced and _chosen(a) == forced
        with pytest.raises(Exception, match="(?i)invalid"):
            b.adbc_connection.set_options(**{OPT: "sideways"})
        with pytest.raises(Exception, match="(?i)invalid"):
            b.adbc_connection.set_options(**{ConnectionOptions.OPTION_SESSION_OPTION_PREFIX.value + "nope": "x"})
        b.adbc_connection.set_options(**{ConnectionOptions.OPTION_ERASE_SESSION_OPTION_PREFIX.value
                                         + "colony.placement": ""})
        assert _options(b)["colony.placement"] == "auto"
    with _connect(server, cookies) as c:                    # a new connection starts fresh
        assert _options(c)["colony.placement"] == "auto"


class _Received(flight.ClientMiddlewareFactory):
    def __init__(self):
        self.headers: list[dict] = []

    def start_call(self, info):
        factory = self

        class M(flight.ClientMiddleware):
            def received_headers(self, headers):
                factory.headers.append(headers)
        return M()


def test_cookie_protocol_with_a_raw_flight_client(server):
    """The protocol as any Flight client sees it: set-cookie on a call without the cookie,
    none once it is sent back, state keyed by it, CloseSession forgets it."""
    seen = _Received()
    client = flight.FlightClient(f"grpc://127.0.0.1:{server.port}", middleware=[seen])
    auth = (b"authorization", f"Bearer {TOKEN}".encode())
    client.get_flight_info(flight.FlightDescriptor.for_command(pack(fsql.CommandGetCatalogs())),
                           flight.FlightCallOptions(headers=[auth]))
    (cookie,) = {c for h in seen.headers for c in h.get("set-cookie", [])}      # headers (and trailers)
    assert cookie.startswith("colony_session=")
    sid = cookie.split(";")[0].split("=", 1)[1]
    assert len(sid) == 32
    n = len(seen.headers)
    client.get_flight_info(flight.FlightDescriptor.for_command(pack(fsql.CommandGetCatalogs())),
                           flight.FlightCallOptions(headers=[auth, (b"cookie", f"colony_session={sid}".encode())]))
    assert len(seen.headers) > n and not any("set-cookie" in h for h in seen.headers[n:])
    sid = "0123456789abcdef0123456789abcdef"
    mine = flight.FlightCallOptions(headers=[auth, (b"cookie", f"colony_session={sid}".encode())])
    other = flight.FlightCallOptions(headers=[auth, (b"cookie", b"colony_session=" + b"f" * 32)])

    def action(kind, msg, opts):
        return list(client.do_action(flight.Action(kind, msg.SerializeToString()), opts))[0].body.to_pybytes()
    req = fpb.SetSessionOptionsRequest()
    req.session_options["colony.placement"].string_value = "back"
    assert not fpb.SetSessionOptionsResult.FromString(action("SetSessionOptions", req, mine)).errors
    get = fpb.GetSessionOptionsRequest()
    assert fpb.GetSessionOptionsResult.FromString(action("GetSessionOptions", get, mine)) \
        .session_options["colony.placement"].string_value == "back"
    assert fpb.GetSessionOptionsResult.FromString(action("GetSessionOptions", get, other)) \
        .session_options["colony.placement"].string_value == "auto"
    closed = fpb.CloseSessionResult.FromString(action("CloseSession", fpb.CloseSessionRequest(), mine))
    assert closed.status == fpb.CloseSessionResult.CLOSED
    assert fpb.GetSessionOptionsResult.FromString(action("GetSessionOptions", get, mine)) \
        .session_options["colony.placement"].string_value == "auto"


def test_statements_never_wait_for_a_catalog_scan(server):
    """A stale table list is used at once by statements and rescanned in the background;
    metadata calls (and a statement naming an unknown table) still scan first."""
    cat = server.catalog
    cat.tables(refresh=True)
    scans = []
    real = cat._rescan

    def slow_rescan(asked):
        scans.append(asked)
        threading.Event().wait(1.0)                 # a slow scan (Ray calls to every device)
        real(asked)
    cat._rescan = slow_rescan
    try:
        cat._at -= cat.ttl_s + 1                    # stale
        t0 = time.perf_counter()
        assert [t.name for t in cat.tables(wait=False)] == ["particles"]
        assert time.perf_counter() - t0 < 0.5 and len(scans) == 1       # answered now, scanning behind
        cat.tables(wait=False)
        assert len(scans) == 1                                         # one background scan at a time
        stop = time.monotonic() + 10
        while cat._rescanning and time.monotonic() < stop:
            time.sleep(0.05)
        assert not cat._rescanning and time.monotonic() - cat._at < cat.ttl_s
    finally:
        cat._rescan = real
