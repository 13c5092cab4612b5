"""The `colony` command line. Each module in this package that defines
``register(app, bench_app)`` adds its commands; this file only assembles them, so
features never edit a shared command table."""

from __future__ import annotations

import importlib
import pkgutil

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


def main() -> None:
    """Console entry point: Colony errors print as one clear line, exit code 2."""
    try:
        app(standalone_mode=False)
    except ColonyError as e:
        from rich.console import Console
        Console(stderr=True).print(f"[bold red]error:[/] {e}")
        raise SystemExit(2)
    except typer.Exit as e:
        raise SystemExit(e.exit_code)
    except typer.Abort:
        raise SystemExit(1)
    except Exception as e:  # click usage errors
        import click
        if isinstance(e, click.ClickException):
            e.show()
            raise SystemExit(e.exit_code)
        raise
