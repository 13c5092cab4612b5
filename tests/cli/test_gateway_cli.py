"""Your data in a running colony, end to end through the real entry point: `colony load`
(Parquet on one SmartNIC, CSV spread), `colony tables`, `colony query --up`, `colony serve
--flight-sql` answering an ADBC client, on a colony that `colony up` started (the CLI tests'
shared colony, tests/cli/conftest.py)."""

import json
import socket
import subprocess
import sys

import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.ray
def test_load_tables_query_and_serve_on_a_running_colony(cli_colony, tmp_path):
    import adbc_driver_flightsql.dbapi as fdb
    from adbc_driver_flightsql import DatabaseOptions

    from colony.data import uniform
    from colony.query import plan as qplan
    colony, env = cli_colony.run, cli_colony.env
    t = uniform(60_000, seed=21)
    pq.write_table(t, tmp_path / "trades.parquet", row_group_size=10_000)
    pcsv.write_csv(t.select(["particle_id", "x", "y"]).slice(0, 20_000), tmp_path / "spread.csv")
    serve = None
    try:
        ld = colony("load", str(tmp_path / "trades.parquet"), "--pool", "default", "--table", "trades",
                    "--device", "nic1", "--chunk-rows", "20000", "--calib-runs", "6", "--calib-rows", "30000")
        assert ld.returncode == 0, ld.stdout + ld.stderr
        assert "loaded 60,000 rows" in ld.stdout and "nic1 (3)" in ld.stdout
        ld2 = colony("load", str(tmp_path / "spread.csv"), "--pool", "default", "--table", "spread", "--spread",
                     "--chunk-rows", "5000")
        assert ld2.returncode == 0, ld2.stdout + ld2.stderr
        tabs = colony("tables", "--json")
        assert tabs.returncode == 0, tabs.stderr
        by = {x["table"]: x for x in json.loads(tabs.stdout)}
        assert by["trades"]["rows"] == 60_000 and by["trades"]["devices"] == ["nic1"] and by["trades"]["pool"] == "default"
        assert by["spread"]["devices"] == ["nic0", "nic1", "nic2", "nic3"] and by["spread"]["rows"] == 20_000
        assert [c["name"] for c in by["trades"]["schema"]] == t.schema.names
        sql = "select count(*) as n, sum(vx) as s from trades where x < 0.3 and y > 0.5"
        ref = qplan.run_sql_locally(sql, {"trades": [t]}).to_pylist()[0]
        q = colony("query", "--up", sql, "--placement", "down", "--json")
        assert q.returncode == 0, q.stdout + q.stderr
        out = json.loads(q.stdout)
        assert out["device"] == "nic1" and out["placement"] == "down"
        assert out["result_head"][0]["n"] == ref["n"] and abs(out["result_head"][0]["s"] - ref["s"]) < 1e-6
        port = _free_port()
        serve = subprocess.Popen([sys.executable, "-m", "colony", "serve", "--flight-sql", f"127.0.0.1:{port}"],
                                 env=env, stdout=subprocess.PIPE, stderr=open(tmp_path / "serve.err", "w"),
                                 text=True)
        line = serve.stdout.readline()
        assert "Flight SQL gateway" in line and f":{port}" in line and "auth: token" in line, \
            line + (tmp_path / "serve.err").read_text()
        token = (cli_colony.tmp / "token").read_text().strip()
        db = {DatabaseOptions.AUTHORIZATION_HEADER.value: f"Bearer {token}"}
        with fdb.connect(f"grpc://127.0.0.1:{port}", db_kwargs=db, autocommit=True) as conn, conn.cursor() as cur:
            cur.execute(sql)
            (n, s), = cur.fetchall()
            assert n == ref["n"] and abs(s - ref["s"]) < 1e-6
            cur.execute("select count(*) from spread where x < 0.5")
            ref2 = qplan.run_sql_locally("select count(*) as n from spread where x < 0.5",
                                         {"spread": [pcsv.read_csv(tmp_path / "spread.csv")]}).to_pylist()[0]["n"]
            assert cur.fetchall() == [(ref2,)]
    finally:
        if serve is not None:
            serve.terminate()
            try:
                serve.wait(timeout=30)
            except subprocess.TimeoutExpired:
                serve.kill()
                raise
