"""MBWU arithmetic: platform MBWUs, $/MBWU, kW/MBWU, m³/MBWU and the offload benefit.

An MBWU (media-based work unit) is the peak workload ops/s that ONE storage medium
sustains for a given workload with caching effects removed (seed 002 §2.2). A
platform's MBWUs are its peak ops/s divided by that unit; efficiency metrics divide
the platform's cost, power and volume by its MBWUs; the benefit of offloading is
1 − embedded/host for any of them (seed 002 §3.2, thesis §3.1.3).
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import asdict, dataclass, field
from pathlib import Path

from colony.errors import InvalidParameter, SpecFileError

#: Published reference numbers (thesis §3.1.3, seed 002 §3.2). 43,522.5 ops/s is the
#: host peak the thesis implies: 5.95 MBWUs x 7,314.7 ops/s.
SEED_MBWU_OPS = 7314.7
SEED_HOST_PEAK_OPS = 43522.5
SEED_MBWUS = {
    "integrated": {"host": 5.95, "embedded": 0.5, "cost_benefit": 0.64, "power_benefit": 0.396},
    "network": {"host": 5.2, "embedded": 0.37, "cost_benefit": 0.5786, "power_benefit": 0.459},
    "disaggregated": {"host": 3.28, "embedded": 0.37, "cost_benefit": 0.734, "power_benefit": 0.707},
}


def _positive(name: str, value: float) -> float:
    if not isinstance(value, (int, float)) or math.isnan(value) or value <= 0:
        raise InvalidParameter(f"{name} must be a positive number, got {value!r}")
    return float(value)


def platform_mbwus(peak_ops: float, mbwu_ops: float) -> float:
    """Platform MBWUs = platform peak ops/s ÷ one MBWU (ops/s)."""
    return _positive("peak_ops", peak_ops) / _positive("mbwu_ops", mbwu_ops)


def benefit(embedded: float, host: float) -> float:
    """Fractional saving of the embedded platform on a cost-like metric: 1 − embedded/host."""
    return 1.0 - _positive("embedded metric", embedded) / _positive("host metric", host)


def implied_cost_ratio(benefit_value: float, host_mbwus: float, embedded_mbwus: float) -> float:
    """Embedded/host platform cost ratio implied by a published $/MBWU benefit.

    From b = 1 − (C_e/M_e)/(C_h/M_h):  C_e/C_h = (1 − b)·M_e/M_h. The seeds print the
    benefits and MBWUs but not the platform prices, so this recovers the input.
    """
    if not 0 <= benefit_value < 1:
        raise InvalidParameter(f"benefit must be in [0, 1), got {benefit_value}")
    return (1.0 - benefit_value) * _positive("embedded_mbwus", embedded_mbwus) / _positive("host_mbwus", host_mbwus)


@dataclass
class PlatformSpec:
    """What a platform costs, draws and occupies (the inputs of the efficiency metrics)."""

    name: str
    cost_usd: float
    watts: float
    volume_m3: float
    role: str = "host"          # host | embedded
    notes: str = ""
    extra: dict = field(default_factory=dict)

    def efficiency(self, mbwus: float) -> dict:
        """$/MBWU, kW/MBWU and m³/MBWU of this platform at `mbwus` platform MBWUs."""
        m = _positive("mbwus", mbwus)
        return {"usd_per_mbwu": self.cost_usd / m, "kw_per_mbwu": self.watts / 1000.0 / m,
                "m3_per_mbwu": self.volume_m3 / m}


def compare(host: PlatformSpec, host_mbwus: float, embedded: PlatformSpec, embedded_mbwus: float) -> dict:
    """Efficiency of both platforms and the benefit (1 − embedded/host) on each metric."""
    h, e = host.efficiency(host_mbwus), embedded.efficiency(embedded_mbwus)
    return {
        "host": {"name": host.name, "mbwus": host_mbwus, **h},
        "embedded": {"name": embedded.name, "mbwus": embedded_mbwus, **e},
        "benefit": {k.replace("_per_mbwu", ""): benefit(e[k], h[k]) for k in h},
    }


def load_specs(path: str | Path) -> dict[str, PlatformSpec]:
    """Read a platform spec TOML: one `[platform.NAME]` table per platform with
    `cost_usd`, `watts`, `volume_m3` (and optional `role`, `notes`)."""
    p = Path(path)
    if not p.is_file():
        raise SpecFileError(f"platform spec file {p} not found; write a TOML file with [platform.NAME] tables "
                            "holding cost_usd, watts and volume_m3 (see docs/quantify.md)")
    try:
        doc = tomllib.loads(p.read_text())
    except tomllib.TOMLDecodeError as e:
        raise SpecFileError(f"platform spec file {p} is not valid TOML: {e}") from e
    plats = doc.get("platform")
    if not isinstance(plats, dict) or not plats:
        raise SpecFileError(f"{p} has no [platform.NAME] tables; add at least one")
    out = {}
    for name, t in plats.items():
        missing = [k for k in ("cost_usd", "watts", "volume_m3") if k not in t]
        if missing:
            raise SpecFileError(f"platform {name!r} in {p} lacks {missing}; add them (USD, W, m³)")
        try:
            spec = PlatformSpec(name=name, cost_usd=_positive(f"{name}.cost_usd", t["cost_usd"]),
                                watts=_positive(f"{name}.watts", t["watts"]),
                                volume_m3=_positive(f"{name}.volume_m3", t["volume_m3"]),
                                role=str(t.get("role", "host")), notes=str(t.get("notes", "")),
                                extra={k: v for k, v in t.items()
                                       if k not in ("cost_usd", "watts", "volume_m3", "role", "notes")})
        except InvalidParameter as e:
            raise SpecFileError(f"{p}: {e}") from e
        out[name] = spec
    return out


def spec_dict(spec: PlatformSpec) -> dict:
    return asdict(spec)
