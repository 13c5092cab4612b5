"""Writing benchmark JSON safely (the machine description is colony.machine.describe)."""

from __future__ import annotations

import json
from pathlib import Path


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
