"""The device suite's calibration no longer wipes the query cost models a device holds."""

import pytest


@pytest.mark.ray
def test_device_suite_keeps_the_query_entry(ray_colony, tmp_path, monkeypatch):
    from colony.cost import suite as calibration
    from colony.runtime.calibrate import calibrate
    monkeypatch.setenv(calibration.ENV, str(tmp_path))
    ray_colony.place("query", ["nic2"], models_dir=str(tmp_path / "models"))
    ray_colony.call("nic2", "query", "calibrate", n_runs=8, min_rows=2_000, max_rows=5_000)
    assert "query" in ray_colony.call("nic2", "device", "calibration")
    calibrate(ray_colony, ["nic2"], quick=True, repeats=1)
    cal = ray_colony.call("nic2", "device", "calibration")
    assert "query" in cal and "transfers" in cal
    assert cal["query"]["features"] and ray_colony.call("nic2", "query", "health")["calibrated"]
