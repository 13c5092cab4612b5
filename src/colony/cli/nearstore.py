"""`colony nearstore ...` and `colony bench nearstore`: distributed merge sort on
computational storage devices, device-to-device vs host-mediated (seed 004)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from colony.drivers.nearstore.colonies import colony_factory as _factory
from colony.drivers.nearstore.fusefs import fuse_status
from colony.errors import NearStoreError

_UNITS = {"": 1, "b": 1, "k": 1000, "kb": 1000, "kib": 1 << 10, "m": 10 ** 6, "mb": 10 ** 6,
          "mib": 1 << 20, "g": 10 ** 9, "gb": 10 ** 9, "gib": 1 << 30}


def parse_size(text: str) -> int:
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", text)
    if not m or m.group(2).lower() not in _UNITS:
        raise NearStoreError(f"cannot read size {text!r}; write e.g. 32KiB, 64MiB, 512MiB")
    return int(float(m.group(1)) * _UNITS[m.group(2).lower()])


def parse_rate(text: str) -> float | None:
    if text.lower() in ("none", "unpaced", "inf", "0"):
        return None
    try:
        return float(text)
    except ValueError:
        raise NearStoreError(f"link rate {text!r}: give Gbit/s (0.1, 1, 10) or 'unpaced'") from None


def _row_table(rows: list[dict], title: str) -> Table:
    t = Table(title=title)
    for c in ("size", "devs", "Gbit/s", "host total s", "d2d total s", "speedup", "faster %",
              "sort %", "merge %", "host-link B ratio", "identical"):
        t.add_column(c, justify="right")
    for r in rows:
        f = lambda v: "-" if v is None else f"{v:.1f}"  # noqa: E731
        t.add_row(r["size"], str(r["devices"]), r["rate"], f"{r['host']['total_s']:.3f}",
                  f"{r['d2d']['total_s']:.3f}", f"{r['speedup_total']:.2f}x", f(r["faster_pct_total"]),
                  f(r["faster_pct_sort"]), f(r["faster_pct_merge"]), f"{r['host_link_bytes_ratio']:.2f}",
                  "yes" if r["host"]["identical"] and r["d2d"]["identical"] else "NO")
    return t


def register(app: typer.Typer, bench_app: typer.Typer) -> None:
    ns = typer.Typer(no_args_is_help=True, help="Near-storage computation on CSDs (SCANCOMS merge sort).")
    app.add_typer(ns, name="nearstore")

    @ns.command("sort")
    def sort_cmd(devices: int = typer.Option(2, help="number of CSDs"),
                 size: str = typer.Option("8MiB", help="input size (100-byte records)"),
                 mode: str = typer.Option("both", help="d2d | host | both"),
                 gbps: str = typer.Option("1", help="link rate in Gbit/s for host and D2D links, or 'unpaced'"),
                 runtime: str = typer.Option("local", help="local (in-process) | ray (device actors)"),
                 seed: int = 42, json_out: Optional[Path] = typer.Option(None, "--json")) -> None:
        """Merge-sort a generated file spread over CSDs and compare the modes."""
        from colony.bench import nearstore as B
        nbytes = parse_size(size)
        modes = ("host", "d2d") if mode == "both" else (mode,)
        if any(m not in ("host", "d2d") for m in modes):
            raise NearStoreError(f"mode {mode!r}: use d2d, host or both")
        rate = parse_rate(gbps)
        client, names, close = _factory(runtime, None)(devices)
        try:
            from colony.drivers.nearstore import Nescafe
            from colony.nearstore import records as R
            fs = Nescafe(client, names)
            data = R.generate(nbytes // R.RECORD_SIZE, seed=seed)
            ref = R.host_sort(data)
            fs.create("input", data)
            fs.set_links(rate, rate)
            res = {m: B.run_sort(fs, "input", m, ref) for m in modes}
        finally:
            close()
        t = Table(title=f"merge sort of {B.human(len(data))} on {devices} CSDs at {B.rate_name(rate)} Gbit/s ({runtime})")
        for c in ("mode", "sort s", "merge s", "readback s", "total s", "host-link bytes", "d2d bytes", "identical"):
            t.add_column(c, justify="right")
        for m, r in res.items():
            t.add_row(m, f"{r['sort_s']:.3f}", f"{r['merge_s']:.3f}", f"{r['readback_s']:.3f}",
                      f"{r['total_s']:.3f}", f"{r['host_link_bytes']:,}", f"{r['d2d_bytes']:,}",
                      "yes" if r["identical"] else "NO")
        Console().print(t)
        if json_out:
            json_out.write_text(json.dumps(res, indent=2, default=str))

    @ns.command("mount")
    def mount_cmd(mountpoint: Path, devices: int = typer.Option(2, help="number of CSDs"),
                  size: str = typer.Option("8MiB", help="size of the generated file 'records'"),
                  gbps: str = typer.Option("unpaced", help="link rate (Gbit/s) or 'unpaced'"),
                  runtime: str = typer.Option("local", help="local | ray"), seed: int = 42) -> None:
        """Serve NESCAFE over FUSE with one generated file, 'records' (until unmounted).

        Register an operation with an extended attribute, then read:
        setfattr -n user.nescafe.op -v "mergesort mode=d2d" MOUNTPOINT/records
        """
        from colony.drivers.nearstore import Nescafe
        from colony.nearstore import records as R
        from colony.drivers.nearstore.fusefs import mount
        st = fuse_status()
        if not st["usable"]:
            raise NearStoreError(f"FUSE is not usable here: {st}; install fuse3 (apt) and mfusepy (pip)")
        rate = parse_rate(gbps)
        client, names, close = _factory(runtime, None)(devices)
        try:
            fs = Nescafe(client, names)
            fs.create("records", R.generate(parse_size(size) // R.RECORD_SIZE, seed=seed))
            fs.set_links(rate, rate)
            mountpoint.mkdir(parents=True, exist_ok=True)
            mount(fs, str(mountpoint))
        finally:
            close()

    @ns.command("fuse-check")
    def fuse_check() -> None:
        """Say whether a FUSE mount of NESCAFE is possible on this machine."""
        Console().print_json(json.dumps(fuse_status()))

    @bench_app.command("nearstore")
    def bench_cmd(json_out: Path = typer.Option(Path("bench/results/nearstore.json"), "--json"),
                  max_size: str = typer.Option("512MiB", help="largest input"),
                  big: str = typer.Option("", help="size for the device sweep (default: max-size)"),
                  rate_size: str = typer.Option("64MiB", help="size for the link-rate sweep"),
                  devices: str = typer.Option("2,4,8"),
                  rates: str = typer.Option("0.1,1,10,unpaced"),
                  reps: int = typer.Option(5, help="repetitions for inputs <= 8 MiB (best of)"),
                  reps_large: int = typer.Option(2, help="repetitions for larger inputs (best of)"),
                  runtime: str = typer.Option("local", help="local | ray"),
                  duplex: str = typer.Option("full", help="host port: full (a bucket per direction) | half"),
                  copy: str = typer.Option("pipelined", help="host-mediated copy: pipelined | store-and-forward"),
                  workroot: Optional[str] = typer.Option(None, help="where the CSD block files go")) -> None:
        """D2D vs host-mediated merge sort over sizes, link rates and device counts."""
        from colony.bench import nearstore as B
        pts = B.plan(parse_size(max_size), parse_size(big) if big else None, parse_size(rate_size),
                     [int(x) for x in devices.split(",")], [parse_rate(x) for x in rates.split(",")])
        with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                      TimeElapsedColumn()) as prog:
            task = prog.add_task("nearstore", total=len(pts))
            res = B.sweep(_factory(runtime, workroot), pts, reps_small=reps, reps_large=reps_large,
                          fs_options={"duplex": duplex, "copy": copy},
                          progress=lambda d: prog.update(task, advance=1, description=d))
        res["machine"] = B.machine(runtime)
        res["config"] = {"points": [[s, n, g] for s, n, g in pts], "record_size": 100, "key_size": 10,
                         "chunk_size": 1 << 20, "block_size": 4096, "reps_small": reps, "reps_large": reps_large, "timing": "best of reps",
                         "load_unpaced": True, "host_duplex": duplex, "host_copy": copy, "d2d_rate_equals_host_rate": True}
        Console().print(_row_table(res["rows"], "nearstore: D2D vs host-mediated merge sort"))
        Console().print_json(json.dumps(res["summary"], default=str))
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(json.dumps(res, indent=2, default=str))
        Console().print(f"wrote {json_out}")
