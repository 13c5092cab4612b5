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
