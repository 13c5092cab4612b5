"""`colony offload report`: one verdict from what the toolkit measured or was given."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer


def register(app: typer.Typer, bench_app: typer.Typer) -> None:
    off = typer.Typer(no_args_is_help=True, help="Does offloading a service to a SmartNIC pay? One verdict.")
    app.add_typer(off, name="offload")

    @off.command("report")
    def report_cmd(platform: str = typer.Option("seed", "--platform", help="platform spec TOML, or 'seed' for the "
                                                                           "seeds' own inputs shipped with Colony"),
                   interference: Optional[Path] = typer.Option(None, help="bench/results/interference.json: "
                                                                          "measured slowdowns and daemon CPU"),
                   service: str = typer.Option("ckpt", help="which co-located service of the interference run"),
                   without_others: bool = typer.Option(False, help="use the interference slowdowns less other "
                                                                   "processes' CPU on the host cores (shared machine)"),
                   mbwu: Optional[Path] = typer.Option(None, help="bench/results/mbwu.json: an MBWU or its refusal"),
                   availability: Optional[Path] = typer.Option(None, help="bench/results/availability.json"),
                   device_characterization: Optional[Path] = typer.Option(
                       None, help="`colony characterize --json` run on the device (needs --host-characterization)"),
                   host_characterization: Optional[Path] = typer.Option(None, help="the same run on the host"),
                   out: Path = typer.Option(Path("colony-report/offload"), help="directory for index.html + plots"),
                   json_out: Optional[Path] = typer.Option(None, "--json", help="write the report as JSON here")):
        """Host cycles saved, node-equivalents, $/kW/m3 per unit of work, availability, each input's source,
        and which input would flip the verdict (one sensitivity plot per input)."""
        from colony.errors import SpecFileError
        from colony.quantify import offload
        spec = offload.load_spec(platform)
        if interference:
            offload.apply_interference(spec, interference, service, without_others)
        if mbwu:
            offload.apply_mbwu(spec, mbwu)
        if availability:
            offload.apply_availability(spec, availability)
        if device_characterization or host_characterization:
            if not (device_characterization and host_characterization):
                raise SpecFileError("a device core speed needs both --device-characterization and "
                                    "--host-characterization")
            offload.apply_characterization(spec, device_characterization, host_characterization)
        rep = offload.report(spec)
        html = offload.write_html(rep, out)
        f = rep["figures"]
        typer.echo(f"{rep['verdict'].upper()}: {rep['why']}")
        typer.echo(f"host cycles saved {f['host_cycles_saved_fraction']:.1%} of node-time, "
                   f"{f['node_equivalents']:.1f} node-equivalents, device at {f['device_utilization']:.0%}; "
                   f"benefit $ {f['benefit']['usd']:+.1%}, kW {f['benefit']['kw']:+.1%}, m3 {f['benefit']['m3']:+.1%}")
        for n, xs in rep["flips"].items():
            typer.echo(f"  flips if {n} = {', '.join(f'{x:.4g}' for x in xs)} "
                       f"(now {rep['inputs'][n]['value']:.4g}, {rep['inputs'][n]['source']})")
        typer.echo(f"measured here: {', '.join(rep['sources']['measured here']) or '-'}")
        typer.echo(f"wrote {html}")
        if json_out:
            json_out.parent.mkdir(parents=True, exist_ok=True)
            json_out.write_text(json.dumps(rep, indent=1))
