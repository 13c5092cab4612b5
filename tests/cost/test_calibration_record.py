"""One calibration record per device: the device suite and the query cost models in one
file, valid for one runtime fingerprint; another fingerprint makes all of it stale."""

from colony.cost import suite
from colony.cost.calibrate import calibrate
from colony.services.base import DeviceContext
from colony.services.query import QueryService
from colony.store import ObjectStore


def test_parts_share_one_record_and_another_fingerprint_is_stale(tmp_path):
    suite.update("nic0", "f1", {"memcpy": [1], "threads": 1}, tmp_path)
    suite.update("nic0", "f1", {"query": {"exec": "m"}}, tmp_path)
    rec = suite.record("nic0", "f1", tmp_path)
    assert rec["memcpy"] == [1] and rec["query"] == {"exec": "m"} and rec["fingerprint"] == "f1"
    assert list(tmp_path.iterdir()) == [tmp_path / "nic0@f1.json"]       # one file, nothing left over
    stale = suite.record("nic0", "f2", tmp_path)
    assert set(stale) == {"stale"} and "recalibrate" in stale["stale"]
    suite.update("nic0", "f2", {"query": {"exec": "n"}}, tmp_path)
    assert suite.load("nic0", "f2", tmp_path) == {"query": {"exec": "n"}, "fingerprint": "f2"}
    assert suite.record("nic9", "f1", tmp_path) == {}
    assert suite.record("nic0", "f1", tmp_path)["query"] == {"exec": "m"}   # f1's record survives f2's


def test_colonies_sharing_device_names_keep_their_own_records(tmp_path):
    """Two colonies on one machine with a device of the same name but another configuration
    (fingerprint) must not overwrite each other's record and recalibrate on every start."""
    for fp in ("small", "big"):
        suite.update("nic0", fp, {"threads": len(fp)}, tmp_path)
    assert suite.record("nic0", "small", tmp_path)["threads"] == 5
    assert suite.record("nic0", "big", tmp_path)["threads"] == 3
    other = tmp_path / "other"
    suite.update("nic00", "x", {"threads": 9}, other)               # a name that nic0's glob must not take
    assert suite.record("nic0", "x", other) == {}
    for i in range(suite.KEEP + 3):                                 # bounded: the newest KEEP per device
        suite.update("nic0", f"g{i}", {"threads": i}, tmp_path)
    assert len(list(tmp_path.glob("nic0@*.json"))) == suite.KEEP
    assert suite.record("nic0", f"g{suite.KEEP + 2}", tmp_path)["threads"] == suite.KEEP + 2


def test_the_newest_record_of_a_device_is_the_last_written_whatever_its_fingerprint(tmp_path):
    import os
    assert suite.newest("nic0", tmp_path) is None
    for i, fp in enumerate(("a", "b", "c")):
        p = suite.save("nic0", fp, {"n": i}, tmp_path)
        os.utime(p, (1000 + i, 1000 + i))
    suite.save("nic01", "z", {}, tmp_path)            # another device whose name begins the same
    os.utime(suite.path_for("nic01", "z", tmp_path), (5000, 5000))
    assert suite.newest("nic0", tmp_path) == suite.path_for("nic0", "c", tmp_path)
    os.utime(suite.path_for("nic0", "a", tmp_path), (3000, 3000))
    assert suite.newest("nic0", tmp_path) == suite.path_for("nic0", "a", tmp_path)


def test_query_models_go_into_the_record_beside_the_suite(tmp_path):
    suite.update("nic0", "fp", {"memcpy": [{"bytes": 1}], "threads": 1}, tmp_path)
    ctx = DeviceContext(name="nic0", store=ObjectStore("nic0"), fingerprint="fp",
                        calibration=suite.record("nic0", "fp", tmp_path), record_dir=str(tmp_path))
    svc = QueryService(ctx)
    assert not svc.health()["calibrated"] and not svc.health()["stale"]
    svc.models, _ = calibrate("nic0", 1, n_runs=8, min_rows=2_000, max_rows=4_000)
    svc._persist()
    rec = suite.load("nic0", "fp", tmp_path)
    assert rec["memcpy"] == [{"bytes": 1}] and rec["query"]["features"] and rec["fingerprint"] == "fp"
    again = QueryService(DeviceContext(name="nic0", store=ObjectStore("nic0"), fingerprint="fp",
                                       calibration=suite.record("nic0", "fp", tmp_path), record_dir=str(tmp_path)))
    assert again.health()["calibrated"]
    moved = QueryService(DeviceContext(name="nic0", store=ObjectStore("nic0"), fingerprint="other",
                                       calibration=suite.record("nic0", "other", tmp_path), record_dir=str(tmp_path)))
    assert not moved.health()["calibrated"] and "recalibrate" in moved.health()["stale"]


def test_models_fitted_by_an_older_rule_are_refitted_from_the_records_runs(tmp_path, monkeypatch):
    """A record whose learner an older fitting rule chose is refitted from its stored runs when
    loaded (no new timing), and kept so (in memory where the record cannot be written); one
    without runs is stale, with why."""
    from colony.cost.calibrate import runs_from_record, runs_to_record
    from colony.cost.models import FIT_REVISION, NNLSExec, fit_exec_both
    models, runs = calibrate("nic0", 1, n_runs=12, min_rows=2_000, max_rows=4_000)
    old = models.to_json()
    old["fit_revision"] = FIT_REVISION - 1
    odd = NNLSExec(coef=[1e-6] * len(old["features"]), intercept=0.5, serial=0.0)   # what no rule keeps
    old["exec"], old["exec_linear"] = odd.to_json(), odd.to_json()
    del old["fit_revision"]                              # a record from before the field: rule 1
    suite.update("nic0", "fp", {"query": old, "query_runs": runs_to_record(runs)}, tmp_path)

    def load():
        return QueryService(DeviceContext(name="nic0", store=ObjectStore("nic0"), fingerprint="fp",
                                          calibration=suite.record("nic0", "fp", tmp_path),
                                          record_dir=str(tmp_path)))
    svc = load()
    assert svc.health()["calibrated"]
    m = svc.models
    want, _, report, _ = fit_exec_both(runs_from_record(runs_to_record(runs)), seed=0)
    assert m.fit_revision == FIT_REVISION and m.report["refit"] == {"from_revision": 1, "to_revision": FIT_REVISION,
                                                                    "runs": 12}
    assert type(m.exec) is type(want) and m.report["kept"] == report["kept"] and m.exec.to_json() != odd.to_json()
    assert m.ser_time.to_json() == models.ser_time.to_json()           # what the runs do not hold stays
    stored = suite.load("nic0", "fp", tmp_path)
    assert stored["query"]["fit_revision"] == FIT_REVISION and stored["query"]["exec"] == m.exec.to_json()
    assert load().models.exec.to_json() == m.exec.to_json()            # kept: not refitted again

    def unwritable(*a, **k):
        raise OSError(30, "Read-only file system")
    suite.update("nic0", "fp3", {"query": old, "query_runs": runs_to_record(runs)}, tmp_path)
    with monkeypatch.context() as mp:
        mp.setattr(suite, "update", unwritable)                         # a record directory it cannot write
        ro = QueryService(DeviceContext(name="nic0", store=ObjectStore("nic0"), fingerprint="fp3",
                                        calibration=suite.record("nic0", "fp3", tmp_path), record_dir=str(tmp_path)))
    assert ro.health()["calibrated"] and ro.models.fit_revision == FIT_REVISION     # refitted, kept in memory
    assert "fit_revision" not in suite.load("nic0", "fp3", tmp_path)["query"]       # the record as it was

    suite.update("nic0", "fp2", {"query": old}, tmp_path)               # no runs to refit from
    bare = QueryService(DeviceContext(name="nic0", store=ObjectStore("nic0"), fingerprint="fp2",
                                      calibration=suite.record("nic0", "fp2", tmp_path), record_dir=str(tmp_path)))
    assert not bare.health()["calibrated"] and "older rule" in bare.health()["stale"]


def test_a_record_keeps_every_timed_run_beside_the_fastest():
    """Each run's timed repeats are kept (``exec_runs``) beside the fastest, which the models
    are fitted on: another aggregation can be refit and compared without timing anew."""
    from colony.cost.calibrate import runs_to_record
    _, runs = calibrate("nic0", 1, n_runs=8, min_rows=2_000, max_rows=4_000)
    rec = runs_to_record(runs)
    assert len(rec["exec_runs"]) == len(rec["exec_s"]) == 8
    for times, fastest in zip(rec["exec_runs"], rec["exec_s"]):
        assert len(times) >= 2 and min(times) == fastest and all(t > 0 for t in times)
