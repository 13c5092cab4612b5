"""The `colony` command line. Each module in this package that defines
``register(app, bench_app)`` adds its commands; this file only assembles them, so
features never edit a shared command table."""

from __future__ import annotations

import importlib
import os
import pkgutil
import sys
import time
import traceback
from pathlib import Path
from typing import NoReturn

import typer

from colony.errors import ColonyError

app = typer.Typer(no_args_is_help=True, add_completion=False,
                  help="Colony: composable Arrow data services on SmartNICs, DPUs and storage devices.")
bench_app = typer.Typer(no_args_is_help=True, help="Benchmarks; each writes JSON with --json OUT.")
app.add_typer(bench_app, name="bench")

for _mod in sorted(m.name for m in pkgutil.iter_modules(__path__)):
    _m = importlib.import_module(f"{__name__}.{_mod}")
    if hasattr(_m, "register"):
        _m.register(app, bench_app)


def _log_dir() -> Path:
    return Path(os.environ.get("COLONY_LOG_DIR") or Path.home() / ".cache" / "colony" / "logs")


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _fail(message: str, hint: str | None, code: int) -> NoReturn:
    """At most two plain lines on stderr (no wrapping box): what went wrong, what to do."""
    sys.stderr.write(f"error: {_one_line(message)}\n" + (f"{hint}\n" if hint else ""))
    raise SystemExit(code)


def _internal(e: BaseException) -> NoReturn:
    """An unexpected exception: one line here, the traceback in a log file."""
    try:
        d = _log_dir()
        d.mkdir(parents=True, exist_ok=True)
        path = d / f"colony-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.log"
        path.write_text(f"colony {' '.join(sys.argv[1:])}\n\n" + traceback.format_exc())
        where = f"traceback in {path}"
    except OSError as le:
        where = f"traceback could not be written ({le.strerror}); rerun with COLONY_LOG_DIR set"
    _fail(f"internal error {type(e).__name__}: {str(e)[:200]}", f"{where}; please report it", 1)


def main(argv: list[str] | None = None) -> None:
    """Console entry point. Usage and input errors (typer's bundled click exceptions) and
    Colony errors print at most two lines and exit 2; anything else prints one line and
    where its traceback was logged, exit 1."""
    from typer.exceptions import TyperException   # typer raises its bundled click's classes, not click's
    try:
        app(args=argv, standalone_mode=False)
    except typer.Exit as e:
        raise SystemExit(e.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        _fail("interrupted", None, 130)
    except ColonyError as e:
        _fail(str(e), None, 2)
    except TyperException as e:
        if not e.format_message().strip():        # no arguments: the help was the answer
            raise SystemExit(e.exit_code)
        ctx = getattr(e, "ctx", None)
        hint = f"try: {ctx.command_path} --help" if ctx is not None else "try: colony --help"
        _fail(e.format_message(), hint, 2)
    except Exception as e:  # noqa: BLE001 - the one place that turns a crash into a log file
        _internal(e)
