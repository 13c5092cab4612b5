"""Glinda procurement and power arithmetic (seed 001, ch. 10)."""

import pytest

from colony.errors import InvalidParameter
from colony.quantify import costpower as cp


def test_glinda_node_totals_and_ratios():
    s = cp.glinda_procurement().summary()
    assert s["plain_node_usd"] == 18340
    assert s["smartnic_node_usd"] == 19490
    assert round(s["card_price_ratio"], 2) == 2.35          # "2.35x more expensive than the InfiniBand card"
    assert round(s["node_cost_increase"] * 100) == 6        # "only increases the node cost by 6%"
    assert round(s["share"]["Ampere A100"]["plain"] * 100) == 51
    assert round(s["share"]["BlueField-2 VPI NIC"]["smartnic"] * 100) == 10


def test_arithmetic_check_yearly_power_costs_of_the_seed():
    p = cp.smartnic_power_costs()
    assert round(p["idle"]["per_node_usd"], 2) == 23.20       # 0.03072 kW x 0.0862 $/kWh x 8760 h
    assert round(p["active"]["per_node_usd"], 2) == 31.90
    assert round(p["active"]["cluster_usd"]) == 4019         # 126 nodes
    # seed prints $2,922 (126 x 23.1975 = 2922.9, truncated)
    assert int(p["idle"]["cluster_usd"]) == 2922
    # cooling doubles: the seed's "roughly $6,000 to $8,000"
    assert 5800 < p["idle"]["cluster_with_cooling_usd"] < 6000
    assert 8000 < p["active"]["cluster_with_cooling_usd"] < 8100


def test_energy_formula_and_validation():
    assert cp.yearly_energy_cost(1000, 0.1) == pytest.approx(876.0)
    assert cp.yearly_energy_cost(1000, 0.1, nodes=2, cooling=True) == pytest.approx(4 * 876.0)
    with pytest.raises(InvalidParameter):
        cp.yearly_energy_cost(-5)
    with pytest.raises(InvalidParameter):
        cp.yearly_energy_cost(5, nodes=0)


def test_usd_per_mbwu_with_tco():
    assert cp.usd_per_mbwu(1000, 100, 2.0) == pytest.approx(500)
    five_years = cp.usd_per_mbwu(1000, 100, 2.0, years=5, usd_per_kwh=0.1)
    assert five_years == pytest.approx((1000 + 5 * 87.6) / 2)
    with pytest.raises(InvalidParameter):
        cp.usd_per_mbwu(1000, 100, 0)


def test_procurement_needs_priced_nics():
    with pytest.raises(InvalidParameter, match="priced"):
        cp.Procurement({"x": (1, 1)}).summary()
