"""The offload verdict on the seeds' own inputs (shipped spec) and on this machine's measured JSONs."""

import json
from pathlib import Path

import pytest

from colony.errors import SpecFileError
from colony.quantify import offload

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench" / "results"


def test_seed_inputs_give_the_seeds_arithmetic_and_name_what_flips_it():
    spec = offload.load_spec("seed")
    rep = offload.report(spec)
    f = rep["figures"]
    assert f["host_cycles_saved_fraction"] == pytest.approx(1 - 1 / 1.38)          # HPL 38% slower on the host
    assert f["node_equivalents"] == pytest.approx(126 * (1 - 1 / 1.38))              # ~34.7 Glinda nodes
    assert f["device_utilization"] == pytest.approx(3.5 / (8 * 0.25))                # 3-4 cores on 8 slow Arm cores
    assert f["benefit"]["usd"] > 0 and f["benefit"]["kw"] > 0
    # the $ side pays, but a BlueField-2 at a quarter of a host core per core cannot carry 3.5 cores
    assert rep["verdict"] == "offload does not pay"
    assert rep["flips"]["device_core_speed"] == [pytest.approx(3.5 / 8, rel=1e-6)]
    assert rep["flips"]["daemon_host_cores"] == [pytest.approx(2.0, rel=1e-6)]
    assert "nodes" in rep["stable_over_range"]
    assert set(rep["sources"]["given"]) >= {"device_core_speed", "node_watts", "slowdown_device"}
    faster = offload.load_spec("seed")
    faster.inputs["device_core_speed"].value = 0.5
    assert offload.report(faster)["verdict"] == "offload pays"


def test_card_price_flip_matches_the_closed_form():
    spec = offload.load_spec("seed")
    spec.inputs["device_core_speed"].value = 1.0            # take feasibility out: only money decides
    rep = offload.report(spec)
    f, v = rep["figures"], spec.values()
    # benefit 0 <=> (tco_plain + extra + card energy) * 1 = tco_plain * 1.38
    energy = v["years"] * 8760 / 1000 * v["usd_per_kwh"] * v["cooling_factor"]
    extra = f["tco_plain_node_usd"] * 1.38 - f["tco_plain_node_usd"] - v["smartnic_watts"] * energy
    s = offload.sensitivity(spec, "smartnic_extra_usd")
    assert s["flips_at"] == [] or s["flips_at"][0] == pytest.approx(extra, rel=1e-4)
    assert extra > spec.inputs["smartnic_extra_usd"].range[1]   # the card would have to cost > $10k more


def test_measured_jsons_of_this_machine_override_and_are_labelled(tmp_path):
    spec = offload.load_spec("seed")
    offload.apply_interference(spec, RESULTS / "interference.json")
    offload.apply_mbwu(spec, RESULTS / "mbwu.json")
    offload.apply_availability(spec, RESULTS / "availability.json")
    rep = offload.report(spec)
    inter = json.loads((RESULTS / "interference.json").read_text())
    assert rep["inputs"]["slowdown_host"]["value"] == pytest.approx(
        max(0.0, inter["cases"]["ckpt-host"]["slowdown_vs_alone"]["median"]))
    assert set(rep["sources"]["measured here"]) >= {"slowdown_host", "slowdown_device", "daemon_host_cores",
                                                    "availability_benefit"}
    net = offload.load_spec("seed")
    offload.apply_interference(net, RESULTS / "interference.json", without_others=True)
    assert net.inputs["slowdown_device"].value == pytest.approx(
        max(0.0, inter["cases"]["ckpt-device"]["slowdown_without_others"]["median"]))
    assert "without other processes" in net.inputs["slowdown_device"].source
    mb = json.loads((RESULTS / "mbwu.json").read_text())["summary"]
    if mb["mbwu_ops_per_s"] is None:                      # this machine's peak was CPU-bound: refused
        assert "not an MBWU" in rep["storage_mbwu"]["refused"]
    html = offload.write_html(rep, tmp_path / "r")
    pngs = sorted(p.name for p in (tmp_path / "r").glob("sensitivity_*.png"))
    assert len(pngs) == len(offload.VERDICT_INPUTS) and html.read_text().count("<img") == len(pngs)
    assert "measured here" in html.read_text()


def test_spec_errors_are_typed(tmp_path):
    bad = tmp_path / "p.toml"
    bad.write_text("[inputs.nodes]\nvalue = 3\n")
    with pytest.raises(SpecFileError, match="lacks inputs"):
        offload.load_spec(bad)
    with pytest.raises(SpecFileError):
        offload.apply_interference(offload.load_spec("seed"), tmp_path / "missing.json")


def test_device_core_speed_from_two_characterizations(tmp_path):
    host = json.loads((RESULTS / "characterize.json").read_text())
    dev = json.loads(json.dumps(host))
    dev["summary"]["stress_ng_bogo_ops_per_s"] = {k: v / 4 for k, v in host["summary"]["stress_ng_bogo_ops_per_s"].items()}
    dev["stress_ng"]["instances"] = host["stress_ng"]["instances"] * 2          # twice the cores, each 8x slower
    (tmp_path / "dev.json").write_text(json.dumps(dev))
    spec = offload.load_spec("seed")
    offload.apply_characterization(spec, tmp_path / "dev.json", RESULTS / "characterize.json")
    assert spec.inputs["device_core_speed"].value == pytest.approx(1 / 8)
    assert spec.inputs["device_core_speed"].source.startswith("measured here")
    assert offload.report(spec)["figures"]["device_utilization"] == pytest.approx(3.5 / (8 / 8))
