"""`colony codec ...` and `colony bench codec`."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from colony.cli._output import console, progress, save_json, table


def register(app: typer.Typer, bench_app: typer.Typer) -> None:
    codec_app = typer.Typer(no_args_is_help=True, help="Object format and compression codecs.")
    app.add_typer(codec_app, name="codec")

    @codec_app.command("advise")
    def advise_cmd(config: Optional[str] = typer.Argument(None),
                   device: str = typer.Option("nic0", help="the device whose calibration record ranks the codecs"),
                   address: Optional[str] = typer.Option(None, help="Ray cluster address (default: `colony up`'s, "
                                                                    "else a temporary local colony)"),
                   link_gbps: Optional[float] = typer.Option(None, help="link rate in Gbit/s (default: the device's "
                                                                        "host->device rate as calibrated)"),
                   gib: float = typer.Option(1.0, help="amount of raw data to move, GiB"),
                   refresh: bool = typer.Option(False, help="recalibrate the device first"),
                   quick: bool = typer.Option(False, help="calibrate with the suite's smaller sizes"),
                   json_out: Optional[Path] = typer.Option(None, "--json", help="write JSON here")):
        """Rank codecs by serialize + transfer + deserialize time on a device and its link.

        Reads the device's one calibration record; calibrates the device first (a progress
        bar) when the record is missing, stale, or has no codec rates."""
        from dataclasses import asdict

        from colony.cli.runtime import _attach, _config, _read_state
        from colony.codec.advise import advise
        from colony.codec.profile import profiles
        from colony.runtime.calibrate import calibrate, record, summary
        from colony.runtime.client import Colony
        cfg = _config(config)
        temporary = address is None and _read_state(cfg.name) is None
        colony = Colony(cfg) if temporary else _attach(config, address)[0]
        try:
            rec = record(colony, device)
            if refresh or not profiles(rec):
                with console.status(f"calibrating {device} (device suite, codecs on every engine present)"):
                    rec = calibrate(colony, [device], quick=quick)[device]
        finally:
            colony.shutdown() if temporary else None
        found = profiles(rec)
        link = link_gbps if link_gbps is not None else summary(rec)["h2d_gbps"] * 8
        ranked = advise(link, found, int(gib * 2**30))
        prof = {(p.codec, p.engine): p for p in found}
        threads = found[0].threads
        table(f"codecs for {gib:g} GiB from {device} ({threads} threads) over {link:.3g} Gbit/s (best first)",
              ["codec", "engine", "total s", "serialize s", "transfer s", "deserialize s", "ratio"],
              [(a.codec, a.engine, a.seconds, a.serialize_s, a.transfer_s, a.deserialize_s,
                prof[(a.codec, a.engine)].ratio) for a in ranked])
        console.print(f"[bold]advice:[/] {ranked[0].codec} on engine {ranked[0].engine}")
        save_json(json_out, {"device": device, "link_gbps": link, "threads": threads, "advice": ranked[0].codec,
                             "engine": ranked[0].engine,
                             "ranking": [asdict(a) for a in ranked], "profiles": [asdict(p) for p in found]})

    @codec_app.command("engines")
    def engines_cmd():
        """Compression engines, whether this machine has them, and the software decode routes."""
        from rich.markup import escape

        from colony.codec import available_engines
        from colony.codec.native import describe
        table("compression engines", ["engine", "status"], [(k, escape(v)) for k, v in available_engines().items()])
        table("software engine routes", ["codec", "library"], describe().items())

    @codec_app.command("inspect")
    def inspect_cmd(path: Path = typer.Argument(..., exists=True, dir_okay=False)):
        """Show an object file's header (and check it)."""
        from colony.codec import read_info, unpack
        buf = path.read_bytes()
        info = read_info(buf)
        tables = unpack(buf)
        table(f"{path} (format v{info.version}, {info.codec}, {info.nbytes:,} bytes)",
              ["table", "rows", "columns", "raw bytes"],
              [(i, t.num_rows, t.num_columns, t.nbytes) for i, t in enumerate(tables)])

    @bench_app.command("data")
    def bench_data(json_out: Optional[Path] = typer.Option(None, "--json"),
                   rows: int = typer.Option(10_000_000)):
        """Particle generator throughput (rows/s, one core)."""
        from colony.bench import data as bench
        with console.status("timing generators"):
            result = bench.run(rows)
        table("generators (M rows/s)", ["metric", "value"], result["summary"].items())
        save_json(json_out, result)

    @bench_app.command("codec")
    def bench_codec(json_out: Optional[Path] = typer.Option(None, "--json"),
                    mb: int = typer.Option(256, help="MiB of raw data per dataset"),
                    repeats: int = typer.Option(3, help="repeats (--engines: interleaved rounds)"),
                    zero_copy_gib: float = typer.Option(1.0, help="object size for the zero-copy decode test"),
                    quick: bool = typer.Option(False, "--quick", help="a smoke run: 16 MiB, 1 repeat, 64 MiB object"),
                    engines: Optional[str] = typer.Option(
                        None, help="'all' (every engine present) or a comma list: benchmark the batched "
                                   "engine API per engine, codec, thread count and batch size instead"),
                    batch_sizes: str = typer.Option("16,64,256", help="segments per submission (--engines)")):
        """Serialize/deserialize throughput and ratio per codec, against pyarrow's IPC writer."""
        from colony.bench import codec as bench
        if quick:
            mb, repeats, zero_copy_gib = 16, 1, 1 / 16
        if engines:
            sizes = tuple(int(x) for x in batch_sizes.split(",") if x.strip())
            with progress("codec engine benchmark", None) as adv:
                result = bench.run_engines(engines, mb, repeats, sizes, progress=adv)
            table(f"engines, uniform particles, {mb} MiB (GB/s of raw data, median of {repeats} rounds)",
                  ["codec", "engine", "threads", "batch", "serialize", "deserialize", "verified", "ratio"],
                  [(r["codec"], r["engine"] or "-", r["threads"], r["batch"] or "-", r["serialize_gbps"]["median"],
                    r["deserialize_gbps"]["median"], r.get("deserialize_verified_gbps", {}).get("median", "-"),
                    r["ratio"]) for r in result["rows"]])
            table("targets (threads 1 and 2; best round, median beside it)", ["what", "goal", "best", "median", "met"],
                  [(t["what"], t["goal"], t["value"], t["median"], t["met"]) for t in result["summary"]["targets"]])
            table("stops scaling at (threads)", ["engine/codec", "threads"],
                  result["summary"]["stops_scaling_at_threads"].items())
            save_json(json_out, result)
            return
        with progress("codec benchmark", None) as adv:
            result = bench.run(mb, repeats, zero_copy_gib, progress=adv)
        ser = {}
        for r in result["rows"]:
            if r["dataset"] == "uniform":
                ser[(r["codec"], r["threads"])] = r
        table(f"uniform particles, {mb} MiB (MB/s of raw data)",
              ["codec", "threads", "serialize", "deserialize", "ratio", "ser vs pyarrow"],
              [(c, t, r["serialize_mbps"], r["deserialize_mbps"], r["ratio"],
                r.get("serialize_vs_pyarrow", "")) for (c, t), r in ser.items()])
        table("summary", ["metric", "value"], [(k, v) for k, v in result["summary"].items() if "vs_pyarrow" not in k])
        save_json(json_out, result)
