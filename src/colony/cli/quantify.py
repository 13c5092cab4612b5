"""CLI for the offload-benefit toolkit: `colony mbwu`, `colony availability`,
`colony characterize`, `colony cost`, and `colony bench mbwu|characterize`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import List, Optional

import typer
from rich.console import Console
from rich.table import Table

from colony.errors import InvalidParameter
from colony.quantify.characterize import DEFAULT_STRESSORS

console = Console()


def _write_json(path: Optional[Path], doc: dict) -> None:
    if path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(doc, indent=2, default=str))
        console.print(f"wrote {path}")


def _ints(text: str) -> list[int]:
    try:
        vals = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise InvalidParameter(f"expected comma-separated integers like 1,2,4,8, got {text!r}") from None
    if not vals:
        raise InvalidParameter("give at least one thread count")
    return vals


def _progress():
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
    return Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn(),
                    console=console, transient=True)


# ------------------------------------------------------------------ mbwu

mbwu_app = typer.Typer(no_args_is_help=True, help="Measure MBWUs (media-based work units) and platform efficiency.")


def _sweep_table(title: str, points: list[dict], extra: str | None = None) -> Table:
    t = Table(title=title)
    for c in ("threads", "devices", "ops/s", "CPU %", "device util %", "bottleneck") + ((extra,) if extra else ()):
        t.add_column(c, justify="right")
    for p in points:
        b = p["bottleneck"]
        row = [str(p["threads"]), str(p["devices"]), f"{p['ops_per_s']:.1f}", f"{p['utilization']['cpu_pct_mean']:.0f}",
               f"{b['device_util_pct']:.0f}", b["resource"]]
        if extra:
            row.append(f"{p.get('mbwus', 0):.3f}")
        t.add_row(*row)
    return t


def _addr(text: Optional[str]):
    if not text:
        return None
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit():
        raise InvalidParameter(f"--connect wants HOST:PORT, got {text!r}")
    return host, int(port)


def measure_mbwu(device: Path, workload: str, records: int, ops: int, threads: str, duration: float,
                 landscape: str, load_rate: float, watts: Optional[float], seed: int,
                 connect: Optional[str] = None, link_mib_s: Optional[float] = None) -> dict:
    """The thread sweep behind `colony mbwu measure` and `colony bench mbwu`."""
    from colony.quantify import mbwu as m
    from colony.machine import describe as machine_info
    from colony.quantify.ycsb import workload as wl
    w = wl(workload, recordcount=records, operationcount=ops)
    ths = _ints(threads)
    with _progress() as prog:
        task = prog.add_task(f"load {records:,} records, then {len(ths)} thread counts", total=len(ths) + 1)
        res = m.thread_sweep(device, w, ths, duration, landscape, load_rate=load_rate, watts=watts, seed=seed,
                             progress=lambda k, r: prog.advance(task), connect=_addr(connect),
                             link_mib_s=link_mib_s)
    res["machine"] = machine_info()
    return res


@mbwu_app.command("measure")
def mbwu_measure(
    device: Optional[Path] = typer.Option(None, help="directory on the storage device to measure (its DB is "
                                                      "recreated); not needed with --connect"),
    workload: str = typer.Option("a", help="YCSB core workload a-f"),
    records: int = typer.Option(20_000, help="records to load (x 4 KiB values)"),
    ops: int = typer.Option(0, help="operations per run (0 = run for --duration)"),
    threads: str = typer.Option("1,2,4,8,16,32", help="thread counts to sweep"),
    duration: float = typer.Option(5.0, help="seconds per run"),
    landscape: str = typer.Option("network", help="integrated | network | disaggregated"),
    load_rate: float = typer.Option(0.0, help="load-phase rate limit, ops/s (0 = unlimited)"),
    watts: Optional[float] = typer.Option(None, help="platform power when RAPL/IPMI are not readable"),
    seed: int = 0,
    connect: Optional[str] = typer.Option(None, help="HOST:PORT of a `colony mbwu serve` daemon on another machine"),
    link_mib_s: Optional[float] = typer.Option(None, help="NIC link rate in MiB/s, to detect a network bottleneck"),
    json_out: Optional[Path] = typer.Option(None, "--json"),
):
    """Find one MBWU: thread sweep on ONE device with caching minimized; refuse a platform-bound peak."""
    if device is None and not connect:
        raise InvalidParameter("give --device DIR (a directory on the medium) or --connect HOST:PORT")
    res = measure_mbwu(device, workload, records, ops, threads, duration, landscape, load_rate, watts, seed, connect,
                       link_mib_s)
    console.print(_sweep_table(f"thread sweep on {device or connect} ({landscape})", res["points"]))
    console.print(f"caching disabled: {', '.join(res['caching']['disabled'])}")
    console.print(f"left on: {'; '.join(res['caching']['left_on'])}")
    console.print(f"page cache: {res['page_cache']['how'] if res['page_cache'] else 'not dropped'}")
    if res["mbwu_ops"] is not None:
        console.print(f"[bold green]MBWU = {res['mbwu_ops']:.1f} ops/s[/] ({res['bottleneck']['why']})")
    else:
        console.print(f"[bold yellow]no MBWU:[/] {res['refused']}")
    _write_json(json_out, res)


@mbwu_app.command("platform")
def mbwu_platform(
    device: List[Path] = typer.Option(..., help="device directories, one per medium (repeat)"),
    mbwu: float = typer.Option(..., help="one MBWU in ops/s (from `colony mbwu measure`)"),
    threads: int = typer.Option(32, help="generator threads per device"),
    workload: str = "a", records: int = 20_000, duration: float = 5.0,
    landscape: str = "network", plateau: float = 0.05, watts: Optional[float] = None, seed: int = 0,
    json_out: Optional[Path] = typer.Option(None, "--json"),
):
    """Platform MBWUs: add devices until the total stops growing (normal caching)."""
    from colony.quantify import mbwu as m
    from colony.machine import describe as machine_info
    from colony.quantify.ycsb import workload as wl
    w = wl(workload, recordcount=records, operationcount=0)
    with _progress() as prog:
        task = prog.add_task("device sweep", total=len(device))
        res = m.device_sweep(device, w, threads, mbwu, duration, landscape, plateau, watts=watts, seed=seed,
                             progress=lambda k, r: prog.advance(task))
    res["machine"] = machine_info()
    console.print(_sweep_table("device sweep", res["points"], "MBWUs"))
    if res["device"]["warning"]:
        console.print(f"[yellow]{res['device']['warning']}[/]")
    console.print(f"platform MBWUs = {res['platform_mbwus']:.3f} ({res['plateau_note']})")
    _write_json(json_out, res)


@mbwu_app.command("serve")
def mbwu_serve(path: Path = typer.Option(...), host: str = "0.0.0.0", port: int = 7070,
               minimize_caching: bool = True, fresh: bool = True):
    """Run a RocksDB key-value daemon (protocol in docs/quantify.md) for a remote load generator."""
    from colony.quantify import kv
    console.print(f"serving RocksDB at {path} on {host}:{port} (Ctrl-C to stop)")
    kv.serve(str(path), host, port, minimize_caching, fresh)


@mbwu_app.command("efficiency")
def mbwu_efficiency(
    spec: Path = typer.Option(..., help="platform spec TOML ([platform.NAME] cost_usd, watts, volume_m3)"),
    host: str = typer.Option(..., help="name of the host platform in the spec"),
    host_mbwus: float = typer.Option(...),
    embedded: str = typer.Option(..., help="name of the embedded platform in the spec"),
    embedded_mbwus: float = typer.Option(...),
    json_out: Optional[Path] = typer.Option(None, "--json"),
):
    """$/MBWU, kW/MBWU, m³/MBWU of two platforms and the benefit 1 − embedded/host."""
    from colony.errors import SpecFileError
    from colony.quantify import metrics
    specs = metrics.load_specs(spec)
    for n in (host, embedded):
        if n not in specs:
            raise SpecFileError(f"platform {n!r} not in {spec}; it has {sorted(specs)}")
    res = metrics.compare(specs[host], host_mbwus, specs[embedded], embedded_mbwus)
    t = Table(title="MBWU-based efficiency")
    for c in ("platform", "MBWUs", "$/MBWU", "kW/MBWU", "m³/MBWU"):
        t.add_column(c, justify="right")
    for k in ("host", "embedded"):
        r = res[k]
        t.add_row(r["name"], f"{r['mbwus']:.3f}", f"{r['usd_per_mbwu']:.2f}", f"{r['kw_per_mbwu']:.5f}",
                  f"{r['m3_per_mbwu']:.6f}")
    b = res["benefit"]
    t.add_row("benefit", "", f"{b['usd']:.2%}", f"{b['kw']:.2%}", f"{b['m3']:.2%}")
    console.print(t)
    _write_json(json_out, res)


@mbwu_app.command("seeds")
def mbwu_seeds(json_out: Optional[Path] = typer.Option(None, "--json")):
    """Reproduce the seeds' derived MBWU figures from their inputs."""
    from colony.quantify import metrics
    mb = metrics.platform_mbwus(metrics.SEED_HOST_PEAK_OPS, metrics.SEED_MBWU_OPS)
    r = metrics.implied_cost_ratio(0.5786, 5.2, 0.37)
    integ = 1 - r * 5.95 / 0.5
    res = {"host_mbwus": mb, "implied_embedded_over_host_cost": r, "integrated_cost_benefit": integ,
           "network_cost_benefit": 1 - r * 5.2 / 0.37}
    t = Table(title="seed MBWU figures")
    t.add_column("quantity")
    t.add_column("value", justify="right")
    t.add_row("43,522.5 / 7,314.7 ops/s", f"{mb:.2f} MBWUs")
    t.add_row("embedded/host cost implied by 57.86% (network)", f"{r:.5f}")
    t.add_row("→ integrated $/MBWU benefit", f"{integ:.1%} (published 64%)")
    console.print(t)
    _write_json(json_out, res)


# ------------------------------------------------------------------ availability

av_app = typer.Typer(no_args_is_help=True, help="Data-availability model (thesis eqs 3.1–3.12).")


@av_app.command("benefit")
def av_benefit(m: int = typer.Option(..., help="servers (>= 3)"), n: int = typer.Option(..., help="devices per server (>= 2)"),
               c: int = typer.Option(..., help="embedded nodes per server (>= 1)"),
               f: float = typer.Option(..., help="R_d / R_m (HDD 2, SSD 0.06)"), w: int = 4,
               rm: float = typer.Option(0.01, help="expected server failures in the window"),
               json_out: Optional[Path] = typer.Option(None, "--json")):
    """Relative benefit P_loss(servers)/P_loss(embedded), eq. 3.12, with its terms."""
    from colony.quantify import availability as a
    p = a.validate(m, n, c, f, w, rm)
    gp, es = a.terms_gp(p), a.terms_es(p)
    t = Table(title=f"m={m} n={n} c={c} (m'={p.m_prime}) f={f} w={w} R_m={rm}")
    for col in ("term", "servers", "embedded"):
        t.add_column(col, justify="right")
    for k in gp:
        t.add_row(k, f"{gp[k]:.4e}", f"{es[k]:.4e}")
    rb = sum(gp.values()) / sum(es.values())
    t.add_row("relative benefit", f"{rb:.3f}", "")
    console.print(t)
    _write_json(json_out, {"params": p.__dict__, "terms_gp": gp, "terms_es": es, "relative_benefit": rb})


@av_app.command("sweep")
def av_sweep(out: Path = typer.Option(Path("bench/results/availability"), help="directory for PNGs"),
             rm: float = 0.01, w: int = 4, json_out: Optional[Path] = typer.Option(None, "--json")):
    """Figures 3.13–3.18 as PNGs, plus where the seeds' 7.1 and 20.7 fall."""
    from colony.quantify import availability as a
    figs = a.figures_data(w=w, rm=rm)
    paths = a.plot_figures(figs, out)
    claims = a.seed_claims(rm=rm, w=w)
    for p in paths:
        console.print(f"wrote {p}")
    console.print(f"HDD n=4 nearest 7.1: m={claims['hdd_7.1']['m']} → {claims['hdd_7.1']['value']:.2f}; "
                  f"SSD n=4 nearest 20.7: m={claims['ssd_20.7']['m']} → {claims['ssd_20.7']['value']:.2f}")
    _write_json(json_out, {"figures": figs, "seed_claims": claims, "plots": paths})


@av_app.command("simulate")
def av_simulate(m: int = 6, n: int = 2, c: int = 2, f: float = 1.0, w: int = 4, rm: float = 0.5,
                trials: int = 200_000, seed: int = 0, json_out: Optional[Path] = typer.Option(None, "--json")):
    """Monte Carlo of the same failure model; checks the closed form within a 99% CI."""
    from colony.quantify import availability as a
    r = a.monte_carlo(m, n, c, f, w, rm, trials, seed)
    t = Table(title=f"Monte Carlo, {trials:,} trials, seed {seed}")
    for col in ("system", "closed form", "simulated", "99% CI", "agrees"):
        t.add_column(col, justify="right")
    t.add_row("servers", f"{r.closed_form_gp:.5f}", f"{r.mc_gp:.5f}", f"[{r.mc_gp_ci[0]:.5f}, {r.mc_gp_ci[1]:.5f}]",
              str(r.gp_agrees))
    t.add_row("embedded", f"{r.closed_form_es:.5f}", f"{r.mc_es:.5f}", f"[{r.mc_es_ci[0]:.5f}, {r.mc_es_ci[1]:.5f}]",
              str(r.es_agrees))
    console.print(t)
    _write_json(json_out, r.as_dict())


# ------------------------------------------------------------------ characterize

def characterize_machine(stressors: list[str], timeout: float, arrow_rows: int, kv_iterations: int,
                         label: str | None = None) -> dict:
    from colony.quantify import characterize as ch
    from colony.machine import describe as machine_info
    with _progress() as prog:
        task = prog.add_task("stress-ng, Arrow kernels, KV stress", total=len(stressors) + 7 + 8)
        adv = lambda *_: prog.advance(task)  # noqa: E731
        sn = ch.run_stress_ng(stressors, timeout, progress=adv)
        ar = ch.arrow_kernels(arrow_rows, progress=adv)
        kvr = ch.kv_stress(iterations=kv_iterations, progress=adv)
    mi = machine_info()
    return {"label": label or mi["hostname"], "machine": mi, "stress_ng": sn, "arrow": ar, "kv": kvr}


def _compare_table(res: dict) -> Table:
    t = Table(title=f"platforms relative to {res['reference']}")
    for col in ("rank", "platform", "cpu", "geomean", "stressors"):
        t.add_column(col, justify="right")
    for r in res["ranking"]:
        t.add_row(str(r["rank"]), str(r["label"]), str(r["machine"].get("cpu_model", "?")), f"{r['geomean']:.3f}",
                  str(r["common"]))
    return t


def characterize_cmd(
    files: Optional[List[Path]] = typer.Argument(None, help="results files (with --compare)"),
    compare: bool = typer.Option(False, "--compare", help="compare result files from several machines"),
    reference: Optional[Path] = typer.Option(None, help="reference results file (default: shipped reference)"),
    stressors: str = typer.Option(",".join(DEFAULT_STRESSORS), help="comma-separated stress-ng stressors"),
    timeout: float = typer.Option(2.0, help="seconds per stressor"),
    arrow_rows: int = typer.Option(1 << 20, help="particles for the Arrow kernels"),
    kv_iterations: int = typer.Option(3000, help="put/get/delete iterations per thread"),
    label: Optional[str] = None,
    plots: Optional[Path] = typer.Option(None, help="directory for PNG plots"),
    json_out: Optional[Path] = typer.Option(None, "--json"),
):
    """Characterize this machine (stress-ng, Arrow kernels, KV stress) or --compare result files."""
    from colony.quantify import characterize as ch
    ref = ch.load_results(reference) if reference else None
    if compare:
        if not files:
            raise InvalidParameter("--compare needs result files: colony characterize --compare a.json b.json")
        docs = [ch.load_results(f) for f in files]
        res = ch.compare(docs, ref)
        console.print(_compare_table(res))
        _write_json(json_out, res)
        return
    res = characterize_machine([s for s in stressors.split(",") if s], timeout, arrow_rows, kv_iterations, label)
    ref = ref or (ch.default_reference() if ch.REFERENCE_FILE.exists() else None)
    t = Table(title=f"stress-ng on {res['machine']['cpu_model']}")
    for col in ("stressor", "bogo-ops/s", "vs reference"):
        t.add_column(col, justify="right")
    norm = ch.normalize(res, ref)["ratios"] if ref else {}
    for s, mtr in res["stress_ng"]["stressors"].items():
        t.add_row(s, f"{mtr['bogo_ops_per_s_real']:.1f}", f"{norm[s]:.3f}" if s in norm else "-")
    console.print(t)
    for s, why in res["stress_ng"]["failed"].items():
        console.print(f"[yellow]stressor {s} failed: {why}[/]")
    if ref:
        res["normalized"] = ch.normalize(res, ref) | {"reference": ref.get("label")}
    if plots:
        res["plots"] = ch.plots(res, plots, ref)
    _write_json(json_out, res)


# ------------------------------------------------------------------ cost

cost_app = typer.Typer(no_args_is_help=True, help="Procurement and power calculators (Glinda defaults).")


@cost_app.command("glinda")
def cost_glinda(nodes: int = 126, usd_per_kwh: float = 0.0862,
                json_out: Optional[Path] = typer.Option(None, "--json")):
    """Table 10-1 node costs and the SmartNIC's yearly power cost (idle/active, ± cooling)."""
    from colony.quantify import costpower as cp
    proc = cp.glinda_procurement().summary()
    pw = cp.smartnic_power_costs(nodes, usd_per_kwh)
    t = Table(title="Glinda node (seed 001 Table 10-1)")
    for col in ("component", "InfiniBand", "BlueField-2"):
        t.add_column(col, justify="right")
    for k, (a, b) in cp.GLINDA_COMPONENTS.items():
        t.add_row(k, f"${a:,.0f}", f"${b:,.0f}")
    t.add_row("total", f"${proc['plain_node_usd']:,.0f}", f"${proc['smartnic_node_usd']:,.0f}")
    console.print(t)
    console.print(f"card price ratio {proc['card_price_ratio']:.2f}x, node cost +{proc['node_cost_increase']:.1%}")
    t2 = Table(title=f"SmartNIC power cost, {nodes} nodes at ${usd_per_kwh}/kWh")
    for col in ("state", "W", "$/node/yr", "$/cluster/yr", "with cooling"):
        t2.add_column(col, justify="right")
    for s in ("idle", "active"):
        r = pw[s]
        t2.add_row(s, f"{r['watts']:.2f}", f"{r['per_node_usd']:.2f}", f"{r['cluster_usd']:,.0f}",
                   f"{r['cluster_with_cooling_usd']:,.0f}")
    console.print(t2)
    _write_json(json_out, {"procurement": proc, "power": pw})


@cost_app.command("energy")
def cost_energy(watts: float = typer.Option(...), usd_per_kwh: float = 0.0862, nodes: int = 1,
                cooling: bool = typer.Option(False, help="double the cost for air cooling")):
    """Yearly energy cost = kW × $/kWh × 8760 × nodes (× 2 with --cooling)."""
    from colony.quantify import costpower as cp
    v = cp.yearly_energy_cost(watts, usd_per_kwh, nodes, cooling)
    console.print(f"{watts} W x {nodes} node(s) at ${usd_per_kwh}/kWh{' with cooling' if cooling else ''}: "
                  f"[bold]${v:,.2f}/year[/]")


@cost_app.command("mbwu")
def cost_mbwu(spec: Path = typer.Option(...), host: str = typer.Option(...), host_mbwus: float = typer.Option(...),
              embedded: str = typer.Option(...), embedded_mbwus: float = typer.Option(...),
              years: float = typer.Option(5.0, help="years of energy added to the purchase price"),
              usd_per_kwh: float = 0.0862, cooling: bool = False,
              json_out: Optional[Path] = typer.Option(None, "--json")):
    """$/MBWU with total cost of ownership (purchase + years of energy) and the benefit."""
    from colony.errors import SpecFileError
    from colony.quantify import costpower as cp, metrics
    specs = metrics.load_specs(spec)
    for nm in (host, embedded):
        if nm not in specs:
            raise SpecFileError(f"platform {nm!r} not in {spec}; it has {sorted(specs)}")
    h, e = specs[host], specs[embedded]
    uh = cp.usd_per_mbwu(h.cost_usd, h.watts, host_mbwus, years, usd_per_kwh, cooling)
    ue = cp.usd_per_mbwu(e.cost_usd, e.watts, embedded_mbwus, years, usd_per_kwh, cooling)
    res = {"years": years, "usd_per_kwh": usd_per_kwh, "cooling": cooling,
           "host_tco_usd_per_mbwu": uh, "embedded_tco_usd_per_mbwu": ue, "benefit": metrics.benefit(ue, uh)}
    console.print(f"TCO over {years} years: host ${uh:,.2f}/MBWU, embedded ${ue:,.2f}/MBWU, "
                  f"benefit {res['benefit']:.2%}")
    _write_json(json_out, res)


# ------------------------------------------------------------------ bench

def _bench_module(name: str):
    import importlib
    return importlib.import_module(f"colony.bench.{name}")


def bench_mbwu(device: Path = typer.Option(Path("/tmp/colony-bench-mbwu"), help="scratch directory on the device"),
               records: int = typer.Option(40_000, help="records x 4 KiB values"),
               threads: str = "1,2,4,8,16,32", duration: float = 4.0,
               json_out: Optional[Path] = typer.Option(Path("bench/results/mbwu.json"), "--json")):
    """MBWU bench: thread sweep, landscapes side by side, device sweep on a small dataset (colony.bench.mbwu)."""
    doc = _bench_module("mbwu").run(device, records, _ints(threads), duration)
    console.print_json(data=doc["summary"], default=str)
    _write_json(json_out, doc)


def bench_characterize():
    """Characterize this machine (colony.bench.characterize) into bench/results/characterize.json."""
    _bench_module("characterize").main([])


def bench_availability():
    """Availability sweeps and Monte Carlo checks (colony.bench.availability)."""
    _bench_module("availability").main()


def register(app, bench_app) -> None:
    app.add_typer(mbwu_app, name="mbwu")
    app.add_typer(av_app, name="availability")
    app.add_typer(cost_app, name="cost")
    app.command("characterize")(characterize_cmd)
    bench_app.command("mbwu")(bench_mbwu)
    bench_app.command("characterize")(bench_characterize)
    bench_app.command("availability")(bench_availability)
