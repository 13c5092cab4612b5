"""`colony load` and `colony tables`: your own data in a running colony."""

from __future__ import annotations

import json
from typing import Optional

import typer


def attach(config: Optional[str], address: Optional[str]):
    """The running colony (from --address or `colony up`'s state), with the query service
    placed on every device (its records cached per colony); calibration comes later, per
    device, when data first sits on it (:func:`calibrator`)."""
    from colony.cli.runtime import _attach
    from colony.drivers.catalog import default_models_dir, place_query_service
    colony = _attach(config, address)[0]
    place_query_service(colony, default_models_dir(colony.config.name))
    return colony


def calibrator(colony, calib_runs: int = 100, calib_rows: int = 1_000_000):
    """``calibrate(devices)``: the host and ``devices`` get calibrated cost models when they
    have no valid record, with a progress bar (one step a device) on stderr; True if it
    calibrated. What :class:`~colony.drivers.catalog.Catalog` calls when data first sits on a
    device, and what `colony load` calls for the devices it loaded onto."""
    from rich.console import Console
    from rich.progress import Progress

    from colony.drivers.catalog import host_of
    from colony.drivers.query import ensure_calibrated

    def calibrate(devices: list[str]) -> bool:
        host = host_of(colony)
        used = sorted(set(devices) | {host})
        on = ", ".join(used)
        with Progress(console=Console(stderr=True), transient=True, auto_refresh=False) as bar:
            task = bar.add_task("", total=len(used), visible=False)

            def start(why: str):         # a line for logs too (a bar is not drawn off a terminal)
                bar.console.print(f"[dim]calibrating cost models on {on} ({why}; kept in each device's "
                                  "calibration record)[/]")
                bar.update(task, visible=True, description="calibrating")
                bar.refresh()
            return ensure_calibrated(colony, host, calib_runs, calib_rows, on_calibrate=start, devices=used,
                                     progress=lambda d: (bar.update(task, advance=1), bar.refresh()))
    return calibrate


def register(app: typer.Typer, bench_app: typer.Typer) -> None:
    @app.command("load")
    def load_cmd(file: str = typer.Argument(..., help="CSV, Parquet or Arrow IPC file"),
                 pool: str = typer.Option(..., "--pool", help="pool of the colony to store it in"),
                 table: str = typer.Option(..., "--table", help="SQL table name"),
                 device: Optional[str] = typer.Option(None, "--device", help="keep every object on this device"),
                 spread: bool = typer.Option(False, "--spread", help="spread objects over the pool (default)"),
                 fmt: Optional[str] = typer.Option(None, "--format", help="csv|parquet|ipc|stream (default: suffix)"),
                 chunk_rows: int = typer.Option(1 << 20, help="rows per stored object"),
                 replace: bool = typer.Option(False, "--replace", help="drop the table's objects first"),
                 config: Optional[str] = typer.Option(None, help="TOML config (default: the one `colony up` used)"),
                 address: Optional[str] = typer.Option(None, help="Ray address (default: `colony up`'s)"),
                 calib_runs: int = typer.Option(100, help="calibration runs per device (a device's first load)"),
                 calib_rows: int = typer.Option(1_000_000, help="largest calibration table (a device's first load)")):
        """Stream a file into a running colony as a table (statistics built on load)."""
        from rich.console import Console

        from colony.drivers.catalog import Catalog
        from colony.drivers.load import load_file
        if device and spread:
            raise typer.BadParameter("--device and --spread exclude each other")
        colony = attach(config, address)
        cat = Catalog(colony)
        rep = load_file(colony, file, pool, table, device=device, fmt=fmt, chunk_rows=chunk_rows, replace=replace,
                        schema_of=lambda t: next((x.pool for x in cat.tables(True) if x.name == t and x.pool != pool),
                                                 None))
        # the devices the table now sits on, and the host, get cost models (the others when
        # data first sits on them): its first query is priced without calibrating there
        calibrator(colony, calib_runs, calib_rows)(sorted(rep.devices))
        Console().print(f"loaded {rep.rows:,} rows of {file} into {pool}/{table}: {rep.objects} objects, "
                        f"{rep.bytes / 1e6:,.1f} MB in {rep.seconds:.2f} s on "
                        + ", ".join(f"{d} ({n})" for d, n in sorted(rep.devices.items())))

    @app.command("tables")
    def tables_cmd(config: Optional[str] = typer.Option(None, help="TOML config (default: `colony up`'s)"),
                   address: Optional[str] = typer.Option(None, help="Ray address (default: `colony up`'s)"),
                   as_json: bool = typer.Option(False, "--json", help="print JSON")):
        """Every table the running colony holds: pool, devices, rows, schema."""
        from rich.console import Console
        from rich.table import Table

        from colony.drivers.catalog import scan
        tabs = scan(attach(config, address))           # listing calibrates nothing
        if as_json:
            print(json.dumps([t.to_dict() for t in tabs], indent=1))
            return
        t = Table(title=f"tables in colony {colony.config.name!r}")
        for c in ("pool", "table", "devices", "objects", "lost", "rows", "MB", "schema"):
            t.add_column(c, justify="right" if c in ("objects", "lost", "rows", "MB") else "left")
        for x in tabs:
            t.add_row(x.pool, x.name, ",".join(x.devices), str(x.objects),
                      f"{x.lost} ({','.join(x.lost_on)})" if x.lost else "0", f"{x.rows:,}", f"{x.bytes / 1e6:,.1f}",
                      ", ".join(f"{f.name} {f.type}" for f in x.schema))
        con = Console(width=200)
        con.print(t)
        for x in tabs:
            if x.lost:
                con.print(f"[yellow]{x.name}: {x.lost} object(s) lost on {', '.join(x.lost_on)} (a device restarted "
                          f"and its pool {x.pool!r} keeps objects in memory only); queries on it fail until "
                          f"`colony load --replace` loads it again[/yellow]")
