"""One offload verdict from the toolkit's pieces (seed 001 ch. 9-10, thesis §3.1-3.2).

Question: does moving a node's storage/data-service daemon from the host's cores to a
SmartNIC pay, per unit of the host job's work? The model:

- Work. A node does 1 unit of job work per unit time alone; ``1/(1+s_host)`` with the
  daemon on its cores (the interference slowdown), ``1/(1+s_device)`` with the daemon
  offloaded. Host cycles saved = the node-time the job gets back,
  ``1 - (1+s_device)/(1+s_host)``, and node-equivalents = nodes x that fraction.
- Feasibility. The daemon needs ``daemon_host_cores`` host cores; the device offers
  ``device_cores x device_core_speed`` host-core equivalents (characterization ranks).
  Above 100% device utilization the service itself would slow down: the verdict says no.
- Cost, power, space per unit of work. TCO per node = price + years x watts x $/kWh x
  cooling; plain node: TCO_p x (1+s_host); SmartNIC node: (TCO_p + card extra + card
  energy) x (1+s_device); likewise watts and m³. The benefit is 1 - smart/plain.
- Storage efficiency (MBWUs) and the availability model are reported beside the verdict:
  they answer another question (storage on embedded platforms), so they do not enter it.

Every input carries its source: "measured here" (a JSON this toolkit wrote), "given" (an
assumption of the spec file) or "seed" (a number printed in the seeds). Sensitivity: each
verdict input is swept over its range with the others fixed; where the $ benefit crosses
zero (or the device stops coping), the verdict flips, and the report says at which value.
"""

from __future__ import annotations

import json
import math
import tomllib
from dataclasses import dataclass, field
from importlib import resources as _resources
from pathlib import Path
from typing import Any

import numpy as np

from colony.errors import SpecFileError
from colony.quantify.costpower import HOURS_PER_YEAR

SEED_SPEC = "seed_offload.toml"
#: inputs the verdict depends on (swept for sensitivity); the others are reported only
VERDICT_INPUTS = ("nodes", "host_cores", "daemon_host_cores", "slowdown_host", "slowdown_device", "device_cores",
                  "device_core_speed", "plain_node_usd", "smartnic_extra_usd", "node_watts", "smartnic_watts",
                  "usd_per_kwh", "cooling_factor", "years", "node_volume_m3", "smartnic_volume_m3")
REPORTED_INPUTS = ("host_mbwus", "embedded_mbwus", "availability_benefit")


@dataclass
class Input:
    name: str
    value: float | None
    unit: str
    source: str                    # "measured here (...)", "given", "seed"
    note: str = ""
    range: tuple[float, float] | None = None
    refused: str | None = None     # e.g. the MBWU refusal: why no value could be measured

    def as_dict(self) -> dict:
        return {"value": self.value, "unit": self.unit, "source": self.source, "note": self.note,
                "range": list(self.range) if self.range else None, "refused": self.refused}


@dataclass
class Spec:
    name: str
    service: str
    inputs: dict[str, Input] = field(default_factory=dict)
    path: str = ""

    def values(self) -> dict[str, float]:
        return {k: i.value for k, i in self.inputs.items() if i.value is not None}


def load_spec(path: str | Path | None = None) -> Spec:
    """A platform spec (TOML); None or "seed" = the seeds' own inputs shipped with Colony."""
    if path in (None, "seed"):
        text = _resources.files("colony.quantify.specs").joinpath(SEED_SPEC).read_text()
        where = f"colony/quantify/specs/{SEED_SPEC}"
    else:
        try:
            text = Path(path).read_text()
        except OSError as e:
            raise SpecFileError(f"cannot read platform spec {path}: {e}; pass a TOML file or 'seed'") from e
        where = str(path)
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise SpecFileError(f"{where} is not valid TOML: {e}") from e
    plat = doc.get("platform", {})
    spec = Spec(name=plat.get("name", where), service=plat.get("service", ""), path=where)
    for name, d in doc.get("inputs", {}).items():
        if "value" not in d:
            raise SpecFileError(f"{where}: inputs.{name} has no 'value'; add value = <number>")
        rng = d.get("range")
        spec.inputs[name] = Input(name, float(d["value"]), d.get("unit", ""), d.get("source", "given"),
                                  d.get("note", ""), tuple(rng) if rng else None)
    missing = [k for k in VERDICT_INPUTS if k not in spec.inputs]
    if missing:
        raise SpecFileError(f"{where} lacks inputs {missing}; copy them from the shipped seed spec "
                            f"(colony offload report --platform seed --json -) and edit")
    return spec


# -- measured inputs --------------------------------------------------------------------------------
def _read(path: str | Path) -> dict:
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError) as e:
        raise SpecFileError(f"cannot read results file {path}: {e}; run the benchmark that writes it") from e


def apply_interference(spec: Spec, path: str | Path, service: str = "ckpt", without_others: bool = False) -> None:
    """Slowdowns and daemon CPU from ``colony bench interference`` (median over its repeats);
    ``without_others``: the slowdowns less other processes' CPU on the host cores (a shared machine)."""
    d = _read(path)
    try:
        host, dev = d["cases"][f"{service}-host"], d["cases"][f"{service}-device"]
        cores = d["core_split"]["host_job_cores"]
    except KeyError as e:
        raise SpecFileError(f"{path} has no '{service}-host'/'{service}-device' case ({e}); run "
                            f"`colony bench interference --services {service}`") from None
    key = "slowdown_without_others" if without_others else "slowdown_vs_alone"
    if key not in host:
        raise SpecFileError(f"{path} has no {key}; rerun `colony bench interference`")
    src = (f"measured here ({path}, {service}, median of {host[key]['n']}"
           + (", without other processes' CPU on the host cores)" if without_others else ")"))
    m = d.get("machine", {})
    where = f"{m.get('cpu_model', '?')}, {m.get('cores_logical', '?')} cores, loadavg {m.get('loadavg_1m_5m_15m_at_start')}"
    sh, sd = host[key], dev[key]
    spec.inputs["slowdown_host"] = replace_value(spec.inputs["slowdown_host"], max(0.0, sh["median"]), src,
                                                 f"spread {sh['min']:.3f}..{sh['max']:.3f}; {where}")
    spec.inputs["slowdown_device"] = replace_value(spec.inputs["slowdown_device"], max(0.0, sd["median"]), src,
                                                   f"spread {sd['min']:.3f}..{sd['max']:.3f}; {where}")
    share = host["daemon_cpu_share_of_host_cores"]["median"]
    spec.inputs["daemon_host_cores"] = replace_value(
        spec.inputs["daemon_host_cores"], share * len(cores), src,
        f"the daemon's CPU seconds / job wall time on the host core(s) here ({share:.1%} of {len(cores)})")
    spec.inputs["host_cores"] = replace_value(spec.inputs["host_cores"], len(cores), src,
                                              f"the host job's cores in the benchmark ({cores})")


def apply_mbwu(spec: Spec, path: str | Path) -> None:
    """The measured MBWU, or its refusal (then the MBWU inputs stay as given and say why)."""
    d = _read(path)
    s = d.get("summary", d)
    src = f"measured here ({path})"
    if s.get("mbwu_ops_per_s"):
        i = spec.inputs["host_mbwus"]
        peak = s.get("thread_sweep_peak_ops_per_s") or s["mbwu_ops_per_s"]
        spec.inputs["host_mbwus"] = replace_value(i, peak / s["mbwu_ops_per_s"], src, "platform peak / one MBWU")
    else:
        for k in ("host_mbwus", "embedded_mbwus"):
            spec.inputs[k].refused = f"{src}: {s.get('mbwu_refused', 'no MBWU in the file')}"


def apply_availability(spec: Spec, path: str | Path, key: str = "hdd_n4") -> None:
    d = _read(path)
    try:
        v = d["summary"]["relative_benefit_m10"][key]
    except KeyError:
        raise SpecFileError(f"{path} has no summary.relative_benefit_m10.{key}; run `colony bench availability`") \
            from None
    spec.inputs["availability_benefit"] = replace_value(spec.inputs["availability_benefit"], v,
                                                        f"measured here ({path}, eq. 3.12, m=10, {key})",
                                                        "computed by the availability model")


def apply_characterization(spec: Spec, device_path: str | Path, host_path: str | Path) -> None:
    """Device core speed from two `colony characterize` runs: geomean of stress-ng ratios device/host,
    per core (each run's instances = its cores)."""
    dev, host = _read(device_path), _read(host_path)
    try:
        a, b = dev["summary"]["stress_ng_bogo_ops_per_s"], host["summary"]["stress_ng_bogo_ops_per_s"]
        ia, ib = dev["stress_ng"]["instances"], host["stress_ng"]["instances"]
    except KeyError as e:
        raise SpecFileError(f"characterization files lack {e}; run `colony characterize` on both") from None
    common = [k for k in a if k in b and a[k] and b[k]]
    if not common:
        raise SpecFileError("the two characterizations share no stress-ng stressor")
    ratio = float(np.exp(np.mean([math.log((a[k] / ia) / (b[k] / ib)) for k in common])))
    spec.inputs["device_core_speed"] = replace_value(spec.inputs["device_core_speed"], ratio,
                                                     f"measured here ({device_path} vs {host_path})",
                                                     f"geomean of {len(common)} stress-ng ratios per instance")


def replace_value(i: Input, value: float, source: str, note: str) -> Input:
    return Input(i.name, float(value), i.unit, source, note, i.range)


# -- the model --------------------------------------------------------------------------------------
def evaluate(v: dict[str, float]) -> dict[str, Any]:
    """Every derived figure for one set of input values."""
    sh, sd = v["slowdown_host"], v["slowdown_device"]
    saved = 1 - (1 + sd) / (1 + sh)                          # node-time the job gets back
    util = v["daemon_host_cores"] / (v["device_cores"] * v["device_core_speed"])
    energy = v["years"] * HOURS_PER_YEAR / 1000 * v["usd_per_kwh"] * v["cooling_factor"]   # $ per W over life
    tco_plain = v["plain_node_usd"] + v["node_watts"] * energy
    tco_smart = tco_plain + v["smartnic_extra_usd"] + v["smartnic_watts"] * energy
    per_work = {
        "usd": (tco_plain * (1 + sh), tco_smart * (1 + sd)),
        "kw": (v["node_watts"] / 1000 * (1 + sh), (v["node_watts"] + v["smartnic_watts"]) / 1000 * (1 + sd)),
        "m3": (v["node_volume_m3"] * (1 + sh), (v["node_volume_m3"] + v["smartnic_volume_m3"]) * (1 + sd)),
    }
    benefit = {k: 1 - s / p for k, (p, s) in per_work.items()}
    pays = benefit["usd"] > 0 and util <= 1.0
    why = []
    why.append(f"$ per unit of work {'falls' if benefit['usd'] > 0 else 'rises'} by {abs(benefit['usd']):.1%}")
    why.append(f"the device {'can' if util <= 1 else 'cannot'} carry the daemon ({util:.0%} of its cores)")
    return {
        "pays": pays, "why": "; ".join(why),
        "host_cycles_saved_fraction": saved,
        "host_cores_freed_per_node": v["host_cores"] * saved,
        "daemon_cores_moved_per_node": v["daemon_host_cores"],
        "node_equivalents": v["nodes"] * saved,
        "device_utilization": util,
        "tco_plain_node_usd": tco_plain, "tco_smartnic_node_usd": tco_smart,
        "per_unit_of_work": {k: {"plain": p, "smartnic": s} for k, (p, s) in per_work.items()},
        "benefit": benefit,
    }


def _margin(v: dict[str, float]) -> float:
    """Signed distance from the flip: > 0 pays, < 0 does not (the $ benefit, capped by feasibility)."""
    r = evaluate(v)
    return min(r["benefit"]["usd"], 1.0 - r["device_utilization"])


def sensitivity(spec: Spec, name: str, points: int = 61) -> dict:
    """Sweep one input over its range; the $ benefit along it and where the verdict flips."""
    base = spec.values()
    i = spec.inputs[name]
    lo, hi = i.range or (i.value * 0.25, i.value * 4 if i.value else 1.0)
    lo, hi = min(lo, i.value), max(hi, i.value)
    xs = np.linspace(lo, hi, points)
    ben, util, marg = [], [], []
    for x in xs:
        r = evaluate({**base, name: float(x)})
        ben.append(r["benefit"]["usd"])
        util.append(r["device_utilization"])
        marg.append(min(r["benefit"]["usd"], 1.0 - r["device_utilization"]))
    flips = []
    for k in range(points - 1):
        if (marg[k] > 0) != (marg[k + 1] > 0):
            a, b = float(xs[k]), float(xs[k + 1])
            for _ in range(40):                                  # bisection on the margin
                mid = (a + b) / 2
                if (_margin({**base, name: a}) > 0) == (_margin({**base, name: mid}) > 0):
                    a = mid
                else:
                    b = mid
            flips.append((a + b) / 2)
    return {"input": name, "value": i.value, "unit": i.unit, "x": xs.tolist(), "benefit_usd": ben,
            "device_utilization": util, "pays": [m > 0 for m in marg], "flips_at": flips}


def report(spec: Spec) -> dict:
    """The verdict, its figures, every input with its source, and the sensitivity of each input."""
    values = spec.values()
    result = evaluate(values)
    sens = {n: sensitivity(spec, n) for n in VERDICT_INPUTS}
    flippers = {n: s["flips_at"] for n, s in sens.items() if s["flips_at"]}
    mb = spec.inputs.get("host_mbwus"), spec.inputs.get("embedded_mbwus")
    storage = None
    if all(m is not None and m.value and not m.refused for m in mb):
        storage = {"host_mbwus": mb[0].value, "embedded_mbwus": mb[1].value,
                   "note": "storage on embedded platforms (thesis 3.1): see `colony mbwu efficiency` for $/MBWU"}
    else:
        storage = {"refused": next((m.refused for m in mb if m is not None and m.refused), "not given")}
    av = spec.inputs.get("availability_benefit")
    return {
        "platform": spec.name, "service": spec.service, "spec": spec.path,
        "verdict": "offload pays" if result["pays"] else "offload does not pay",
        "why": result["why"],
        "figures": result,
        "inputs": {n: i.as_dict() for n, i in spec.inputs.items()},
        "sources": {src: sorted(n for n, i in spec.inputs.items() if _kind(i.source) == src)
                    for src in ("measured here", "given", "seed")},
        "flips": {n: [round(x, 6) for x in xs] for n, xs in flippers.items()},
        "stable_over_range": sorted(n for n in VERDICT_INPUTS if n not in flippers),
        "storage_mbwu": storage,
        "availability_benefit": {"value": av.value, "source": av.source, "note": av.note} if av else None,
        "sensitivity": sens,
    }


def _kind(source: str) -> str:
    return "measured here" if source.startswith("measured") else ("seed" if source.startswith("seed") else "given")


def write_html(rep: dict, out_dir: str | Path) -> Path:
    """index.html + one sensitivity plot per verdict input (matplotlib, colony.report)."""
    import matplotlib.pyplot as plt

    from colony.report import Report
    r = Report(out_dir, f"Offload verdict: {rep['platform']}")
    f = rep["figures"]
    r.section("Verdict", f"{rep['verdict'].upper()} for {rep['service']}: {rep['why']}.")
    r.table(["figure", "value"], [
        ("host cycles saved (fraction of node-time)", f["host_cycles_saved_fraction"]),
        ("host cores freed per node", f["host_cores_freed_per_node"]),
        ("daemon cores moved to the device per node", f["daemon_cores_moved_per_node"]),
        ("node-equivalents over the platform", f["node_equivalents"]),
        ("device utilization by the daemon", f["device_utilization"]),
        ("$ per unit of work, plain / SmartNIC", f"{f['per_unit_of_work']['usd']['plain']:,.0f} / "
                                                 f"{f['per_unit_of_work']['usd']['smartnic']:,.0f}"),
        ("kW per unit of work, plain / SmartNIC", f"{f['per_unit_of_work']['kw']['plain']:.4f} / "
                                                  f"{f['per_unit_of_work']['kw']['smartnic']:.4f}"),
        ("m3 per unit of work, plain / SmartNIC", f"{f['per_unit_of_work']['m3']['plain']:.4f} / "
                                                  f"{f['per_unit_of_work']['m3']['smartnic']:.4f}"),
        ("benefit $ / kW / m3", " / ".join(f"{f['benefit'][k]:+.1%}" for k in ("usd", "kw", "m3"))),
        ("availability benefit (reported, not in the verdict)",
         rep["availability_benefit"]["value"] if rep["availability_benefit"] else "-"),
        ("storage MBWUs (reported, not in the verdict)",
         rep["storage_mbwu"].get("refused") or f"{rep['storage_mbwu']['host_mbwus']:.2f} host / "
                                               f"{rep['storage_mbwu']['embedded_mbwus']:.2f} embedded"),
    ])
    r.section("Inputs and their sources")
    r.table(["input", "value", "unit", "source", "note"],
            [(n, "refused" if i["refused"] else i["value"], i["unit"], i["source"], i["refused"] or i["note"])
             for n, i in rep["inputs"].items()])
    r.section("What would flip the verdict",
              "; ".join(f"{n} at {', '.join(f'{x:.4g}' for x in xs)} (now {rep['inputs'][n]['value']:.4g})"
                        for n, xs in rep["flips"].items()) or "no input flips it within its range")
    r.section("Sensitivity", "Each plot sweeps one input over its range with the others fixed: the $ benefit per "
                             "unit of work (line), the current value (dashed), where the verdict flips (dotted); "
                             "shaded where the device cannot carry the daemon.")
    for n, s in rep["sensitivity"].items():
        fig, ax = plt.subplots(figsize=(5.2, 3.0))
        x = np.asarray(s["x"])
        ax.plot(x, 100 * np.asarray(s["benefit_usd"]), color="tab:blue")
        ax.axhline(0, color="grey", lw=0.8)
        ax.axvline(s["value"], color="black", ls="--", lw=1, label="current")
        for fx in s["flips_at"]:
            ax.axvline(fx, color="tab:red", ls=":", lw=1.5, label=f"flips at {fx:.4g}")
        bad = np.asarray(s["device_utilization"]) > 1
        if bad.any():
            ax.fill_between(x, 0, 1, where=bad, transform=ax.get_xaxis_transform(), color="tab:red", alpha=0.1,
                            label="device overloaded")
        ax.set_xlabel(f"{n} [{s['unit']}]")
        ax.set_ylabel("$ benefit per unit of work (%)")
        ax.legend(fontsize=7)
        r.figure(fig, f"sensitivity_{n}", f"{n}: source {rep['inputs'][n]['source']}")
    return r.write()
