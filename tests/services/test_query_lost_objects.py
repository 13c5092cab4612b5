"""A table whose objects a device lost (a memory-only pool across a restart) is refused by
name, never answered over the objects that are left; loading it again recovers."""

import pyarrow.csv as pcsv
import pytest

from colony.config.builders import devices as devices_config
from colony.data import uniform
from colony.drivers.catalog import scan
from colony.drivers.load import load_file
from colony.drivers.query import QueryClient, calibrate_colony
from colony.errors import ObjectLost
from colony.query.plan import TableSpec
from colony.runtime.local import LocalColony


def _colony(tmp_path):
    return LocalColony(devices_config({
        "host": {"role": "host", "threads": 2, "services": {"query": {}}},
        "nic0": {"role": "smartnic", "threads": 1, "services": {"query": {}}, "pools": ["mem"],
                 "workdir": str(tmp_path / "nic0")},
        "nic1": {"role": "smartnic", "threads": 1, "services": {"query": {}}, "pools": ["mem"],
                 "workdir": str(tmp_path / "nic1")}}), budgets=True)


def test_a_query_over_a_table_with_lost_objects_fails_naming_them(tmp_path):
    t = uniform(8_000, seed=3).select(["particle_id", "x", "y"])
    pcsv.write_csv(t, tmp_path / "t.csv")
    lc = _colony(tmp_path)
    load_file(lc, tmp_path / "t.csv", "mem", "spread", chunk_rows=2_000)
    assert lc.store("nic0").list("mem") and lc.store("nic1").list("mem")
    lc = _colony(tmp_path)                   # both devices restart: the memory-only pool's objects are gone
    assert lc.store("nic0").lost_keys("mem")
    [info] = scan(lc)                        # `colony tables` lists it, with what is lost and where
    assert (info.name, info.objects, info.rows, info.lost_on) == ("spread", 0, 0, ("nic0", "nic1"))
    assert info.lost == 4 and info.to_dict()["lost"] == 4
    calibrate_colony(lc, "host", n_runs=6, max_rows=20_000)
    spec = {"spread": TableSpec("spread", "mem", "spread/*")}
    with pytest.raises(ObjectLost, match=r"nic[01].*lost .*spread/.*colony load --replace"):
        QueryClient(lc, "host", spec).query("select count(*) as n from spread where x < 0.5")
    load_file(lc, tmp_path / "t.csv", "mem", "spread", chunk_rows=2_000, replace=True)
    assert lc.store("nic0").lost_keys("mem") == [] and lc.store("nic1").lost_keys("mem") == []
    [info] = scan(lc)
    assert (info.objects, info.rows, info.lost, info.lost_on) == (4, 8_000, 0, ())
    r = QueryClient(lc, "host", spec).query("select count(*) as n from spread where x < 0.5")
    assert r.table.to_pylist() == [{"n": sum(1 for v in t["x"].to_pylist() if v < 0.5)}]
