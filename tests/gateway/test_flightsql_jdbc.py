"""The Flight SQL gateway from Java: the Arrow Flight SQL JDBC driver (Maven Central, fetched
by scripts/jdbc.sh) in a small JDBC program (tests/gateway/jdbc/ColonyJdbc.java), the way
DBeaver and other JDBC tools connect."""

import shutil
import subprocess
import threading
from pathlib import Path


from colony.config.builders import devices as devices_config
from colony.data import uniform
from colony.drivers.catalog import Catalog, ensure_query_service
from colony.gateway.server import Gateway
from colony.query import plan as qplan
from colony.runtime.local import LocalColony

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "jdbc-test-token-0123456789abcdef"


def test_jdbc_driver_lists_tables_runs_statements_and_prepared_statements(tmp_path):
    assert shutil.which("javac") and shutil.which("java"), "a JDK is needed: run `make sysdeps`"
    jar = subprocess.run(["bash", str(ROOT / "scripts/jdbc.sh")], capture_output=True, text=True, check=True,
                         timeout=300).stdout.strip()
    subprocess.run(["javac", "-d", str(tmp_path), str(ROOT / "tests/gateway/jdbc/ColonyJdbc.java")], check=True,
                   timeout=120)
    lc = LocalColony(devices_config({"host": {"role": "host", "threads": 2}, "nic0": {"pools": ["data"]}},
                                    name="jdbc"))
    ensure_query_service(lc, str(tmp_path / "models"), calib_runs=8, max_rows=20_000)
    t = uniform(30_000, seed=11)
    for i in range(3):
        lc.put("data", f"particles/{i:06d}", t.slice(i * 10_000, 10_000))
    gw = Gateway(Catalog(lc), "grpc://127.0.0.1:0", token=TOKEN, name="jdbc")
    threading.Thread(target=gw.serve, daemon=True).start()
    sql = "select count(*) as n, avg(x) as ax from particles where y < 0.5"
    prepared = "select count(*) as n from particles where x < ?"
    try:
        p = subprocess.run(["java", "--add-opens=java.base/java.nio=ALL-UNNAMED", "-cp", f"{tmp_path}:{jar}",
                            "ColonyJdbc", f"jdbc:arrow-flight-sql://127.0.0.1:{gw.port}?useEncryption=false",
                            "colony", TOKEN, sql, prepared, "0.25"], capture_output=True, text=True, timeout=180)
    finally:
        gw.shutdown()
    assert p.returncode == 0, p.stderr[-3000:]
    lines = [ln.split("\t") for ln in p.stdout.splitlines()]
    facts = {}
    for ln in lines:
        facts.setdefault(ln[0], []).append(ln[1:])
    assert facts["product"] == [["colony"]] and facts["catalog"] == [["jdbc"]]
    assert facts["table"] == [["data", "particles"]]
    assert [c[0] for c in facts["column"]] == t.schema.names
    ref = qplan.run_sql_locally(sql, {"particles": [t]}).to_pylist()[0]
    (n, ax), = facts["row"]
    assert int(n) == ref["n"] and abs(float(ax) - ref["ax"]) < 1e-12
    ref_p = qplan.run_sql_locally(prepared.replace("?", "0.25"), {"particles": [t]}).to_pylist()[0]["n"]
    assert facts["prow"] == [[str(ref_p)]]
    assert "UnknownColumn" in facts["error"][0][0] and "nope" in facts["error"][0][0]
