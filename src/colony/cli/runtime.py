"""`colony up / status / down / calibrate` and `colony bench inject`: the runtime's commands."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Optional

import typer

from colony.errors import ColonyError, RuntimeFailure


def state_dir() -> Path:
    env = os.environ.get("COLONY_STATE_DIR")
    return Path(env) if env else Path.home() / ".cache" / "colony" / "up"


def _state_file(name: str) -> Path:
    return state_dir() / f"{name}.json"


def _config(config: Optional[str]):
    from colony.config.schema import resolve
    return resolve(config)


def _read_state(name: str) -> dict | None:
    p = _state_file(name)
    try:
        return json.loads(p.read_text())
    except (OSError, ValueError):
        return None


def _console():
    """A console wide enough for the device tables even when output is not a terminal."""
    from rich.console import Console
    c = Console()
    return c if c.is_terminal else Console(width=160)


def _human(n: float | None) -> str:
    if n is None:
        return "-"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def _attach(config: Optional[str], address: Optional[str], create: bool = False):
    """Connect to the colony's devices (address from --address or from `colony up`'s state)."""
    from colony.runtime.client import Colony
    cfg = _config(config)
    state = _read_state(cfg.name)
    if address is None:
        if state is None:
            raise RuntimeFailure(f"no colony {cfg.name!r} is up (no {_state_file(cfg.name)}); run `colony up` or "
                                 f"pass --address of a Ray cluster running it")
        address = state["address"]
        if config is None and state.get("config"):
            cfg = _config(state["config"])
    return Colony(cfg, address=address, create=create), state


def status_table(rows: list[dict], title: str):
    from rich.table import Table
    t = Table(title=title)
    for col in ("device", "kind", "node", "thr", "memory", "spilled", "objs", "calls", "load", "restarts"):
        t.add_column(col, justify="right" if col in ("thr", "objs", "calls", "load") else "left")
    for s in rows:
        st = s["store"]
        objs = sum(p["objects"] for p in st["pools"].values())
        spilled = sum(p["spilled_bytes"] for p in st["pools"].values())
        kind = f"emulated {s['profile']}" if s["emulated"] else f"{s['role']} (real)"
        budget = _human(st["memory_budget"]) if st["memory_budget"] else "unlimited"
        t.add_row(s["device"], kind, s["node_id"][:6], str(s["threads"]), f"{_human(st['memory_used'])}/{budget}",
                  _human(spilled), str(objs), str(s["calls"]), f"{s['load']:.2f}" if s["load"] is not None else "-",
                  restart_note(s))
    return t


def restart_note(s: dict) -> str:
    """``restarted``, with how its own warm-up of handler threads went unless done."""
    if not s["restarted"]:
        return "-"
    warm = s.get("warm_up")
    return "restarted" if warm in (None, "done") else f"restarted (warm-up {warm})"


def query_models(colony, rows: list[dict]) -> list[dict]:
    """Each query-serving device's cost-model state (learner, online corrections, drift)."""
    out = []
    for s in rows:
        if "query" not in (s.get("services") or []):
            continue
        try:
            out.append(colony.call(s["device"], "query", "health"))
        except Exception:  # noqa: BLE001 - a device that cannot answer is shown by the main table
            continue
    return out


def query_models_table(models: list[dict]):
    from rich.table import Table
    t = Table(title="query cost models")
    for col in ("device", "calibrated", "learner", "calibration gaps (thin; short reach)",
                "online corrections (family: factor, n)", "drift", "queue", "admitted work s (here / as host)",
                "core stretch"):
        t.add_column(col)
    for h in models:
        corr = ", ".join(f"{f}: {v['factor']:.2f} ({v['n']})" for f, v in (h.get("corrections") or {}).items())
        gaps = h.get("gaps") or {}
        gap = "; ".join(", ".join(gaps.get(k) or []) or "-" for k in ("thin", "short_reach"))
        t.add_row(h["device"], "yes" if h["calibrated"] else "no", str(h.get("learner") or "-"), gap, corr or "-",
                  ", ".join(h.get("drift") or []) or "-", f"{h.get('queue', 0)}/{h.get('max_queue', '-')}",
                  f"{h.get('backlog_s', 0.0):.2f} / {h.get('host_backlog_s', 0.0):.2f}", f"{h.get('slowdown', 1.0):.2f}x")
    return t


def links_table(rows: list[dict]):
    """Every link a device has charged: bytes, transfers and busy seconds per direction."""
    from rich.table import Table
    t = Table(title="links (counted by the device at the far end; paced where a rate is set)")
    for col in ("link", "rate", "direction", "bytes", "transfers", "busy s", "paced wait s"):
        t.add_column(col, justify="left" if col in ("link", "direction") else "right")
    for s in rows:
        for ln in s.get("links", []):
            rate = f"{ln['gbps']:g} Gbit/s" if ln["gbps"] else "unpaced"
            for d, c in ln["directions"].items():
                if c["transfers"]:
                    t.add_row(ln["link"], rate, d, _human(c["bytes"]), str(c["transfers"]),
                              f"{c['busy_s']:.3f}", f"{c['waited_s']:.3f}")
    return t


def register(app: typer.Typer, bench_app: typer.Typer) -> None:
    @app.command()
    def up(config: Optional[str] = typer.Argument(None, help="TOML config (default: the embedded 1 host + 4 SmartNICs)"),
           address: Optional[str] = typer.Option(None, help="attach to this running Ray cluster (GCS host:port)"),
           temp_dir: Optional[str] = typer.Option(None, help="Ray temp dir for a local colony"),
           object_store_memory: Optional[str] = typer.Option(None, help="object store size, e.g. 2GiB (local)"),
           timeout: float = typer.Option(180.0, help="seconds to wait for the devices")):
        """Start a local colony (background Ray driver) or attach to a Ray cluster and start the devices."""
        from colony.config import parse_size
        cfg = _config(config)
        state = _read_state(cfg.name)
        if state is not None and (state.get("mode") != "local" or _alive(state.get("pid"))):
            raise ColonyError(f"colony {cfg.name!r} is already up at {state['address']}; `colony down` first")
        state_dir().mkdir(parents=True, exist_ok=True)
        sf = _state_file(cfg.name)
        cfg_path = str(Path(config).resolve()) if config else None
        if address is None:
            cmd = [sys.executable, "-m", "colony.runtime.daemon", "--state", str(sf)]
            if cfg_path:
                cmd += ["--config", cfg_path]
            if temp_dir:
                cmd += ["--temp-dir", temp_dir]
            if object_store_memory:
                cmd += ["--object-store-memory", str(parse_size(object_store_memory, "--object-store-memory"))]
            log = open(state_dir() / f"{cfg.name}.log", "w")
            proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
            deadline = time.time() + timeout
            while not sf.exists():
                if proc.poll() is not None:
                    raise RuntimeFailure(f"the colony failed to start (exit {proc.returncode}); see "
                                         f"{state_dir() / (cfg.name + '.log')}")
                if time.time() > deadline:
                    proc.terminate()
                    raise RuntimeFailure(f"the colony did not come up within {timeout:.0f} s")
                time.sleep(0.5)
            state = json.loads(sf.read_text())
            colony, _ = _attach(config, state["address"])
        else:
            from colony.runtime import auth
            from colony.runtime.client import Colony
            colony = Colony(cfg, address=address, detached=True)
            state = {"address": address, "pid": None, "config": cfg_path, "name": cfg.name,
                     "namespace": cfg.namespace, "mode": "attached", "auth": auth.current_mode()}
            sf.write_text(json.dumps(state))
        rows = colony.status()
        _console().print(status_table(rows, f"colony {cfg.name!r} up at {state['address']} "
                                           f"(Ray auth: {state.get('auth')})"))

    @app.command()
    def status(config: Optional[str] = typer.Argument(None, help="TOML config (default: the one `colony up` used)"),
               address: Optional[str] = typer.Option(None, help="Ray cluster address (default: from `colony up`)"),
               json_out: Optional[Path] = typer.Option(None, "--json", help="write the status as JSON here")):
        """Show devices, memory, objects and load."""
        colony, state = _attach(config, address)
        rows = colony.status()
        _console().print(status_table(rows, f"colony {colony.config.name!r} at "
                                           f"{address or state['address']} (Ray auth: {colony.auth_mode})"))
        _console().print(links_table(rows))
        lost = {s["device"]: s["store"].get("lost") for s in rows if s["store"].get("lost")}
        if lost:
            _console().print(f"[red]objects lost at a device restart (memory-only pools):[/red] {lost}")
        models = query_models(colony, rows)
        if models:
            _console().print(query_models_table(models))
        if json_out:
            json_out.parent.mkdir(parents=True, exist_ok=True)
            json_out.write_text(json.dumps({"colony": colony.config.name, "devices": rows, "query_models": models},
                                           indent=1, default=str))

    @app.command()
    def down(config: Optional[str] = typer.Argument(None),
             address: Optional[str] = typer.Option(None, help="Ray cluster address (default: from `colony up`)")):
        """Stop the colony's devices (and the local Ray that `colony up` started)."""
        cfg = _config(config)
        state = _read_state(cfg.name)
        if state and state.get("mode") == "local" and address is None:
            pid = state.get("pid")
            if _alive(pid):
                os.kill(pid, signal.SIGTERM)
                deadline = time.time() + 60
                while _alive(pid) and time.time() < deadline:
                    time.sleep(0.3)
            _state_file(cfg.name).unlink(missing_ok=True)
            _console().print(f"colony {cfg.name!r} stopped (local Ray shut down)")
            return
        colony, _ = _attach(config, address)
        colony.shutdown(kill_devices=True)
        _state_file(cfg.name).unlink(missing_ok=True)
        _console().print(f"colony {cfg.name!r}: devices stopped; the Ray cluster itself keeps running")

    @app.command()
    def calibrate(config: Optional[str] = typer.Argument(None),
                  address: Optional[str] = typer.Option(None, help="Ray cluster address (default: `colony up`'s, "
                                                                   "else a temporary local colony)"),
                  device: Optional[list[str]] = typer.Option(None, help="only these devices (repeatable)"),
                  quick: bool = typer.Option(False, help="smaller sizes (seconds instead of a minute)"),
                  json_out: Optional[Path] = typer.Option(None, "--json", help="write all results as JSON here")):
        """Time the fixed suite on every device and persist it per device (cost models read only this)."""
        from rich.progress import Progress
        from colony.cost import suite as calibration
        from colony.runtime.calibrate import calibrate as run, summary
        from colony.runtime.client import Colony
        cfg = _config(config)
        temporary = address is None and _read_state(cfg.name) is None
        colony = Colony(cfg) if temporary else _attach(config, address)[0]
        try:
            names = device or [d.name for d in colony.devices()]
            with Progress() as prog:
                task = prog.add_task("calibrating", total=len(names))
                results = run(colony, names, quick=quick,
                              progress=lambda n: prog.update(task, advance=0 if n == names[0] else 1,
                                                             description=f"calibrating {n}"))
                prog.update(task, completed=len(names))
        finally:
            colony.shutdown() if temporary else None
        from rich.table import Table
        t = Table(title=f"calibration (saved under {calibration.calibration_dir()})")
        for col in ("device", "kind", "threads", "memcpy GB/s", "IPC ser GB/s", "IPC deser GB/s",
                    "host->dev GB/s", "dev->host GB/s", "filter Mrows/s"):
            t.add_column(col)
        for name, r in results.items():
            s = summary(r)
            t.add_row(name, r["label"], str(s["threads"]), f"{s['memcpy_gbps']:.2f}", f"{s['ipc_ser_gbps']:.2f}",
                      f"{s['ipc_deser_gbps']:.2f}", f"{s['h2d_gbps']:.2f}", f"{s['d2h_gbps']:.2f}",
                      f"{s['filter_mrows_s']:.1f}")
        _console().print(t)
        if json_out:
            json_out.parent.mkdir(parents=True, exist_ok=True)
            json_out.write_text(json.dumps(results, indent=1))

    @bench_app.command("inject")
    def bench_inject(json_out: Path = typer.Option(None, "--json",
                                                   help="where the JSON goes (default bench/results/inject.json, "
                                                        "inject_sweep.json with --sweep)"),
                     sizes: str = typer.Option(None, help="particle counts, e.g. 1M,4M,16M,64M "
                                                          "(default 1M,4M,16M,64M; 16M,64M with --sweep)"),
                     nodes: int = typer.Option(3, help="Ray nodes of the multi-node colony (>= 3)"),
                     repeats: int = typer.Option(3, help="warm runs per size after the cold one (--sweep: rounds)"),
                     sweep: bool = typer.Option(False, "--sweep", help="sweep placement, Flight message size, "
                                                "batch size and pipeline depth on the multi-node colony"),
                     temp_dir: str = typer.Option("/tmp/ray-colony-bench", help="Ray temp dir")):
        """Host->device injection GB/s, embedded vs multi-node, beside memcpy and IPC serialization."""
        from colony.bench.inject import run_cli
        json_out = json_out or Path("bench/results/inject_sweep.json" if sweep else "bench/results/inject.json")
        run_cli(json_out=json_out, sizes=sizes or ("16M,64M" if sweep else "1M,4M,16M,64M"), nodes=nodes,
                repeats=repeats, temp_dir=temp_dir, sweep=sweep)

    @bench_app.command("transfer")
    def bench_transfer(json_out: Path = typer.Option(Path("bench/results/transfer.json"), "--json",
                                                     help="where the JSON goes"),
                       repeats: int = typer.Option(5, help="transfers per size and path (min/median/max)"),
                       inflight: int = typer.Option(4, help="concurrent transfers in the throughput runs"),
                       temp_dir: str = typer.Option("/tmp/ray-colony-bench", help="Ray temp dir")):
        """Bulk transport: Ray's object store vs Arrow Flight vs memcpy, 4 KiB..256 MiB, 3-node colony."""
        from colony.bench.common import write_json
        from colony.bench.transfer import run, table
        result = run(repeats=repeats, inflight=inflight, temp_dir=temp_dir)
        _console().print(table(result))
        write_json(json_out, result)

    @bench_app.command("pacing")
    def bench_pacing(json_out: Path = typer.Option(Path("bench/results/pacing.json"), "--json",
                                                   help="where the JSON goes"),
                     temp_dir: str = typer.Option("/tmp/ray-colony-bench", help="Ray temp dir")):
        """Pacing accuracy: achieved vs configured rate at 0.1/1/10 Gbit/s for every traffic kind."""
        from colony.bench.common import write_json
        from colony.bench.pacing import run, table
        result = run(temp_dir=temp_dir)
        _console().print(table(result))
        write_json(json_out, result)


def _alive(pid) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True
