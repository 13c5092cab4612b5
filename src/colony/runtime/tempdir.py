"""Where Ray keeps its files for colonies this process starts."""

from __future__ import annotations

import os
from pathlib import Path


def use_temp_dir(temp_dir: str) -> None:
    """Keep every Ray file of this process under ``temp_dir`` (sessions, sockets, and the
    ``ray_current_cluster`` address file Ray otherwise writes to the shared /tmp/ray)."""
    Path(temp_dir, "ray").mkdir(parents=True, exist_ok=True)
    os.environ["RAY_TMPDIR"] = temp_dir
