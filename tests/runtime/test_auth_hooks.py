"""auth.enable reports a failing Ray hook instead of swallowing it (issue 14)."""

import pytest

from colony.errors import RuntimeFailure
from colony.runtime import auth


def test_failing_hook_is_reported(monkeypatch, tmp_path):
    import ray._raylet as raylet
    monkeypatch.setenv("RAY_AUTH_TOKEN_PATH", str(tmp_path / "token"))
    monkeypatch.delenv("RAY_AUTH_TOKEN", raising=False)
    monkeypatch.setenv(auth.MODE_VAR, "disabled")

    class BrokenConfig:             # Ray's Config type is immutable: stand in a failing one
        @staticmethod
        def initialize(_):
            raise OSError("config store unreadable")
    monkeypatch.setattr(raylet, "Config", BrokenConfig)
    with pytest.raises(RuntimeFailure, match="could not be enabled .*config store unreadable"):
        auth.enable("token")


def test_unwritable_token_path_is_typed(monkeypatch, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    monkeypatch.setenv("RAY_AUTH_TOKEN_PATH", str(blocker / "token"))
    monkeypatch.delenv("RAY_AUTH_TOKEN", raising=False)
    monkeypatch.setenv(auth.MODE_VAR, "disabled")
    with pytest.raises(RuntimeFailure, match="cannot create the Ray auth token"):
        auth.enable("token")
