"""Ray token authentication for the colonies Colony starts (Ray >= 2.52).

Ray authenticates every control-plane RPC and dashboard request with one shared bearer
token when ``RAY_AUTH_MODE=token`` is set in the environment of every Ray process. The
token comes from ``RAY_AUTH_TOKEN``, else the file ``RAY_AUTH_TOKEN_PATH``, else
``~/.ray/auth_token`` (Ray's default; ``ray get-auth-token --generate`` writes it).
Colony sets the mode before it starts or attaches to Ray, so the raylets, workers and
device actors it spawns inherit it, and makes sure a token exists.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from colony.errors import RuntimeFailure

MODE_VAR = "RAY_AUTH_MODE"


def token_path() -> Path:
    """Where the token this process will present lives (env path or Ray's default)."""
    env = os.environ.get("RAY_AUTH_TOKEN_PATH")
    return Path(env) if env else Path.home() / ".ray" / "auth_token"


def _ensure_token() -> None:
    if os.environ.get("RAY_AUTH_TOKEN"):
        return
    path = token_path()
    if path.is_file() and path.read_text().strip():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    try:   # O_EXCL: if another process creates it first, use theirs
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return
    with os.fdopen(fd, "w") as f:
        f.write(secrets.token_hex(32))


def enable(mode: str = "token") -> str:
    """Turn Ray token auth on for this process and the Ray processes it starts.

    Returns the mode in force. ``mode="disabled"`` leaves the environment alone.
    """
    if mode != "token":
        return os.environ.get(MODE_VAR, "disabled")
    try:
        _ensure_token()
    except OSError as e:
        raise RuntimeFailure(f"cannot create the Ray auth token at {token_path()}: {e.strerror}; "
                             "set RAY_AUTH_TOKEN or RAY_AUTH_TOKEN_PATH to a writable place") from e
    os.environ[MODE_VAR] = "token"
    try:
        from ray._raylet import AuthenticationTokenLoader, Config
    except ImportError:   # older/newer Ray without these hooks: the env var alone still applies to children
        return "token"
    try:   # refresh Ray's cached config so this process presents the token too
        Config.initialize("")
        AuthenticationTokenLoader.instance().reset_cache()
    except Exception as e:  # noqa: BLE001 - Ray raises plain exceptions; a half-applied mode must not pass silently
        raise RuntimeFailure(f"Ray token auth could not be enabled in this process ({type(e).__name__}: {e}); "
                             f"check the token at {token_path()} or set RAY_AUTH_TOKEN") from e
    return "token"


def current_mode() -> str:
    """The auth mode Ray reports for this process: 'token' or 'disabled'."""
    try:
        from ray._raylet import AuthenticationMode, get_authentication_mode
        return "token" if get_authentication_mode() == AuthenticationMode.TOKEN else "disabled"
    except Exception:
        return os.environ.get(MODE_VAR, "disabled")


def token() -> str | None:
    """The token this process presents (None when token auth is off): the Flight endpoints
    of the devices require the same one."""
    if os.environ.get(MODE_VAR) != "token":
        return None
    env = os.environ.get("RAY_AUTH_TOKEN")
    if env:
        return env.strip()
    path = token_path()
    return path.read_text().strip() if path.is_file() else None
