"""Shared CLI output: rich tables, JSON files, progress bars."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Iterable, Sequence

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

console = Console()


def table(title: str, columns: Sequence[str], rows: Iterable[Sequence]) -> None:
    t = Table(title=title)
    for c in columns:
        t.add_column(c, justify="left" if c == columns[0] else "right")
    for r in rows:
        t.add_row(*[f"{v:,.2f}" if isinstance(v, float) else str(v) for v in r])
    console.print(t)


def save_json(path: Path | None, result: dict) -> None:
    if path:
        from colony.bench.common import write_json
        write_json(path, result)
        console.print(f"wrote {path}")


@contextmanager
def progress(description: str, total: int | None):
    """Yields advance(done, total=None) for long work; a bar on stderr-like console."""
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=console, transient=False) as p:
        task = p.add_task(description, total=total)

        def advance(done: int, new_total: int | None = None) -> None:
            p.update(task, completed=done, total=new_total or p.tasks[task].total)

        yield advance
