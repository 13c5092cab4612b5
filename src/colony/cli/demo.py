"""`colony demo`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from colony.cli._output import console, table


def register(app: typer.Typer, bench_app: typer.Typer) -> None:
    @app.command("demo")
    def demo(report: Path = typer.Option(Path("colony-report"), help="directory for the HTML report"),
             rows: int = typer.Option(1_000_000, help="particles for the codec section"),
             particles: int = typer.Option(20_000, help="simulated particles to sift"),
             steps: int = typer.Option(20, help="simulation time steps"),
             query_rows: int = typer.Option(400_000, help="particles on the SmartNICs for queries"),
             json_out: Optional[Path] = typer.Option(None, "--json", help="write the summary as JSON")):
        """Run the main job on the embedded default colony; print a summary, write an HTML report."""
        from colony import demo as job
        with console.status("running the demo") as status:
            summary = job.run(report, rows, say=lambda m: status.update(m), particles=particles,
                              steps=steps, query_rows=query_rows)
        table("object codecs (this machine)", ["codec", "bytes", "ratio", "ser MB/s", "deser MB/s"],
              [(r["codec"], r["bytes"], r["ratio"], r["serialize_mbps"], r["deserialize_mbps"])
               for r in summary["codec"]["codecs"]])
        table("the colony", ["device", "role", "label", "services"],
              [(d["device"], d["role"], d["label"], d["services"]) for d in summary["colony"]])
        sift = summary["sift"]
        table("particle sifting (snapshots -> tracks)", ["metric", "value"],
              [(k, v) for k, v in sift.items() if not isinstance(v, (dict, list)) and k != "figure"])
        table("in-transit queries", ["query", "decision", "est rows", "rows", "actual ms per placement"],
              [(q["label"], q["decision"], f"{q['est_rows']:,.0f}", f"{q['rows']:,}",
                ", ".join(f"{k} {1e3 * v:.1f}" for k, v in q["actual"].items())) for q in summary["query"]["queries"]])
        console.print(f"report: {summary['report']}")
        if json_out:
            json_out.write_text(json.dumps(summary, indent=1, default=str))
