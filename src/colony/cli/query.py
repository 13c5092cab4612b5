"""`colony query` and `colony bench query`."""

from __future__ import annotations

import json
import time
from typing import Optional

import typer


LINKS_GBPS = {"nic0": 16.0, "nic1": 8.0, "nic2": 4.0, "nic3": 32.0}


def _runtime(rows: int, device: str, seed: int):
    """The embedded default colony (Ray) with the query service on every device and
    ``particles`` on ``device``."""
    import colony as colony_pkg
    from colony.config.builders import embedded
    from colony.data import uniform
    from colony.drivers.emulated import DEFAULT_MODELS_DIR
    cfg = embedded(links_gbps=LINKS_GBPS, pools={"particles": [device]},
                   services={"query": {"devices": "all", "options": {"models_dir": DEFAULT_MODELS_DIR + "-runtime"}}})
    c = colony_pkg.connect(cfg, temp_dir="/tmp/ray-colony-query")
    host = next(d.name for d in c.devices() if d.role == "host")
    t = uniform(rows, seed=seed)
    k = 4
    for i in range(k):
        c.put("particles", f"part-{i:05d}", t.slice(i * rows // k, (i + 1) * rows // k - i * rows // k))
    from colony.drivers.link import runtime_links
    return runtime_links(c, host), host, c.shutdown


def _local(rows: int, device: str, seed: int):
    from colony.drivers.emulated import DEFAULT_MODELS_DIR, emulated_colony, load_particles
    colony = emulated_colony(query_options={"models_dir": DEFAULT_MODELS_DIR})
    load_particles(colony, device, rows, objects=4, seed=seed)
    return colony, "host", lambda: None


def _open(rows: int, device: str, seed: int, calib_runs: int, local: bool, recalibrate: bool = False):
    """A colony with `particles` on ``device`` and calibrated query models (cached per device)."""
    from rich.console import Console

    from colony.drivers.query import QueryClient, ensure_calibrated
    from colony.query.plan import TableSpec
    colony, host, close = (_local if local else _runtime)(rows, device, seed)
    ensure_calibrated(colony, host, calib_runs, 1_000_000, recalibrate, on_calibrate=lambda: Console(stderr=True).print(
        "[dim]calibrating cost models on every device (cached afterwards)...[/]"))
    client = QueryClient(colony, host, {"particles": TableSpec("particles", "particles", "*")})
    return colony, client, close


def _table(title, cols, rows):
    from rich.table import Table
    t = Table(title=title)
    for c in cols:
        t.add_column(c)
    for r in rows:
        t.add_row(*[str(x) for x in r])
    return t


def register(app: typer.Typer, bench_app: typer.Typer) -> None:
    @app.command("query")
    def query_cmd(sql: str = typer.Argument(..., help="SQL on table `particles`"),
                  placement: str = typer.Option("auto", help="auto|down|back|split"),
                  explain: bool = typer.Option(False, "--explain", help="show the decision without running"),
                  as_json: bool = typer.Option(False, "--json", help="print JSON"),
                  rows: int = typer.Option(1_000_000, help="rows of emulated particles on the device"),
                  device: str = typer.Option("nic0"), seed: int = typer.Option(0),
                  limit: int = typer.Option(10, help="result rows to print"),
                  local: bool = typer.Option(False, "--local", help="in-process emulated colony instead of Ray"),
                  recalibrate: bool = typer.Option(False, "--recalibrate", help="re-run calibration")):
        """Run SQL in transit: pushed down to the SmartNIC, back to the host, or split."""
        from rich.console import Console
        if placement not in ("auto", "down", "back", "split"):
            raise typer.BadParameter("placement must be auto, down, back or split")
        _, client, close = _open(rows, device, seed, 100, local, recalibrate)
        try:
            r = client.query(sql, placement, explain=explain)
        finally:
            close()
        out = r.to_dict()
        if as_json:
            if r.table is not None:
                out["result_head"] = r.table.slice(0, limit).to_pylist()
            print(json.dumps(out, default=str, indent=1))
            return
        con = Console()
        pred = r.decision.get("predicted", {})
        con.print(f"[bold]{r.placement}[/] on {r.device}: {r.decision['reason']}; "
                  f"estimated rows {r.est_rows:,.0f}" + ("" if r.table is None else f", actual {r.table.num_rows:,}"))
        rows_ = []
        for pl, terms in pred.items():
            rows_.append([pl] + [f"{terms.get(k, 0) * 1e3:.2f}" for k in
                                 ("exec", "ser", "transfer", "exec_host", "wait", "total")])
        con.print(_table("predicted (ms)", ["placement", "exec dev", "ser", "transfer", "exec host", "wait",
                                             "total"], rows_))
        if r.table is not None:
            con.print(_table("actual (ms)", list(r.actual), [[f"{v * 1e3:.2f}" if isinstance(v, float) else v
                                                               for v in r.actual.values()]]))
            head = r.table.slice(0, limit)
            con.print(_table(f"result ({r.table.num_rows:,} rows, first {head.num_rows})", head.column_names,
                             [[v for v in row.values()] for row in head.to_pylist()]))

    @bench_app.command("query")
    def bench_query(queries: str = typer.Option(..., "--queries", help="file: one SQL statement per line"),
                    rows: int = typer.Option(1_000_000, "--rows"), json_out: Optional[str] = typer.Option(None, "--json"),
                    device: str = typer.Option("nic0"), seed: int = typer.Option(0),
                    repeats: int = typer.Option(1, help="runs per placement (min is kept)"),
                    local: bool = typer.Option(False, "--local", help="in-process emulated colony instead of Ray"),
                    recalibrate: bool = typer.Option(False, "--recalibrate", help="re-run calibration")):
        """Every query of FILE under every placement: estimated/actual rows, predicted/actual time,
        decision, oracle and regret."""
        from rich.console import Console
        from rich.progress import Progress

        from colony.drivers.workload import read_queries, run_file, summarize
        try:
            qs = read_queries(queries)
        except OSError as e:
            raise typer.BadParameter(f"cannot read --queries {queries!r}: {e.strerror}") from None
        if not qs:
            raise typer.BadParameter(f"{queries} holds no SQL statements")
        colony, client, close = _open(rows, device, seed, 100, local, recalibrate)
        t0 = time.time()
        try:
            with Progress(transient=True) as prog:
                task = prog.add_task("queries", total=len(qs))
                recs = run_file(client, qs, repeats, lambda i, n: prog.update(task, completed=i))
        finally:
            close()
        summ = summarize(recs)
        con = Console()
        tab = []
        for i, r in enumerate(recs):
            if "error" in r:
                tab.append([i, r["sql"][:48], "-", "-", "error", "", "", r["error"][:60]])
                continue
            pa_ = " ".join(f"{k[0]}:{v * 1e3:.0f}/{r['actual'].get(k, float('nan')) * 1e3:.0f}"
                           for k, v in r["predicted"].items())
            tab.append([i, r["sql"][:48], f"{r['est_rows']:,.0f}", f"{r['rows']:,}", r["decision"], r["oracle"],
                        f"{r['regret'] * 100:.0f}%", pa_])
        con.print(_table(f"{len(qs)} queries on {rows:,} rows (ms predicted/actual per placement)",
                         ["#", "sql", "est rows", "rows", "decision", "oracle", "regret", "d/b/s ms"], tab))
        con.print(summ)
        if json_out:
            from colony.machine import describe as machine
            with open(json_out, "w") as f:
                json.dump({"summary": summ, "machine": machine(), "rows": rows, "queries_file": queries,
                           "wall_s": time.time() - t0, "colony": "emulated in-process (LocalColony + EmulatedLink)" if local else
                           "colony.connect embedded default (Ray), SmartNIC links paced",
                           "records": recs}, f, indent=1, default=str)
