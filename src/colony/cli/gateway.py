"""`colony serve --flight-sql HOST:PORT` and `colony bench gateway`."""

from __future__ import annotations

import signal
import threading
from dataclasses import replace
from pathlib import Path
from typing import Optional

import typer


def register(app: typer.Typer, bench_app: typer.Typer) -> None:
    @app.command("serve")
    def serve_cmd(flight_sql: Optional[str] = typer.Option(None, "--flight-sql", help="HOST:PORT to listen on "
                                                           "(default: the config's gateway.address, 127.0.0.1:32010)"),
                  config: Optional[str] = typer.Option(None, help="TOML config (default: the one `colony up` used)"),
                  address: Optional[str] = typer.Option(None, help="Ray address (default: `colony up`'s)"),
                  tls_cert: Optional[str] = typer.Option(None, help="PEM certificate: serve TLS (with --tls-key)"),
                  tls_key: Optional[str] = typer.Option(None, help="PEM private key"),
                  no_auth: bool = typer.Option(False, "--no-auth", help="accept clients without the token (unsafe)"),
                  calib_runs: int = typer.Option(100, help="calibration runs per device (a device's first time holding data)")):
        """Serve the running colony's tables over Arrow Flight SQL (ADBC, JDBC, DBeaver...).

        Clients authenticate with the colony's token (`authorization: Bearer <token>`, or basic
        auth with the token as password); the token is ~/.ray/auth_token unless the config's
        gateway.token_file says otherwise."""
        from rich.console import Console

        from colony.cli.catalog import attach, calibrator
        from colony.gateway.serve import location, open_gateway
        colony = attach(config, address)
        spec = colony.config.gateway
        spec = replace(spec, address=flight_sql or spec.address, tls_cert=tls_cert or spec.tls_cert,
                       tls_key=tls_key or spec.tls_key, auth="none" if no_auth else spec.auth)
        gw = open_gateway(colony, spec, name=colony.config.name, calibrate=calibrator(colony, calib_runs))
        gw.catalog.tables()     # the devices holding tables calibrated (when not yet) before clients come
        host = spec.address.rsplit(":", 1)[0]
        Console().print(f"Flight SQL gateway for colony {colony.config.name!r} at "
                        f"{location(spec).rsplit(':', 1)[0]}:{gw.port} "
                        f"(auth: {'none' if spec.auth == 'none' else 'token'}, TLS: {'on' if spec.tls_cert else 'off'})"
                        + ("" if host in ("127.0.0.1", "localhost", "::1") else "; listening beyond this machine"),
                        highlight=False)
        stop = threading.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: stop.set())
        t = threading.Thread(target=gw.serve, daemon=True)
        t.start()
        while not stop.wait(0.5):
            pass
        gw.shutdown()

    @bench_app.command("gateway")
    def bench_gateway(json_out: Path = typer.Option(Path("bench/results/gateway.json"), "--json"),
                      clients: str = typer.Option("1,2,4,8,16,32", help="concurrent client counts"),
                      rows: int = typer.Option(200_000, help="particle rows on the SmartNIC"),
                      seconds: float = typer.Option(4.0, help="seconds per run and client count"),
                      repeats: int = typer.Option(3, help="runs per client count and per query (spread)")):
        """N concurrent ADBC clients on the mixed query workload: throughput, p50/p99, and the
        gateway's overhead over `colony query` on the same queries."""
        from colony.bench.gateway import run_cli
        run_cli(json_out=json_out, clients=[int(c) for c in clients.split(",")], rows=rows, seconds=seconds,
                repeats=repeats)
