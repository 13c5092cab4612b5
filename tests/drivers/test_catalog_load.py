"""`load_file` + the catalog on an in-process colony: files stream in as chunked objects
with statistics, tables show up with schema and rows, and SQL over them equals local SQL."""

import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest

from colony.config.builders import devices as devices_config
from colony.data import uniform
from colony.drivers.catalog import Catalog, ensure_query_service, scan
from colony.drivers.load import load_file
from colony.errors import DataError
from colony.query import plan as qplan
from colony.runtime.local import LocalColony


@pytest.fixture(scope="module")
def colony(tmp_path_factory):
    lc = LocalColony(devices_config({"host": {"role": "host", "threads": 2},
                                     "nic0": {"pools": ["data"]}, "nic1": {"pools": ["data"]}}))
    ensure_query_service(lc, str(tmp_path_factory.mktemp("models")), calib_runs=8, max_rows=20_000)
    return lc


def test_parquet_csv_and_ipc_load_chunked_with_statistics(colony, tmp_path):
    t = uniform(30_000, seed=3)
    pq.write_table(t, tmp_path / "p.parquet", row_group_size=4_000)
    pcsv.write_csv(t.select(["x", "y", "particle_id"]), tmp_path / "c.csv")
    with pa.OSFile(str(tmp_path / "a.arrow"), "wb") as f, pa.ipc.new_file(f, t.schema) as w:
        w.write_table(t, max_chunksize=5_000)
    r1 = load_file(colony, tmp_path / "p.parquet", "data", "parts", device="nic1", chunk_rows=10_000)
    assert (r1.rows, r1.objects, r1.devices) == (30_000, 3, {"nic1": 3})
    r2 = load_file(colony, tmp_path / "c.csv", "data", "csvparts", chunk_rows=8_000)      # spread by the pool
    assert r2.rows == 30_000 and set(r2.devices) == {"nic0", "nic1"}
    r3 = load_file(colony, tmp_path / "a.arrow", "data", "ipcparts", device="nic0", chunk_rows=12_000)
    assert r3.objects == 2 and r3.devices == {"nic0": 2}      # whole 5k-row batches per object
    # statistics were built by the store hook on put: one sketch object per stored object
    stats = colony.store("nic1").list("__stats__", "data/parts/")
    assert len(stats) == 3
    tabs = {x.name: x for x in scan(colony)}
    assert tabs["parts"].rows == 30_000 and tabs["parts"].devices == ("nic1",) and tabs["parts"].objects == 3
    assert tabs["parts"].schema.equals(t.schema)
    assert tabs["csvparts"].devices == ("nic0", "nic1")
    # appending keeps the tags going; the same file twice doubles the rows
    load_file(colony, tmp_path / "p.parquet", "data", "parts", device="nic1", chunk_rows=10_000)
    assert {x.name: x for x in scan(colony)}["parts"].rows == 60_000
    load_file(colony, tmp_path / "p.parquet", "data", "parts", device="nic1", chunk_rows=10_000, replace=True)

    cat = Catalog(colony)
    for sql in ("select count(*) as n, sum(x) as s from parts where y < 0.25",
                "select particle_id % 4 as g, count(*) as n from csvparts where x > 0.5 group by g order by g"):
        table = "parts" if "from parts" in sql else "csvparts"
        src = t if table == "parts" else pcsv.read_csv(tmp_path / "c.csv")
        ref = qplan.run_sql_locally(sql, {table: [src]})
        for placement in ("down", "back", "auto"):
            r = cat.query(sql, placement)
            assert r.table.column_names == ref.column_names, (sql, placement)
            for name in ref.column_names:
                assert r.table[name].to_pylist() == pytest.approx(ref[name].to_pylist(), rel=1e-12), (sql, placement)


def test_load_refuses_what_it_cannot_do(colony, tmp_path):
    pq.write_table(uniform(100, seed=1), tmp_path / "p.parquet")
    pq.write_table(pa.table({"a": [1, 2]}), tmp_path / "other.parquet")
    with pytest.raises(DataError, match="pools"):
        load_file(colony, tmp_path / "p.parquet", "nope", "t")
    with pytest.raises(DataError, match="not a member"):
        load_file(colony, tmp_path / "p.parquet", "data", "t", device="host")
    with pytest.raises(DataError, match="SQL identifier"):
        load_file(colony, tmp_path / "p.parquet", "data", "bad name")
    with pytest.raises(DataError, match="format"):
        load_file(colony, tmp_path / "p.txt", "data", "t") if (tmp_path / "p.txt").write_text("x") else None
    load_file(colony, tmp_path / "p.parquet", "data", "small")
    with pytest.raises(DataError, match="schema"):
        load_file(colony, tmp_path / "other.parquet", "data", "small")


def test_a_device_is_calibrated_when_data_first_sits_on_it(tmp_path):
    """The catalog hands its ``calibrate`` the devices that hold a table and were not handed
    before: nic0 stays uncalibrated until a table lands there; queries are priced."""
    from colony.drivers.catalog import place_query_service
    from colony.drivers.query import ensure_calibrated
    lc = LocalColony(devices_config({"host": {"role": "host", "threads": 2},
                                     "nic0": {"pools": ["data"]}, "nic1": {"pools": ["data"]}}))
    place_query_service(lc, str(tmp_path / "models"))
    calls = []

    def calibrate(devs):
        calls.append(devs)
        return ensure_calibrated(lc, "host", 6, 20_000, devices=devs)
    t = uniform(20_000, seed=4)
    pq.write_table(t, tmp_path / "p.parquet")
    load_file(lc, tmp_path / "p.parquet", "data", "a", device="nic1")
    cat = Catalog(lc, calibrate=calibrate)
    r = cat.query("select count(*) as n from a where x < 0.5")
    assert calls == [["nic1"]] and r.decision["predicted"]         # priced, not a default placement
    assert r.table["n"][0].as_py() == qplan.run_sql_locally("select count(*) as n from a where x < 0.5",
                                                            {"a": [t]})["n"][0].as_py()
    assert not lc.call("nic0", "query", "health")["calibrated"]
    load_file(lc, tmp_path / "p.parquet", "data", "b", device="nic0")
    cat.query("select count(*) from b")                              # unknown to the last scan: rescanned
    assert calls == [["nic1"], ["nic0"]] and lc.call("nic0", "query", "health")["calibrated"]
    cat.query("select count(*) from a", placement="down")
    assert len(calls) == 2                                           # nothing new to calibrate
