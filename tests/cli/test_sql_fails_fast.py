"""`colony query` parses and plans SQL against the known schema before anything slow (issue 14):
no colony start and no calibration happen before a syntax error is reported."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

import colony.cli as cli
import colony.cli.query as cq

COLONY = Path(sys.executable).with_name("colony")


@pytest.mark.parametrize("local", [True, False])
def test_syntax_error_before_any_colony_or_calibration(monkeypatch, capsys, local):
    calls = []
    monkeypatch.setattr(cq, "_open", lambda *a, **k: calls.append(a) or (_ for _ in ()).throw(
        AssertionError("a colony was started before the SQL was checked")))
    import colony.drivers.query as qc
    monkeypatch.setattr(qc, "ensure_calibrated", lambda *a, **k: calls.append("calibrate"))
    with pytest.raises(SystemExit) as e:
        cli.main(["query", *(["--local"] if local else []), "SELEC broken"])
    assert e.value.code == 2 and calls == []
    err = capsys.readouterr().err
    assert err.startswith("error: SQL error") and "SELEC" in err


def test_unknown_column_fails_fast_too(monkeypatch, capsys):
    monkeypatch.setattr(cq, "_open", lambda *a, **k: (_ for _ in ()).throw(AssertionError("started")))
    with pytest.raises(SystemExit):
        cli.main(["query", "--local", "select nosuch from particles"])
    assert "nosuch" in capsys.readouterr().err


def test_fresh_home_gets_the_error_without_side_effects(tmp_path):
    env = {**{k: v for k, v in os.environ.items() if k != "COLONY_CALIBRATION_DIR"},   # the default, under HOME
           "HOME": str(tmp_path), "COLONY_LOG_DIR": str(tmp_path / "logs")}
    r = subprocess.run([str(COLONY), "query", "--local", "SELEC broken"], capture_output=True, text=True, env=env,
                       timeout=120)
    assert r.returncode == 2 and r.stderr.startswith("error: SQL error")
    assert len(r.stderr.strip().splitlines()) <= 2
    assert not (tmp_path / ".cache").exists()            # no models, no calibration, no colony state
