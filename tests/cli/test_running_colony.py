"""Commands on a running colony, through the real entry point, on one colony that `colony up`
starts for this module and `colony down` stops in its last test (starting one took ~21 s and
stopping it ~5 s on 2 cores; kept for the whole session it slowed every later test; a second
one for `up`/`down` alone cost the suite ~40 s):

- `colony up` (and a second `up` refused), `colony status`, `colony codec advise`;
- your data: `colony load` (Parquet on one SmartNIC, CSV spread), `colony tables`,
  `colony query --up`, `colony serve --flight-sql` answering an ADBC client;
- `colony jobstore up / put / ls / get / status / down`;
- `colony down`, after which `status` says to run `colony up`."""

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest

ROOT = Path(__file__).resolve().parents[2]


class CliColony:
    """``run(*args)`` runs ``colony *args`` in a subprocess against the running colony."""

    def __init__(self, tmp: Path):
        self.tmp = tmp
        self.env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), COLONY_STATE_DIR=str(tmp / "state"),
                        COLONY_SPILL_DIR=str(tmp / "spill"), COLONY_MODELS_DIR=str(tmp / "models"),
                        COLONY_CALIBRATION_DIR=str(tmp / "calib"), RAY_AUTH_TOKEN_PATH=str(tmp / "token"))
        self.up: subprocess.CompletedProcess | None = None

    def run(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "colony", *args], env=self.env, capture_output=True,
                              text=True, timeout=timeout)


@pytest.fixture(scope="module")
def cli_colony(tmp_path_factory):
    c = CliColony(tmp_path_factory.mktemp("cli-colony"))
    c.up = c.run("up", "--temp-dir", TEMP_DIR, "--object-store-memory", "256MiB")
    assert c.up.returncode == 0, c.up.stdout + c.up.stderr
    try:
        yield c
    finally:
        if (c.tmp / "state" / "default.json").exists():      # the last test (down) did not run
            down = c.run("down")
            assert down.returncode == 0, down.stdout + down.stderr


TEMP_DIR = f"/tmp/ray-{ROOT.name}-cli"


@pytest.mark.ray
def test_up_status_and_codec_advice_on_a_running_colony(cli_colony, tmp_path):
    colony, calib = cli_colony.run, cli_colony.tmp / "calib"
    assert "emulated bluefield2" in cli_colony.up.stdout and "Ray auth: token" in cli_colony.up.stdout
    again = colony("up", "--temp-dir", TEMP_DIR)
    assert again.returncode == 2 and "already up" in again.stderr
    st = colony("status", "--json", str(tmp_path / "st.json"))
    assert st.returncode == 0, st.stdout + st.stderr
    rows = json.loads((tmp_path / "st.json").read_text())["devices"]
    assert [r["device"] for r in rows] == ["host0", "nic0", "nic1", "nic2", "nic3"]
    assert all(r["emulated"] == (r["role"] == "smartnic") for r in rows)
    assert all(not r["restarted"] and r["warm_up"] is None for r in rows)   # only a restarted device warms itself
    assert "links (counted by the device" in st.stdout and all("links" in r and r["flight"] for r in rows)
    # codec advice reads the device's one calibration record, calibrating it first when it has none
    assert not list(calib.glob("nic1@*.json"))
    adv = colony("codec", "advise", "--device", "nic1", "--quick", "--json", str(tmp_path / "adv.json"))
    assert adv.returncode == 0, adv.stdout + adv.stderr
    [rec] = calib.glob("nic1@*.json")
    stored = json.loads(rec.read_text())
    got = json.loads((tmp_path / "adv.json").read_text())
    assert got["device"] == "nic1" and got["threads"] == stored["threads"] == 1
    assert {p["codec"] for p in got["profiles"]} == {p["codec"] for p in stored["codecs"]} >= {"none", "outer-zstd"}
    assert got["link_gbps"] > 0 and "advice:" in adv.stdout
    before = rec.stat().st_mtime_ns
    slow = colony("codec", "advise", "--device", "nic1", "--link-gbps", "0.01")
    assert slow.returncode == 0 and rec.stat().st_mtime_ns == before      # read, not recalibrated
    assert "advice: none" not in slow.stdout                           # a slow link: compression wins


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
        # only the host and the SmartNIC the table sits on are calibrated for queries
        assert "calibrating cost models on host0, nic1" in ld.stderr, ld.stderr
        assert _query_calibrated(cli_colony.tmp / "models" / "query-models-default") == {"host0", "nic1"}
        ld2 = colony("load", str(tmp_path / "spread.csv"), "--pool", "default", "--table", "spread", "--spread",
                     "--chunk-rows", "5000", "--calib-runs", "6", "--calib-rows", "30000")
        assert ld2.returncode == 0, ld2.stdout + ld2.stderr
        assert "calibrating nic0, nic2, nic3 only" in ld2.stderr, ld2.stderr      # on the host's record
        assert _query_calibrated(cli_colony.tmp / "models" / "query-models-default") == {"host0", "nic0", "nic1", "nic2", "nic3"}
        # status names where each calibration leaves the models extrapolating: 6 runs leave
        # most features in fewer than the 3 runs a full calibration's reserve gives each
        st = colony("status", "--json", str(tmp_path / "st.json"))
        assert st.returncode == 0 and "calibration gaps" in st.stdout, st.stdout + st.stderr
        qm = {m["device"]: m for m in json.loads((tmp_path / "st.json").read_text())["query_models"]}
        assert set(qm) == {"host0", "nic0", "nic1", "nic2", "nic3"} and all(m["calibrated"] for m in qm.values())
        assert all(len(m["gaps"]["thin"]) > 10 and isinstance(m["gaps"]["short_reach"], list) for m in qm.values())
        tabs = colony("tables", "--json")
        assert tabs.returncode == 0, tabs.stderr
        assert "calibrating" not in tabs.stderr
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


def _query_calibrated(calib: Path) -> set[str]:
    """The devices whose calibration record holds query cost models."""
    return {p.name.split("@")[0] for p in calib.glob("*@*.json") if json.loads(p.read_text()).get("query")}


def _default_pool_objects(colony, out) -> int:
    r = colony("status", "--json", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    rows = json.loads(out.read_text())["devices"]
    return sum(p["objects"] for d in rows for name, p in d["store"]["pools"].items() if name == "default")


@pytest.mark.ray
def test_jobstore_commands_end_to_end(cli_colony, tmp_path):
    colony = cli_colony.run
    before = _default_pool_objects(colony, tmp_path / "c0.json")      # other tests' tables share the pool
    r = colony("jobstore", "up", "--job", "j1", "--chunk-size", "65536")
    assert r.returncode == 0 and "striped over ['nic0', 'nic1', 'nic2', 'nic3']" in r.stdout, r.stdout + r.stderr
    try:
        src = tmp_path / "ckpt.bin"
        src.write_bytes(os.urandom(500_000))
        r = colony("jobstore", "put", str(src), "ckpt/0", "--job", "j1")
        assert r.returncode == 0 and "500000 bytes in 8 chunks" in r.stdout, r.stdout + r.stderr
        assert "ckpt/0" in colony("jobstore", "ls", "--job", "j1").stdout
        out = tmp_path / "back.bin"
        r = colony("jobstore", "get", "ckpt/0", str(out), "--job", "j1")
        assert r.returncode == 0 and out.read_bytes() == src.read_bytes(), r.stderr
        r = colony("jobstore", "status", "--job", "j1", "--json", str(tmp_path / "st.json"))
        assert r.returncode == 0, r.stdout + r.stderr
        st = json.loads((tmp_path / "st.json").read_text())
        assert sum(d["chunks"] for d in st["devices"]) == 8 and [f["path"] for f in st["files"]] == ["ckpt/0"]
        missing = colony("jobstore", "get", "nope", "-", "--job", "j1")
        assert missing.returncode == 2 and "no committed file 'nope'" in missing.stderr
    finally:
        r = colony("jobstore", "down", "--job", "j1")
    assert r.returncode == 0 and "8 chunks dropped" in r.stdout, r.stdout + r.stderr
    gone = colony("jobstore", "ls", "--job", "j1")
    assert gone.returncode == 2 and "jobstore up --job j1" in gone.stderr
    assert _default_pool_objects(colony, tmp_path / "c2.json") == before


@pytest.mark.ray
def test_down_stops_the_colony_and_status_then_says_to_start_one(cli_colony):
    """Last in this module: the colony the others used goes down."""
    colony = cli_colony.run
    state = json.loads((cli_colony.tmp / "state" / "default.json").read_text())
    down = colony("down")
    assert down.returncode == 0 and "stopped" in down.stdout, down.stdout + down.stderr
    assert not (cli_colony.tmp / "state" / "default.json").exists()
    with pytest.raises(ProcessLookupError):
        os.kill(state["pid"], 0)
    gone = colony("status")
    assert gone.returncode == 2 and "run `colony up`" in gone.stderr
