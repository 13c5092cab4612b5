"""Held-out query families differ from every calibration template in their operator set."""

import numpy as np

from colony.bench.query_families import HELD_OUT, calibration_templates, families, operator_set, read_families, render
from colony.cost.calibrate import fill
from colony.data import PARTICLE_SCHEMA
from colony.data.tpch import tables as tpch_tables
from colony.query import plan as qplan
from colony.query.estimate import plan_json


def _ops(sql, schemas):
    return operator_set(plan_json(qplan.to_substrait(sql, schemas)))


def test_every_held_out_family_uses_an_operator_no_calibration_template_has():
    rng = np.random.Generator(np.random.SFC64(0))
    t = tpch_tables(0.001)
    schemas = {"particles": PARTICLE_SCHEMA, **{k: v.schema for k, v in t.items()}}
    cal = {name: _ops(fill(tpl, rng), schemas) for name, tpl in calibration_templates().items()}
    union = set().union(*cal.values())
    for name, tpl in HELD_OUT.items():
        ops = _ops(fill(tpl, rng), schemas)
        assert all(ops - c for c in cal.values()), name
        assert ops - union, (name, "uses only operators some calibration template has")


def test_rendered_file_has_at_least_200_queries_12_families_a_third_held_out(tmp_path):
    p = tmp_path / "f.sql"
    p.write_text(render(16, seed=1))
    recs = read_families(str(p))
    fams = {r["family"] for r in recs}
    held = {r["family"] for r in recs if r["held_out"]}
    assert len(recs) >= 200 and len(fams) >= 12 and len(held) >= len(fams) / 3
    assert set(families()) == fams
    for r in recs[:: 17]:
        qplan.to_substrait(r["sql"], {"particles": PARTICLE_SCHEMA})     # every statement plans
