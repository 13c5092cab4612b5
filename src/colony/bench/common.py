"""Writing benchmark JSON safely (the machine description is colony.machine.describe), and the
command line every ``python -m colony.bench.*`` module takes."""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def entry(module: str, doc: str | None, argv: list[str] | None = None,
          flags: dict[str, str] | None = None) -> argparse.Namespace:
    """Parse a benchmark module's command line before it runs anything: ``--help`` prints its
    docstring and exits 0, and an argument it does not take exits 2 with a message. Without
    this, ``python -m colony.bench.deadline --help`` ran the benchmark and overwrote its
    committed result. ``flags``: boolean options it takes (name -> help)."""
    ap = argparse.ArgumentParser(prog=f"python -m {module}", description=doc,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    for name, text in (flags or {}).items():
        ap.add_argument(name, action="store_true", help=text)
    return ap.parse_args(argv)


def write_json(path: str | Path, result: dict) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(result, indent=1, default=str))
    tmp.replace(path)
    return path


def spread(xs) -> dict:
    """min/median/p90/max of repeated measurements (every headline number carries its spread)."""
    import statistics
    xs = sorted(xs)
    return {"min": xs[0], "median": statistics.median(xs), "p90": xs[min(len(xs) - 1, round(0.9 * (len(xs) - 1)))],
            "max": xs[-1], "n": len(xs)}
