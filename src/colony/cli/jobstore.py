"""`colony jobstore up / put / get / ls / status / mount / down`: the job-local store."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Optional

import typer

from colony.errors import JobStoreError


def _state(job: str) -> Path:
    from colony.cli.runtime import state_dir
    return state_dir() / f"jobstore-{job}.json"


def _open(job: str, config: Optional[str], address: Optional[str]):
    """The job's store on the running colony (as `colony jobstore up` recorded it)."""
    from colony.cli.runtime import _attach
    from colony.drivers.jobstore import JobStore
    p = _state(job)
    if not p.exists():
        raise JobStoreError(f"job {job!r} has no store up (no {p}); run `colony jobstore up --job {job}`")
    st = json.loads(p.read_text())
    colony, _ = _attach(config or st.get("config"), address or st.get("address"))
    js = JobStore.up(colony, job, st["pool"], chunk_size=st["chunk_size"], keep=st["keep"])
    return js, st


def local_colony(n: int):
    """n emulated devices in this process holding pool 'jobstore' (for `mount --local`)."""
    from colony.config.builders import devices
    from colony.runtime.local import LocalColony
    spec = {"host0": {"role": "host"}, **{f"nic{i}": {"pools": ["jobstore"]} for i in range(n)}}
    return LocalColony(devices(spec, name="jobstore-local"))


def register(app: typer.Typer, bench_app: typer.Typer) -> None:
    js_app = typer.Typer(no_args_is_help=True, help="The job-local store (BeeOND's role): ephemeral, striped "
                                                    "over a pool's devices, gone at job end unless --keep.")
    app.add_typer(js_app, name="jobstore")
    job_opt = typer.Option(..., "--job", help="job id (one store per job)")
    cfg_opt = typer.Option(None, "--config", help="colony TOML (default: the one `colony up` used)")
    addr_opt = typer.Option(None, "--address", help="Ray cluster address (default: from `colony up`)")

    @js_app.command("up")
    def up(job: str = job_opt, pool: str = typer.Option("default", help="stripe over this pool's members; "
                                                                         "pool 'host' puts the daemon on the host"),
           chunk_size: int = typer.Option(1 << 20, help="stripe unit in bytes"),
           keep: bool = typer.Option(False, help="keep the files after `down`"),
           config: Optional[str] = cfg_opt, address: Optional[str] = addr_opt):
        """Start the job's store on the running colony (places the service on the pool's devices)."""
        from colony.cli.runtime import _attach
        from colony.drivers.jobstore import JobStore
        colony, state = _attach(config, address)
        js = JobStore.up(colony, job, pool, chunk_size=chunk_size, keep=keep)
        p = _state(job)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(json.dumps({"job": job, "pool": pool, "chunk_size": chunk_size, "keep": keep,
                                 "config": config, "address": address or (state or {}).get("address"),
                                 "members": js.members, "metadata": js.metadata}))
        typer.echo(f"jobstore {job!r} up: pool {pool!r} striped over {js.members}, metadata on {js.metadata}"
                   f"{' (kept at down)' if keep else ' (dropped at down)'}")

    @js_app.command("put")
    def put(src: Path = typer.Argument(..., help="local file ('-' = stdin)"),
            name: str = typer.Argument(..., help="path in the job store"), job: str = job_opt,
            config: Optional[str] = cfg_opt, address: Optional[str] = addr_opt):
        """Write a file (checkpoint style: published atomically once every chunk is stored)."""
        js, _ = _open(job, config, address)
        data = sys.stdin.buffer.read() if str(src) == "-" else src.read_bytes()
        m = js.write(name, data)
        typer.echo(f"{name}: {m['size']} bytes in {m['nchunks']} chunks, crc32c {m['crc32c']:08x}")

    @js_app.command("get")
    def get(name: str = typer.Argument(..., help="path in the job store"),
            dst: Path = typer.Argument(..., help="local file ('-' = stdout)"), job: str = job_opt,
            config: Optional[str] = cfg_opt, address: Optional[str] = addr_opt):
        """Read a committed file (every chunk's CRC32C is checked)."""
        js, _ = _open(job, config, address)
        data = js.read(name)
        if str(dst) == "-":
            sys.stdout.buffer.write(data)
        else:
            dst.write_bytes(data)

    @js_app.command("ls")
    def ls(job: str = job_opt, prefix: str = typer.Option("", help="only paths starting with this"),
           config: Optional[str] = cfg_opt, address: Optional[str] = addr_opt):
        """List committed files."""
        js, _ = _open(job, config, address)
        for m in js.list(prefix):
            typer.echo(f"{m['size']:>12}  {m['nchunks']:>5} chunks  {m['path']}")

    @js_app.command("status")
    def status(job: str = job_opt, config: Optional[str] = cfg_opt, address: Optional[str] = addr_opt,
               json_out: Optional[Path] = typer.Option(None, "--json", help="write the status as JSON here")):
        """Per device: chunks, bytes, spilled chunks, the daemon process's CPU seconds and cores."""
        from colony.cli._output import table
        js, st = _open(job, config, address)
        rows = js.usage()
        files = js.list()
        table(f"jobstore {job!r} (pool {st['pool']}, metadata on {js.metadata}): {len(files)} files",
              ["device", "chunks", "bytes", "spilled", "cpu s", "cores"],
              [(u["device"], u["chunks"], u["bytes"], u["spilled"], u["cpu_user_s"] + u["cpu_sys_s"],
                ",".join(map(str, u["affinity"] or []))) for u in rows])
        if json_out:
            json_out.parent.mkdir(parents=True, exist_ok=True)
            json_out.write_text(json.dumps({"job": job, "pool": st["pool"], "files": files, "devices": rows},
                                           indent=1))

    @js_app.command("down")
    def down(job: str = job_opt, keep: Optional[bool] = typer.Option(None, "--keep/--no-keep",
                                                                     help="override the job's --keep"),
             config: Optional[str] = cfg_opt, address: Optional[str] = addr_opt):
        """End the job: drop every file and chunk (unless kept) and forget the store."""
        js, _ = _open(job, config, address)
        out = js.close(keep)
        _state(job).unlink(missing_ok=True)
        typer.echo(f"jobstore {job!r} down: {out['files']} files, "
                   + ("kept" if out["kept"] else f"{out['chunks_dropped']} chunks dropped"))

    @bench_app.command("interference", context_settings={"allow_extra_args": True,
                                                         "ignore_unknown_options": True})
    def bench_interference(ctx: typer.Context):
        """A bulk-synchronous host job alone and beside the job store / sifting / queries, each service
        on the host's cores or an emulated SmartNIC's (options: python -m colony.bench.interference -h)."""
        from colony.bench.interference import main
        main(ctx.args)

    @js_app.command("mount")
    def mount_cmd(mountpoint: Path = typer.Argument(..., help="empty directory to mount on"), job: str = job_opt,
                  local: int = typer.Option(0, help="no colony: N emulated devices in this process (tests, demos)"),
                  chunk_size: int = typer.Option(1 << 20, help="stripe unit in bytes (with --local)"),
                  config: Optional[str] = cfg_opt, address: Optional[str] = addr_opt):
        """Serve the job's store as a FUSE file system until unmounted (fusermount3 -u MOUNTPOINT);
        files are published atomically on close. Without --local the job must be up."""
        from colony.drivers.jobstore import JobStore
        from colony.drivers.jobstore.fusefs import fuse_status, mount
        st = fuse_status()
        if not st["usable"]:
            raise JobStoreError(f"FUSE is not usable here ({st}); use the API or `colony jobstore put/get`")
        if local:
            js = JobStore.up(local_colony(local), job, "jobstore", chunk_size=chunk_size)
        else:
            js, _ = _open(job, config, address)
        mountpoint.mkdir(parents=True, exist_ok=True)
        typer.echo(f"jobstore {job!r} mounted at {mountpoint} (striped over {js.members})", err=True)
        try:
            mount(js, str(mountpoint))
        finally:
            if local:
                js.close()
