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
             rows: int = typer.Option(1_000_000, help="particles to generate"),
             json_out: Optional[Path] = typer.Option(None, "--json", help="write the summary as JSON")):
        """Run the main job on the embedded default colony; print a summary, write an HTML report."""
        from colony import demo as job
        with console.status("running the demo") as status:
            summary = job.run(report, rows, say=lambda m: status.update(m))
        table("object codecs (this machine)", ["codec", "bytes", "ratio", "ser MB/s", "deser MB/s"],
              [(r["codec"], r["bytes"], r["ratio"], r["serialize_mbps"], r["deserialize_mbps"])
               for r in summary["codec"]["codecs"]])
        console.print(f"report: {summary['report']}")
        if json_out:
            json_out.write_text(json.dumps(summary, indent=1, default=str))
