"""Per-connection session state for the Flight SQL gateway.

Flight calls are independent gRPC requests, so "the connection" a ``SET colony.placement``
belongs to is a cookie: every answer to a call without the gateway's cookie carries
``set-cookie: colony_session=<random id>``, and clients that keep cookies (the Flight SQL
JDBC driver; the ADBC driver with ``adbc.flight.sql.rpc.with_cookie_middleware=true``;
arrow-go's cookie middleware) send it back on every later call of that connection. A
client that keeps no cookies falls back to its peer address (one gRPC channel per ADBC
connection, so still one state per connection). The state is also reachable through
Flight's session actions (SetSessionOptions, GetSessionOptions, CloseSession).
"""

from __future__ import annotations

import re
import secrets
import threading
from collections import OrderedDict

import pyarrow.flight as flight

from colony.errors import SqlError
from colony.gateway.sql import PLACEMENTS

COOKIE = "colony_session"
MIDDLEWARE = "session"
OPTIONS = {"colony.placement": PLACEMENTS}      # the options a session has, and their values
_ID = re.compile(r"^[0-9a-f]{32}$")


class SessionCookie(flight.ServerMiddleware):
    """One call's session id: the one the client sent, or a new one it is handed."""

    def __init__(self, sid: str, issued: bool) -> None:
        self.sid, self.issued = sid, issued

    def sending_headers(self):
        return {"set-cookie": f"{COOKIE}={self.sid}; Path=/; HttpOnly"} if self.issued else {}


class SessionCookies(flight.ServerMiddlewareFactory):
    def start_call(self, info, headers):
        for v in headers.get("cookie", []):
            v = v.decode() if isinstance(v, bytes) else v
            for part in v.split(";"):
                name, _, val = part.strip().partition("=")
                if name == COOKIE and _ID.match(val):
                    return SessionCookie(val, False)
        return SessionCookie(secrets.token_hex(16), True)


class Sessions:
    """Options per session (bounded: the least recently used go first)."""

    def __init__(self, limit: int = 4096) -> None:
        self.limit = limit
        self._lock = threading.Lock()
        self._state: OrderedDict[str, dict[str, str]] = OrderedDict()

    @staticmethod
    def _keys(context) -> tuple[str, list[str]]:
        """(the key to read, the keys to write): a cookie sent back names the session; a call
        without one writes under the id it was just handed and its peer address, and reads
        by its peer address (a cookie-less client's only name)."""
        mw = context.get_middleware(MIDDLEWARE)
        peer = "peer:" + context.peer()
        if mw is None:
            return peer, [peer]
        if not mw.issued:
            return "cookie:" + mw.sid, ["cookie:" + mw.sid]
        return peer, ["cookie:" + mw.sid, peer]

    def get(self, context) -> dict[str, str]:
        key, _ = self._keys(context)
        with self._lock:
            if key in self._state:
                self._state.move_to_end(key)
                return dict(self._state[key])
        return {}

    def set(self, context, name: str, value: str) -> None:
        value = validate(name, value)
        _, keys = self._keys(context)
        with self._lock:
            for k in keys:
                self._state.setdefault(k, {})[name] = value
                self._state.move_to_end(k)
            while len(self._state) > self.limit:
                self._state.popitem(last=False)

    def erase(self, context, name: str) -> None:
        _, keys = self._keys(context)
        with self._lock:
            for k in keys:
                self._state.get(k, {}).pop(name, None)

    def close(self, context) -> bool:
        """Forget the session; whether it had any state."""
        key, keys = self._keys(context)
        with self._lock:
            found = [self._state.pop(k, None) for k in {key, *keys}]
        return any(f is not None for f in found)


def validate(name: str, value) -> str:
    """The option's value as stored, or SqlError saying what is allowed."""
    if name not in OPTIONS:
        raise SqlError(f"unknown session option {name!r}; the gateway has {sorted(OPTIONS)}")
    v = str(value).strip().lower()
    if v not in OPTIONS[name]:
        raise SqlError(f"{name} must be one of {list(OPTIONS[name])}, not {value!r}")
    return v
