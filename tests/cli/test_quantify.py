"""`colony mbwu|availability|characterize|cost` through the CLI."""

import json

from typer.testing import CliRunner

from colony.cli import app

runner = CliRunner()


def test_availability_benefit_json(tmp_path):
    out = tmp_path / "a.json"
    r = runner.invoke(app, ["availability", "benefit", "--m", "10", "--n", "4", "--c", "4", "--f", "2",
                            "--json", str(out)])
    assert r.exit_code == 0, r.output
    assert json.loads(out.read_text())["relative_benefit"] > 6


def test_availability_rejects_bad_m():
    r = runner.invoke(app, ["availability", "benefit", "--m", "2", "--n", "4", "--c", "4", "--f", "2"])
    assert r.exit_code != 0 and "must be an integer >= 3" in str(r.exception)


def test_cost_and_seeds(tmp_path):
    r = runner.invoke(app, ["cost", "energy", "--watts", "42.24", "--cooling"])
    assert r.exit_code == 0 and "$63.79/year" in r.output
    out = tmp_path / "g.json"
    r = runner.invoke(app, ["cost", "glinda", "--json", str(out)])
    assert r.exit_code == 0 and json.loads(out.read_text())["procurement"]["smartnic_node_usd"] == 19490
    r = runner.invoke(app, ["mbwu", "seeds"])
    assert r.exit_code == 0 and "5.95 MBWUs" in r.output


def test_efficiency_from_spec(tmp_path):
    from pathlib import Path
    import colony.quantify.metrics as m
    spec = Path(m.__file__).with_name("specs") / "seed_network_implied.toml"
    out = tmp_path / "e.json"
    r = runner.invoke(app, ["mbwu", "efficiency", "--spec", str(spec), "--host", "host", "--host-mbwus", "5.2",
                            "--embedded", "embedded", "--embedded-mbwus", "0.37", "--json", str(out)])
    assert r.exit_code == 0, r.output
    assert round(json.loads(out.read_text())["benefit"]["usd"], 4) == 0.5786


def test_characterize_compare(tmp_path):
    files = []
    for label, cpu in (("a", 100.0), ("b", 300.0)):
        p = tmp_path / f"{label}.json"
        p.write_text(json.dumps({"label": label, "machine": {"cpu_model": label},
                                 "stress_ng": {"stressors": {"cpu": {"bogo_ops_per_s_real": cpu}}}}))
        files.append(str(p))
    out = tmp_path / "cmp.json"
    r = runner.invoke(app, ["characterize", "--compare", *files, "--json", str(out)])
    assert r.exit_code == 0, r.output
    res = json.loads(out.read_text())
    assert [x["label"] for x in res["ranking"]] == ["b", "a"] and abs(res["ranking"][0]["geomean"] - 3.0) < 1e-9
