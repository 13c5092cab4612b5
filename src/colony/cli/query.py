"""`colony query` and `colony bench query`."""

from __future__ import annotations

import json
import time
import uuid
from typing import Optional

import typer


def _tables(rows: int, seed: int, data: str | None) -> dict:
    """``--data DIR``: one Parquet file or folder per table (table name = file name);
    otherwise ``rows`` uniform particles as table ``particles``."""
    if data is None:
        from colony.data import uniform
        return {"particles": uniform(rows, seed=seed)}
    from colony.data.tables import read_dir
    from colony.errors import DataError
    try:
        return read_dir(data)
    except DataError as e:
        raise typer.BadParameter(str(e)) from None


def _open(rows: int, device: str, seed: int, calib_runs: int, local: bool, recalibrate: bool = False,
          data: str | None = None, calib_rows: int = 1_000_000, timing: dict | None = None, cover: bool = False):
    """A colony with the tables on ``device`` and calibrated query models (cached per device).
    ``timing`` gets ``calibration_s`` (None when every device's record was still valid)."""
    from rich.console import Console

    from colony.drivers.emulated import query_colony_in_process, query_colony_on_ray
    from colony.drivers.query import QueryClient, ensure_calibrated
    from colony.query.plan import TableSpec
    tables = _tables(rows, seed, data)
    colony, host, close = (query_colony_in_process if local else query_colony_on_ray)(tables, device)
    from rich.progress import Progress
    with Progress(console=Console(stderr=True), transient=True, auto_refresh=False) as bar:
        # the host and the SmartNIC that holds the tables: the only two the queries run on
        used = sorted({host, device})
        on = " and ".join(used)
        task = bar.add_task(f"calibrating cost models on {on} (kept in each device's calibration record)",
                            total=len(used), visible=False)

        def start(why: str):
            bar.update(task, visible=True, description=f"calibrating cost models on {on} ({why}; kept in each "
                                                       "device's calibration record)")
            bar.refresh()
        t0 = time.perf_counter()
        did = ensure_calibrated(colony, host, calib_runs, calib_rows, recalibrate, on_calibrate=start,
                                progress=lambda d: (bar.update(task, advance=1), bar.refresh()), cover=cover,
                                devices=used)
    if timing is not None:
        timing.update(calibration_s=time.perf_counter() - t0 if did else None, calib_runs=calib_runs,
                      calib_rows=calib_rows)
    client = QueryClient(colony, host, {n: TableSpec(n, n, "*") for n in tables})
    return colony, client, close


def check_sql(sql: str) -> None:
    """Parse and plan the SQL against the known `particles` schema before anything slow
    (starting a colony, calibrating): a typo fails in well under a second."""
    from colony.data.schema import PARTICLE_SCHEMA
    from colony.query.plan import to_substrait
    to_substrait(sql, {"particles": PARTICLE_SCHEMA})


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
    def query_cmd(sql: str = typer.Argument(..., help="SQL on table `particles` (with --address/--up: your tables)"),
                  placement: str = typer.Option("auto", help="auto|down|back|split"),
                  explain: bool = typer.Option(False, "--explain", help="show the decision without running"),
                  as_json: bool = typer.Option(False, "--json", help="print JSON"),
                  rows: int = typer.Option(1_000_000, help="rows of emulated particles on the device"),
                  device: str = typer.Option("nic0"), seed: int = typer.Option(0),
                  limit: int = typer.Option(10, help="result rows to print"),
                  local: bool = typer.Option(False, "--local", help="in-process emulated colony instead of Ray"),
                  recalibrate: bool = typer.Option(False, "--recalibrate", help="re-run calibration"),
                  data: Optional[str] = typer.Option(None, "--data", help="directory: one Parquet file or folder "
                                                     "per table, table name = file name"),
                  address: Optional[str] = typer.Option(None, help="query the tables of the colony running at this "
                                                                   "Ray address (`colony up`, `colony load`)"),
                  up: bool = typer.Option(False, "--up", help="query the colony `colony up` started"),
                  config: Optional[str] = typer.Option(None, help="its TOML config (with --address/--up)")):
        """Run SQL in transit: pushed down to the SmartNIC, back to the host, or split.

        Without --address/--up: a fresh colony over `--rows` synthetic particles (or `--data`)."""
        from rich.console import Console
        if placement not in ("auto", "down", "back", "split"):
            raise typer.BadParameter("placement must be auto, down, back or split")
        qid = "cli-" + uuid.uuid4().hex      # Ctrl-C cancels it on the devices (QueryClient.query)
        if address or up:
            from colony.cli.catalog import attach, calibrator
            from colony.drivers.catalog import Catalog
            colony = attach(config, address)
            client, close = Catalog(colony, calibrate=calibrator(colony)), lambda: None
        else:
            check_sql(sql)
            _, client, close = _open(rows, device, seed, 100, local, recalibrate, data)
        try:
            r = client.query(sql, placement, explain=explain, query_id=qid)
        except KeyboardInterrupt:             # Ctrl-C: the client has cancelled it on its devices
            Console(stderr=True).print(f"cancelled: query {qid} stopped on the devices working on it")
            raise SystemExit(130) from None    # as an interrupt exits (typer would swallow a re-raise here)
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
        for note in r.decision.get("caveats") or ():
            con.print(f"[yellow]caveat:[/] {note}")
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
    def bench_query(queries: str = typer.Option(..., "--queries", help="file: one SQL statement per line "
                                                "(optional '-- family: NAME [held-out]' headers)"),
                    rows: int = typer.Option(1_000_000, "--rows", help="uniform particles (without --data)"),
                    json_out: Optional[str] = typer.Option(None, "--json"),
                    data: Optional[str] = typer.Option(None, "--data", help="directory: one Parquet file or folder "
                                                       "per table, table name = file name"),
                    device: str = typer.Option("nic0"), seed: int = typer.Option(0),
                    repeats: int = typer.Option(3, help="runs per placement (the median is kept; >= 3 gives the "
                                                        "noise floor)"),
                    local: bool = typer.Option(False, "--local", help="in-process emulated colony instead of Ray"),
                    recalibrate: bool = typer.Option(False, "--recalibrate", help="re-run calibration"),
                    calib_runs: int = typer.Option(100, help="calibration runs per device"),
                    calib_rows: int = typer.Option(1_000_000, help="largest calibration table")):
        """Every query of FILE under every placement and auto: estimated/actual rows, predicted/actual
        time per placement and term, decision, oracle, regret, repeat noise; summary per policy."""
        from rich.console import Console
        from rich.progress import Progress

        from colony.bench.query_families import read_families
        from colony.drivers.workload import run_file, summarize
        try:
            qs = read_families(queries)
        except OSError as e:
            raise typer.BadParameter(f"cannot read --queries {queries!r}: {e.strerror}") from None
        if not qs:
            raise typer.BadParameter(f"{queries} holds no SQL statements")
        timing: dict = {}
        # the benchmark's calibration sizes are part of what it measures: a smaller record is redone
        colony, client, close = _open(rows, device, seed, calib_runs, local, recalibrate, data, calib_rows, timing,
                                      cover=True)
        t0 = time.time()
        recs: list = []

        def dump(summ: dict | None = None) -> None:
            if not json_out:
                return
            from colony.machine import describe as machine
            with open(json_out, "w") as f:
                json.dump({"summary": summ if summ is not None else summarize(recs), "partial": summ is None,
                           "machine": machine(), "rows": rows, "data": data, "queries_file": queries,
                           "repeats": repeats, "wall_s": time.time() - t0, "calibration": timing,
                           "learner_kept": {d: (m or {}).get("report", {}).get("kept") for d, m in models.items()},
                           "calibration_report": {d: (m or {}).get("report") for d, m in models.items()},
                           "colony": "emulated in-process (LocalColony, paced links)" if local else
                           "colony.connect embedded default (Ray), SmartNIC links paced",
                           "records": recs}, f, indent=1, default=str)

        def step(i: int, n: int, prog, task) -> None:
            prog.update(task, completed=i)
            if i % 10 == 0:             # a run cut short still leaves its records
                dump()
        try:
            models = {d: colony.call(d, "query", "models_json") for d in (client.host, device)}
            with Progress(transient=True) as prog:
                task = prog.add_task("queries", total=len(qs))
                recs.extend(run_file(client, qs, repeats, lambda i, n: step(i, n, prog, task), into=recs))
        finally:
            close()
        summ = summarize(recs)
        con = Console()
        tab = []
        for i, r in enumerate(recs):
            if "error" in r:
                tab.append([i, r.get("family") or "", r["sql"][:44], "-", "-", "error", "", "", r["error"][:60]])
                continue
            pa_ = " ".join(f"{k[0]}:{v * 1e3:.0f}/{r['actual'].get(k, float('nan')) * 1e3:.0f}"
                           for k, v in r["predicted"].items())
            est = "n/a" if r["est_rows"] is None else f"{r['est_rows']:,.0f}"
            tab.append([i, r.get("family") or "", r["sql"][:44], est, f"{r['rows']:,}", r["decision"], r["oracle"],
                        f"{r['regret'] * 100:.0f}%", pa_])
        what = f"tables from {data}" if data else f"{rows:,} rows"
        con.print(_table(f"{len(qs)} queries on {what} (ms predicted/actual per placement, median of {repeats})",
                         ["#", "family", "sql", "est rows", "rows", "decision", "oracle", "regret", "d/b/s ms"], tab))
        con.print(summ)
        dump(summ)
