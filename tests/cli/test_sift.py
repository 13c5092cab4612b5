"""CLI and demo entry points of sifting (in-process, small)."""

import json

from typer.testing import CliRunner

from colony.cli import app
from colony.config.builders import devices as devices_config
from colony.runtime.local import LocalColony
from colony.demo.sift import sift_demo


def test_cli_sift_run_json(tmp_path):
    out = tmp_path / "r.json"
    res = CliRunner().invoke(app, ["sift", "run", "--dataset", "simulation", "--rows", "4000", "--steps", "5",
                                   "--k", "2", "--bins", "16", "--track", "7", "--bin", "3", "--json", str(out)])
    assert res.exit_code == 0, res.output
    r = json.loads(out.read_text())
    assert r["bin_rows_total"] == r["rows"] == 4000 and len(r["stages"]) == 2
    assert r["track_rows"] == 5


def test_cli_sift_ais_hash():
    res = CliRunner().invoke(app, ["sift", "run", "--dataset", "ais", "--k", "4", "--routing", "hash"])
    assert res.exit_code == 0, res.output
    assert "exactly the injected count" in res.output


def test_sift_demo(tmp_path):
    lc = LocalColony(devices_config({"host": {"role": "host"}, **{f"nic{i}": {"role": "smartnic", "services": {"sift": {}}}
                                                   for i in range(3)}}))
    r = sift_demo(lc, tmp_path, n_particles=2000, steps=6, threshold_rows=3000)
    assert r["exactly_once"] and r["rows_placed"] == 12000 and r["track_of_particle_0_complete"]
    assert r["devices"] == ["nic0", "nic1", "nic2"]
    assert (tmp_path / "sift_stages.png").stat().st_size > 1000
