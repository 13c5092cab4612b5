"""Procurement and power calculators with the Glinda numbers (seed 001, ch. 10) as defaults.

Why: a SmartNIC raises node cost and power; whether that pays depends on what it
replaces. These functions make the seeds' arithmetic reusable with other prices and
tie it to $/MBWU (total cost of ownership over a lifetime ÷ MBWUs).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from colony.errors import InvalidParameter

HOURS_PER_YEAR = 8760

#: Table 10-1 of seed 001: estimated 2020 discounted cost of a Glinda node, USD.
GLINDA_COMPONENTS: dict[str, tuple[float, float]] = {
    # component: (InfiniBand node, BlueField-2 node)
    "Chassis and Motherboard": (2300, 2300),
    "32-Core Zen3 Processor": (2400, 2400),
    "512GB DDR4 DRAM": (2400, 2400),
    "NVMe": (200, 200),
    "25Gb/s Ethernet NIC": (300, 300),
    "Ampere A100": (9400, 9400),
    "InfiniBand NIC": (850, 0),
    "BlueField-2 VPI NIC": (0, 2000),
    "100Gb/s Cable (Copper)": (120, 120),
    "Single IB Switch Port": (370, 370),
}
#: Seed 001 §10.2: BlueField-2 power measured through the front-slot 12 V sensor.
BF2_IDLE_W = 30.72
BF2_ACTIVE_W = 42.24
#: Sandia California data centre, 2023 (and the forecast), USD per kWh.
PRICE_2023_USD_PER_KWH = 0.0862
PRICE_FORECAST_USD_PER_KWH = 0.1061
GLINDA_NODES = 126
#: §10.1.2: extra network hardware for one more node ($250 port + $120 half splitter + $120 cable).
EXTRA_NODE_NETWORK_USD = 490


def _nonneg(name: str, v: float) -> float:
    if not isinstance(v, (int, float)) or math.isnan(v) or v < 0:
        raise InvalidParameter(f"{name} must be a number >= 0, got {v!r}")
    return float(v)


@dataclass
class Procurement:
    """Per-node bill of materials for the two NIC choices."""

    components: dict[str, tuple[float, float]]

    def totals(self) -> tuple[float, float]:
        return (sum(a for a, _ in self.components.values()), sum(b for _, b in self.components.values()))

    def summary(self, plain_nic: str = "InfiniBand NIC", smart_nic: str = "BlueField-2 VPI NIC") -> dict:
        """Node totals, each component's share, the card price ratio and the node-cost increase."""
        plain, smart = self.totals()
        if plain <= 0 or smart <= 0:
            raise InvalidParameter("node totals must be positive; check the component prices")
        try:
            card_ratio = self.components[smart_nic][1] / self.components[plain_nic][0]
        except (KeyError, ZeroDivisionError):
            raise InvalidParameter(f"components need a priced {plain_nic!r} (plain column) and "
                                   f"{smart_nic!r} (smart column)") from None
        return {
            "plain_node_usd": plain, "smartnic_node_usd": smart,
            "card_price_ratio": card_ratio,
            "node_cost_increase": smart / plain - 1.0,
            "share": {k: {"plain": a / plain, "smartnic": b / smart} for k, (a, b) in self.components.items()},
        }


def glinda_procurement() -> Procurement:
    return Procurement(dict(GLINDA_COMPONENTS))


def yearly_energy_cost(watts: float, usd_per_kwh: float = PRICE_2023_USD_PER_KWH, nodes: int = 1,
                       cooling: bool = False) -> float:
    """kW × $/kWh × 8760 h × nodes; doubled when `cooling` (air cooling ≈ the IT power cost, seed 001 §10.2.5)."""
    _nonneg("watts", watts)
    _nonneg("usd_per_kwh", usd_per_kwh)
    if not isinstance(nodes, int) or nodes < 1:
        raise InvalidParameter(f"nodes must be an integer >= 1, got {nodes!r}")
    return watts / 1000.0 * usd_per_kwh * HOURS_PER_YEAR * nodes * (2.0 if cooling else 1.0)


def smartnic_power_costs(nodes: int = GLINDA_NODES, usd_per_kwh: float = PRICE_2023_USD_PER_KWH,
                         idle_w: float = BF2_IDLE_W, active_w: float = BF2_ACTIVE_W) -> dict:
    """Worst (idle, never used) and best (always active) yearly power cost of the cards, ± cooling."""
    out = {}
    for label, w in (("idle", idle_w), ("active", active_w)):
        out[label] = {
            "watts": w,
            "per_node_usd": yearly_energy_cost(w, usd_per_kwh),
            "cluster_usd": yearly_energy_cost(w, usd_per_kwh, nodes),
            "cluster_with_cooling_usd": yearly_energy_cost(w, usd_per_kwh, nodes, cooling=True),
        }
    return {"nodes": nodes, "usd_per_kwh": usd_per_kwh, **out}


def tco(capex_usd: float, watts: float, years: float, usd_per_kwh: float = PRICE_2023_USD_PER_KWH,
        cooling: bool = False) -> float:
    """Total cost of ownership: purchase price + `years` of energy (optionally with cooling)."""
    _nonneg("capex_usd", capex_usd)
    _nonneg("years", years)
    return capex_usd + years * yearly_energy_cost(watts, usd_per_kwh, cooling=cooling)


def usd_per_mbwu(capex_usd: float, watts: float, mbwus: float, years: float = 0.0,
                 usd_per_kwh: float = PRICE_2023_USD_PER_KWH, cooling: bool = False) -> float:
    """$/MBWU with the purchase price alone (years=0) or a TCO that adds `years` of energy."""
    if not isinstance(mbwus, (int, float)) or mbwus <= 0:
        raise InvalidParameter(f"mbwus must be > 0, got {mbwus!r}")
    return tco(capex_usd, watts, years, usd_per_kwh, cooling) / mbwus
