"""A worker moves between two pools of one device (``WorkerPool.adopt``): a calibration's
pool borrows the query service's idle worker and gives it back, so a calibration starts no
process where one is idle (each started one: ~1.2 s of pyarrow and DataFusion imports here)
and what runs after it (the call-path probes, a query) finds a warm worker."""

from colony import codec
from colony.data import uniform
from colony.query import plan as qplan
from colony.query.worker import WorkerPool

SQL = "select particle_id & 15 as g, count(*) as n from particles where x < 0.5 group by g"


def test_an_idle_worker_moves_to_a_pool_with_room_and_serves_it_without_a_start():
    t = uniform(20_000, seed=4)
    plan, buf = qplan.to_substrait(SQL, {"particles": t.schema}), codec.pack([t])
    ref = qplan.run_sql_locally(SQL, {"particles": [t]}).sort_by("g")
    a, b = WorkerPool(keep=1, prestart=False), WorkerPool(keep=1, prestart=False)
    try:
        assert not b.adopt(a) and not b.adopt(None) and not a.adopt(a)     # nothing idle; itself
        a.prepare()
        [pid] = [w.pid for w in a._idle]
        assert b.adopt(a)
        assert a.cold() and not b.cold() and [w.pid for w in b._idle] == [pid]
        out = b.run(plan, {"particles": [buf]}, threads=1, memory_limit=None, max_result_bytes=None,
                    cache=True, timeout_s=60)
        assert codec.unpack_one(out).sort_by("g").equals(ref)
        assert b.starts == [] and [w.pid for w in b._idle] == [pid]      # served by the adopted one
        a.prepare()                                                      # b is full: the extra goes
        [extra] = a._idle
        assert not b.adopt(a) and not a._idle and extra.p.poll() is not None
    finally:
        a.close()
        b.close()
