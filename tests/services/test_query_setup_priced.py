"""The setup term prices what the service does with stored objects before it executes, on
its own path: through a worker process nothing is decoded in the service (the worker decodes
the objects inside its timed execution), in process they are decoded and registered.
Calibration times exactly that, so a down placement is no longer priced ~1 ms of decoding
that never ran (TPC-H run 46: 0.5-1.6 ms predicted, 0.03-0.1 ms measured)."""

import pyarrow as pa
import pytest

from colony import codec
from colony.config.builders import devices as devices_config
from colony.cost.calibrate import measure_run
from colony.cost.models import LinearModel
from colony.data import uniform
from colony.errors import ColonyError
from colony.query import plan as qplan
from colony.query.stats import TableStats
from colony.runtime.local import LocalColony

SQL = "select count(*) as n from particles where x < 0.5"


def test_calibration_through_a_worker_times_no_decode_and_in_process_times_decode_and_register():
    t = uniform(20_000, seed=2)
    parts, st = [t], TableStats.build([t])
    answer = codec.pack([pa.table({"n": pa.array([1], pa.int64())})])
    seen = []

    def runner(plan, objs, threads):     # a worker's path: it gets the stored buffers as they are
        seen.append(objs)
        return answer
    junk = {"particles": [codec.pack([t])[:64]]}        # no decoder would read this: none runs
    r = measure_run(SQL, {"particles": parts}, {"particles": st}, 1, repeats=1, runner=runner, packed=junk)
    assert seen and all(o["particles"][0] is junk["particles"][0] for o in seen)
    assert 0 <= r["setup_s"] < 0.01 and r["rows"] == 1
    local = measure_run(SQL, {"particles": parts}, {"particles": st}, 1, repeats=1)
    assert local["setup_s"] > 0 and local["rows"] == 1


def test_a_fitted_setup_is_the_whole_setup_price():
    from colony.cost.models import DeviceModels
    m = DeviceModels(device="d", threads=1, exec=None, ser_time=LinearModel(0, 0), ser_bytes=LinearModel(0, 1),
                     deser_s=1e-3)
    assert m.predict_setup(1e6, 4) == pytest.approx(4e-3)          # no fit: a decode per object
    m.setup = LinearModel(2e-5, 0.0)
    assert m.predict_setup(1e6, 4) == pytest.approx(2e-5)          # the fit, without a decode added


@pytest.fixture(scope="module")
def host():
    return LocalColony(devices_config({"host": {"role": "host", "threads": 1, "services": {"query": {}}}}))


def test_a_host_with_workers_hands_pushed_objects_over_undecoded(host, monkeypatch):
    import colony.services.query as svc
    t = uniform(30_000, seed=3)
    plan = qplan.to_substrait(SQL, {"particles": t.schema})
    objs = [codec.pack([t.slice(0, 15_000)]), codec.pack([t.slice(15_000)])]
    calls = []
    real = codec.unpack
    monkeypatch.setattr(svc.codec, "unpack", lambda *a, **k: calls.append(1) or real(*a, **k))
    out = host.call("host", "query", "run_pushed", plan, {"particles": objs})
    assert calls == []                                   # the worker decoded them, not the service
    assert out["result"]["n"][0].as_py() == sum(x < 0.5 for x in t["x"].to_pylist())
    with pytest.raises(ColonyError):                     # a broken object fails in the worker, typed
        host.call("host", "query", "run_pushed", plan, {"particles": [objs[0][:100]]})
    monkeypatch.undo()
    again = host.call("host", "query", "run_pushed", plan, {"particles": objs})
    assert again["result"]["n"][0].as_py() == out["result"]["n"][0].as_py()
