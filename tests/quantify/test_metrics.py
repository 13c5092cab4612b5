"""MBWU arithmetic and the seeds' derived figures (thesis §3.1.3, seed 002 §3.2)."""

import pytest

from colony.errors import InvalidParameter, SpecFileError
from colony.quantify import metrics


def test_arithmetic_check_host_mbwus_from_published_peak():
    # 43,522.5 ops/s on the host / 7,314.7 ops/s per MBWU = 5.95 MBWUs (integrated landscape)
    assert round(metrics.platform_mbwus(43522.5, 7314.7), 2) == 5.95


def test_arithmetic_check_cost_ratio_computed_backwards_from_57_86pct_gives_64pct():
    r = metrics.implied_cost_ratio(0.5786, host_mbwus=5.2, embedded_mbwus=0.37)
    assert r == pytest.approx(0.029985, abs=1e-5)
    # same platforms (same prices), integrated MBWUs 5.95 vs 0.5 -> $/MBWU benefit 64%
    integrated = metrics.benefit(r / 0.5, 1 / 5.95)
    assert round(integrated * 100) == 64


def test_arithmetic_check_64pct_brackets_57_86pct():
    # 64% is rounded to a whole percent: every ratio it allows must bracket 57.86% in the network landscape
    lo = 1 - metrics.implied_cost_ratio(0.635, 5.95, 0.5) * 5.2 / 0.37
    hi = 1 - metrics.implied_cost_ratio(0.645, 5.95, 0.5) * 5.2 / 0.37
    assert lo < 0.5786 < hi


def test_compare_with_specs(tmp_path):
    spec = tmp_path / "p.toml"
    spec.write_text("""
[platform.host]
cost_usd = 10000
watts = 400
volume_m3 = 0.05
[platform.sbc]
cost_usd = 300
watts = 20
volume_m3 = 0.001
role = "embedded"
""")
    specs = metrics.load_specs(spec)
    res = metrics.compare(specs["host"], 5.95, specs["sbc"], 0.5)
    assert res["host"]["usd_per_mbwu"] == pytest.approx(10000 / 5.95)
    assert res["embedded"]["kw_per_mbwu"] == pytest.approx(0.02 / 0.5)
    assert res["benefit"]["usd"] == pytest.approx(1 - (300 / 0.5) / (10000 / 5.95))
    assert res["benefit"]["m3"] == pytest.approx(1 - (0.001 / 0.5) / (0.05 / 5.95))


def test_arithmetic_check_spec_implied_from_network_benefits_gives_them_back():
    from pathlib import Path
    specs = metrics.load_specs(Path(metrics.__file__).with_name("specs") / "seed_network_implied.toml")
    res = metrics.compare(specs["host"], 5.2, specs["embedded"], 0.37)
    assert res["benefit"]["usd"] == pytest.approx(0.5786, abs=5e-5)
    assert res["benefit"]["kw"] == pytest.approx(0.459, abs=5e-4)
    assert res["benefit"]["m3"] == pytest.approx(0.797, abs=5e-4)


@pytest.mark.parametrize("text, msg", [
    ("[platform.a]\ncost_usd = 1\nwatts = 1\n", "volume_m3"),
    ("not toml = = 1", "not valid TOML"),
    ("[other]\nx = 1\n", r"no \[platform\.NAME\]"),
    ("[platform.a]\ncost_usd = -1\nwatts = 1\nvolume_m3 = 1\n", "positive"),
])
def test_bad_spec_files(tmp_path, text, msg):
    p = tmp_path / "s.toml"
    p.write_text(text)
    with pytest.raises(SpecFileError, match=msg):
        metrics.load_specs(p)


def test_missing_spec_file(tmp_path):
    with pytest.raises(SpecFileError, match="not found"):
        metrics.load_specs(tmp_path / "nope.toml")


def test_invalid_numbers():
    with pytest.raises(InvalidParameter):
        metrics.platform_mbwus(100, 0)
    with pytest.raises(InvalidParameter):
        metrics.benefit(-1, 2)
    with pytest.raises(InvalidParameter):
        metrics.implied_cost_ratio(1.2, 5, 1)
