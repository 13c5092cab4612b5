"""Calibration: the fixed suite runs on devices and persists per device; cost models read only it."""

import json

import pytest

from colony.cost import suite as calibration


def test_suite_measures_every_part_and_persists(tmp_path, monkeypatch):
    monkeypatch.setenv(calibration.ENV, str(tmp_path))
    r = calibration.device_suite(threads=1, quick=True)
    for part in ("memcpy", "ipc_serialize", "ipc_deserialize", "object_pack", "object_unpack"):
        assert r[part] and all(x["seconds"] > 0 for x in r[part])
    assert {k["kernel"] for k in r["kernels"]} == {"filter", "sum", "sort_indices", "min_max", "multiply"}
    assert calibration.load("nicX", "fp") == {}
    p = calibration.save("nicX", "fp", r)
    assert p == tmp_path / "nicX@fp.json" and calibration.load("nicX", "fp")["threads"] == 1


@pytest.mark.ray
def test_calibrate_devices_over_their_links(ray_colony, tmp_path, monkeypatch):
    from colony.runtime.calibrate import calibrate, summary
    monkeypatch.setenv(calibration.ENV, str(tmp_path))
    res = calibrate(ray_colony, ["nic0", "host0"], quick=True, repeats=1)
    [path] = tmp_path.glob("nic0@*.json")
    saved = json.loads(path.read_text())
    assert saved["label"] == "emulated bluefield2" and saved["threads"] == 1
    assert res["host0"]["label"] == "real"
    dirs = {t["direction"] for t in saved["transfers"]}
    assert dirs == {"host_to_device", "device_to_host"}
    assert len(saved["transfers"]) == 2 * len(calibration.QUICK_SIZES)
    s = summary(saved)
    assert s["h2d_gbps"] > 0 and s["memcpy_gbps"] > 0
    # the device service (placed by the default config) now serves it to any client or peer
    assert ray_colony.call("nic0", "device", "calibration")["transfers"] == saved["transfers"]
    assert ray_colony.call("nic1", "device", "describe")["threads"] == 1
