"""`colony sift ...` and `colony bench sift`: sift particle snapshots into tracks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

DATASETS = ("uniform", "clustered", "simulation", "trackml", "opensky", "ais")


def _dataset(name: str, rows: int, seed: int, ranks: int, steps: int):
    """[(rank, snapshot)] to inject: simulation snapshots, or one table cut into ``ranks`` pieces."""
    from colony import data
    from colony.errors import DataError
    if name == "simulation":
        sim = data.Simulation(n_particles=max(1, rows // steps), n_ranks=ranks, seed=seed)
        return [(rank, t, snap) for t, rank, snap in sim.run(steps)]
    loaders = {"uniform": lambda: data.uniform(rows, seed=seed, n_particles=max(1, rows // steps), steps=steps),
               "clustered": lambda: data.clustered(rows, seed=seed),
               "trackml": data.load_trackml, "opensky": data.load_opensky, "ais": data.load_ais}
    if name not in loaders:
        raise DataError(f"unknown dataset {name!r}; choose one of {DATASETS}")
    table = loaders[name]()
    step = max(1, -(-table.num_rows // ranks))
    return [(i, 0, table.slice(i * step, step)) for i in range(ranks) if i * step < table.num_rows]


def _local_colony(devices: int):
    from colony.config.builders import devices as devices_config
    from colony.runtime.local import LocalColony
    names = [f"nic{i}" for i in range(devices)]
    return LocalColony(devices_config({n: {"role": "smartnic", "services": {"sift": {}}} for n in names})), names


def _up_colony(config: Optional[str], address: Optional[str]):
    """The running colony (`colony up` or --address), with sift placed on its SmartNICs."""
    from colony.cli.runtime import _attach
    colony, _ = _attach(config, address)
    names = [d.name for d in colony.devices() if d.role == "smartnic"] or [d.name for d in colony.devices()]
    colony.place("sift", names)
    return colony, names


def sift_run(dataset: str = "uniform", rows: int = 1_000_000, k: int = 4, bins: Optional[int] = None,
             devices: int = 4, routing: str = "low", ranks: int = 4, steps: int = 10, seed: int = 0,
             threshold_rows: int = 1 << 20, track: Optional[int] = None, show_bin: Optional[int] = None,
             json_out: Optional[Path] = None, on: str = "local", config: Optional[str] = None,
             address: Optional[str] = None, run: str = "cli") -> dict:
    """Inject a dataset, sift it through every stage with progress bars, print per-stage results."""
    import numpy as np
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    from rich.table import Table

    from colony.errors import SiftError
    from colony.drivers.sift import Sifter

    console = Console()
    if on == "local":
        colony, members = _local_colony(devices)
        console.print(f"[dim]in-process colony: {devices} devices in this process (no Ray)[/]")
    elif on == "up":
        colony, members = _up_colony(config, address)
        console.print(f"[dim]Ray colony: PEs on {', '.join(members)} (device-to-device hand-off)[/]")
    else:
        raise SiftError(f"--on must be 'local' or 'up', got {on!r}")
    sifter = Sifter(colony, members, k=k, n_bins=bins or len(members), routing=routing,
                    threshold_rows=threshold_rows, run=run)
    snaps = _dataset(dataset, rows, seed, ranks, steps)
    total_rows = sum(s.num_rows for _, _, s in snaps)
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console) as prog:
        inj = prog.add_task("inject", total=len(snaps))
        for rank, t, snap in snaps:
            sifter.inject(snap, members[rank % len(members)], source=f"rank{rank}", seq=t)
            prog.advance(inj)
        tasks = {}

        def progress(label: str, done: int, total: int) -> None:
            if label not in tasks:
                tasks[label] = prog.add_task(label, total=total)
            prog.update(tasks[label], completed=done)

        reports = sifter.run(progress=progress)
    tab = Table(title=f"sifting {total_rows:,} rows of {dataset}: {1 << k}-way x {sifter.plan.stages} stages, "
                      f"{sifter.plan.total_bins} bins on {len(members)} devices ({routing} bits)")
    for c in ("stage", "rows", "parts", "split s", "pack s", "deliver s", "retries", "PE max/mean rows"):
        tab.add_column(c, justify="right")
    for r in reports:
        per = np.array(list(r.per_device_rows.values()), float)
        tab.add_row(str(r.stage), f"{r.rows:,}", str(r.parts), f"{r.split_s:.3f}", f"{r.pack_s:.3f}",
                    f"{r.publish_s:.3f}", str(r.retries), f"{per.max() / per.mean():.2f}" if per.mean() else "-")
    console.print(tab)
    sizes = np.array(list(sifter.bins().values()), float)
    result = {"dataset": dataset, "rows": total_rows, "plan": sifter.plan.to_dict(),
              "mode": "in-process" if on == "local" else "ray", "run": run,
              "stages": [r.to_dict() for r in reports], "bins_filled": int(len(sizes)),
              "bin_rows_total": int(sizes.sum()), "bin_max_over_mean": float(sizes.max() / sizes.mean())}
    console.print(f"{len(sizes)} bins filled, {int(sizes.sum()):,} rows placed "
                  f"({'exactly the injected count' if int(sizes.sum()) == total_rows else 'MISMATCH'}), "
                  f"bin max/mean {result['bin_max_over_mean']:.2f}")
    if track is not None:
        tr = sifter.track(track)
        console.print(f"track of particle {track}: {0 if tr is None else tr.num_rows} records")
        if tr is not None:
            cols = tr.column_names[:7]
            tt = Table(title=f"particle {track} (first 20 records)")
            for c in cols:
                tt.add_column(c, justify="right")
            for row in tr.slice(0, 20).select(cols).to_pylist():
                tt.add_row(*[f"{v:.4f}" if isinstance(v, float) else str(v) for v in row.values()])
            console.print(tt)
        result["track_rows"] = 0 if tr is None else tr.num_rows
    if show_bin is not None:
        bt = sifter.bin(show_bin)
        n = 0 if bt is None else bt.num_rows
        parts = 0 if bt is None else len(np.unique(bt.column("particle_id").to_numpy()))
        console.print(f"bin {show_bin} on {sifter.bin_owner(show_bin)}: {n:,} rows, {parts:,} tracks")
        result["bin_rows"] = n
    if json_out:
        Path(json_out).write_text(json.dumps(result, indent=2, default=str))
    return result


def sift_file(path: Path, fmt: str, *, k: int = 4, bins: Optional[int] = None, devices: int = 4,
              routing: str = "low", threshold_rows: int = 1 << 20, device_memory: str = "512MiB",
              chunk: str = "64MiB", track: Optional[int] = None, json_out: Optional[Path] = None) -> dict:
    """Sift a user's file with bounded memory: read it chunk by chunk, inject each chunk and
    pump the pipeline (PEs compact when over their threshold), devices spill to a temporary
    directory beyond ``device_memory``; then flush every stage."""
    import resource
    import shutil
    import tempfile
    import time

    import numpy as np
    from rich.console import Console

    from colony.config.builders import devices as devices_config
    from colony.config.schema import parse_size
    from colony.data import FORMATS, iter_particles
    from colony.drivers.sift import Sifter
    from colony.errors import DataError
    from colony.runtime.local import LocalColony

    if fmt not in FORMATS:
        raise DataError(f"unknown --format {fmt!r}; choose one of {', '.join(FORMATS)}")
    mem, chunk_bytes = parse_size(device_memory, "--device-memory"), parse_size(chunk, "--chunk")
    console = Console()
    spill = Path(tempfile.mkdtemp(prefix="colony-sift-spill-"))
    try:
        names = [f"nic{i}" for i in range(devices)]
        colony = LocalColony(devices_config({n: {"role": "smartnic", "services": {"sift": {}}, "memory": mem,
                                                 "disk": 1 << 50, "workdir": str(spill / n)} for n in names}),
                             budgets=True)
        sifter = Sifter(colony, names, k=k, n_bins=bins or len(names), routing=routing,
                        threshold_rows=threshold_rows, run="file", durable=False)
        t0, rows, chunks = time.perf_counter(), 0, 0
        with console.status(f"sifting {path} ({fmt})") as status:
            for i, table in enumerate(iter_particles(path, fmt, chunk_bytes)):
                sifter.inject(table, names[i % len(names)], source="file", seq=i)
                sifter.pump()
                rows += table.num_rows
                chunks += 1
                status.update(f"sifting {path} ({fmt}): {rows:,} rows in {chunks} chunks")
            sifter.run()
        wall = time.perf_counter() - t0
        sizes = np.array(list(sifter.bins().values()), float)
        spilled = sum(colony.store(n).info()["disk_used"] for n in names)
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        result = {"input": str(path), "format": fmt, "file_bytes": path.stat().st_size, "rows": rows,
                  "chunks": chunks, "plan": sifter.plan.to_dict(), "wall_s": wall,
                  "bins_filled": int(len(sizes)), "bin_rows_total": int(sizes.sum()),
                  "device_memory_bytes": mem, "spilled_bytes": spilled, "peak_rss_bytes": peak}
        console.print(f"sifted {rows:,} rows of {path.name} ({fmt}) in {wall:.1f} s: {len(sizes)} bins, "
                      f"{int(sizes.sum()):,} rows placed"
                      f" ({'exactly the rows read' if int(sizes.sum()) == rows else 'MISMATCH'}); "
                      f"peak RSS {peak / 2**20:,.0f} MiB, {spilled / 2**20:,.0f} MiB spilled")
        if track is not None:
            tr = sifter.track(track)
            result["track_rows"] = 0 if tr is None else tr.num_rows
            console.print(f"track of particle {track}: {result['track_rows']} records")
        if json_out:
            Path(json_out).write_text(json.dumps(result, indent=2, default=str))
        return result
    finally:
        shutil.rmtree(spill, ignore_errors=True)


def _consumer(config: Optional[str], address: Optional[str]):
    from colony.cli.runtime import _attach
    colony, _ = _attach(config, address)
    return colony, [d.name for d in colony.devices() if d.role == "smartnic"] or [d.name for d in colony.devices()]


def _bin(sifter, particle_id: int) -> int:
    import numpy as np
    from colony.sift import bin_of
    return int(bin_of(np.array([particle_id], dtype=np.uint64), sifter.plan)[0])


def register(app: typer.Typer, bench_app: typer.Typer) -> None:
    sift_app = typer.Typer(no_args_is_help=True, help="Particle sifting: snapshots -> tracks over a PE pipeline.")
    app.add_typer(sift_app, name="sift")

    @sift_app.command("run")
    def run_cmd(dataset: str = typer.Option("uniform", help=f"one of {', '.join(DATASETS)}"),
                rows: int = typer.Option(1_000_000, help="rows for generated datasets"),
                k: int = typer.Option(4, help="id bits per stage (2^k-way splits)"),
                bins: Optional[int] = typer.Option(None, help="at least this many final bins (default: devices)"),
                devices: int = typer.Option(4, help="emulated devices hosting PEs"),
                routing: str = typer.Option("low", help="low: low id bits (seeds); hash: bits of a stable id hash"),
                ranks: int = typer.Option(4, help="simulation ranks injecting snapshots"),
                steps: int = typer.Option(10, help="time steps (uniform, simulation)"),
                seed: int = 0,
                threshold_rows: int = typer.Option(1 << 20, help="PE accumulation threshold (rows)"),
                track: Optional[int] = typer.Option(None, help="print the track of this particle id"),
                show_bin: Optional[int] = typer.Option(None, "--bin", help="print a summary of this bin"),
                json_out: Optional[Path] = typer.Option(None, "--json", help="write results as JSON"),
                on: str = typer.Option("local", help="local: in-process devices; up: the running Ray colony"),
                config: Optional[str] = typer.Option(None, help="TOML config of the running colony (--on up)"),
                address: Optional[str] = typer.Option(None, help="Ray cluster address (--on up)"),
                run: str = typer.Option("cli", help="run name (durable PE state is kept per run)"),
                input_file: Optional[Path] = typer.Option(None, "--input", help="sift your own CSV/Parquet file "
                                                          "(streamed in chunks; see --format)"),
                fmt: str = typer.Option("trackml", "--format", help="layout of --input: trackml, opensky, ais "
                                        "or particles"),
                device_memory: str = typer.Option("512MiB", help="--input: memory per device before objects "
                                                  "spill to disk"),
                chunk: str = typer.Option("64MiB", help="--input: bytes read per chunk")) -> None:
        """Inject a dataset (or your own file with --input) into the stage-1 PEs and sift it into tracks."""
        if input_file is not None:
            sift_file(input_file, fmt, k=k, bins=bins, devices=devices, routing=routing,
                      threshold_rows=threshold_rows, device_memory=device_memory, chunk=chunk,
                      track=track, json_out=json_out)
            return
        sift_run(dataset, rows, k, bins, devices, routing, ranks, steps, seed, threshold_rows, track,
                 show_bin, json_out, on, config, address, run)

    @sift_app.command("track")
    def track_cmd(particle_id: int = typer.Argument(..., help="particle id (uint64)"),
                  config: Optional[str] = typer.Option(None, help="TOML config (default: the one `colony up` used)"),
                  address: Optional[str] = typer.Option(None, help="Ray cluster address"),
                  json_out: Optional[Path] = typer.Option(None, "--json", help="write the track as JSON rows")) -> None:
        """Fetch one particle's track from the device that holds its bin (a running colony)."""
        from rich.console import Console
        from rich.table import Table
        from colony.drivers.sift import Sifter
        colony, names = _consumer(config, address)
        s = Sifter.attach(colony, names)
        tr = s.track(particle_id)
        rows = [] if tr is None else tr.to_pylist()
        tab = Table(title=f"particle {particle_id}: {len(rows)} records (bin {_bin(s, particle_id)})")
        cols = [] if tr is None else tr.column_names[:9]
        for c in cols:
            tab.add_column(c, justify="right")
        for r in rows[:50]:
            tab.add_row(*[f"{r[c]:.4f}" if isinstance(r[c], float) else str(r[c]) for c in cols])
        Console().print(tab)
        if json_out:
            Path(json_out).write_text(json.dumps(rows, default=str))

    @sift_app.command("bin")
    def bin_cmd(bin_id: int = typer.Argument(..., help="final bin number"),
                config: Optional[str] = typer.Option(None), address: Optional[str] = typer.Option(None),
                out: Optional[Path] = typer.Option(None, help="write the bin's tracks as Parquet")) -> None:
        """Fetch a whole final bin (tracks sorted by particle_id, time) from a running colony."""
        from rich.console import Console
        from colony.drivers.sift import Sifter
        colony, names = _consumer(config, address)
        s = Sifter.attach(colony, names)
        t = s.bin(bin_id)
        n = 0 if t is None else t.num_rows
        tracks = 0 if t is None else len(set(t.column("particle_id").to_pylist()))
        Console().print(f"bin {bin_id} on {s.bin_owner(bin_id)}: {n:,} rows, {tracks:,} tracks")
        if out and t is not None:
            import pyarrow.parquet as pq
            pq.write_table(t, out)

    @bench_app.command("sift")
    def bench_cmd(json_out: Path = typer.Option(Path("bench/results/sift.json"), "--json"),
                  quick: bool = typer.Option(False, help="small sizes: a smoke run"),
                  kernel_rows: Optional[int] = None,
                  ray: bool = typer.Option(True, help="also run the impulse response on a Ray colony")) -> None:
        """Partition kernel vs select baseline vs polars; impulse response; bin balance. Run under
        `flock /tmp/colony-bench.lock` on shared machines."""
        from colony.bench.sift import run
        run(quick=quick, json_out=json_out, kernel_rows=kernel_rows, ray=ray)
