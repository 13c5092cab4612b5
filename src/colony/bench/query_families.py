"""Query families for the decision-engine benchmark: SQL templates with random constants.

A family is a template (its operators and shape). Calibration families are templates the
device's calibration also runs (``colony.cost.calibrate``); held-out families use an
operator, expression or clause no calibration template has (checked by
:func:`operator_set`, tested), so their errors measure generalization, not recall.
Written as one statement per line with ``-- family: NAME [held-out]`` headers, the format
``colony bench query --queries`` reads.
"""

from __future__ import annotations

import numpy as np

from colony.cost.calibrate import LTEMPLATES, TEMPLATES, fill

# calibration templates the benchmark samples (particles)
SEEN = ("T1", "T5", "T6", "T11", "T12", "T14", "T17", "T21")
HELD_OUT = {
    # case expression, modulus, having
    "H1": ("select particle_id % {c} as g, sum(case when vx > 0 then 1 else 0 end) as pos, max(vz) - min(vz) as r "
           "from particles where x between {p} and {p2} group by g having count(*) > {c}"),
    # select distinct, exp
    "H2": "select distinct particle_id & {m} as g from particles where exp(x) > {e}",
    # ln, multi-key sort, offset
    "H3": "select id, ln(1 + abs(vx)) as l from particles where y < {p} order by l desc, id limit {n} offset {o}",
    # semi join (in-subquery)
    "H4": "select count(*) from particles where id in (select id from particles where vx > {v}) and x < {p}",
    # stddev aggregate over a computed value, one group per particle
    "H5": ("select particle_id, avg(vx * vx + vy * vy) as e, stddev(vz) as s from particles "
           "where abs(vz) < {va} group by particle_id"),
    # sine; a range on the stored order (ids are written in order), no calibration template has one
    "H6": "select id, sin(vz) as s, x, y from particles where id >= {i}",
}


def families() -> dict[str, tuple[str, bool]]:
    """name -> (template, held out)."""
    return {**{t: (TEMPLATES[t], False) for t in SEEN}, **{h: (s, True) for h, s in HELD_OUT.items()}}


def render(per_family: int = 16, seed: int = 0) -> str:
    rng = np.random.Generator(np.random.SFC64(seed))
    out = ["-- Decision-engine benchmark: particle query families (colony.bench.query_families).",
           f"-- {len(SEEN)} calibration families, {len(HELD_OUT)} held out; {per_family} queries each."]
    for name, (tpl, held) in families().items():
        out.append(f"-- family: {name}" + (" held-out" if held else ""))
        out.extend(fill(tpl, rng) for _ in range(per_family))
    return "\n".join(out) + "\n"


def read_families(path: str) -> list[dict]:
    """Statements of a query file with the family header above each (``family``: None and
    ``held_out``: False where a file has no headers)."""
    fam, held, out = None, False, []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            s = line.strip()
            if s.lower().startswith("-- family:"):
                parts = s.split(":", 1)[1].split()
                fam, held = (parts[0] if parts else None), "held-out" in parts[1:]
                continue
            if not s or s.startswith("--") or s.startswith("#"):
                continue
            s = s.rstrip(";").strip()
            if s:
                out.append({"sql": s, "family": fam, "held_out": held})
    return out


def operator_set(plan: dict) -> set[str]:
    """Relations, join types, functions and aggregates a Substrait plan (JSON) uses."""
    names = {}
    for ext in plan.get("extensions", []):
        f = ext.get("extensionFunction")
        if f:
            names[f.get("functionAnchor", 0)] = f["name"].split(":")[0]
    ops: set[str] = set()

    def walk(o):
        if isinstance(o, dict):
            for k, v in o.items():
                if k in ("read", "filter", "project", "aggregate", "sort", "fetch", "join", "cross", "set"):
                    ops.add(k)
                    if k == "join" and isinstance(v, dict):
                        ops.add(v.get("type", "JOIN_TYPE_INNER"))
                    if k == "fetch" and isinstance(v, dict) and (v.get("offset") or "offsetExpr" in v):
                        ops.add("offset")
                if k in ("ifThen", "singularOrList", "subquery"):
                    ops.add(k)
                if k == "sorts" and isinstance(v, list) and len(v) > 1:
                    ops.add("multi-key sort")
                if k in ("scalarFunction", "measure") and isinstance(v, dict):
                    ops.add(names.get(v.get("functionReference", 0), "?"))
                if k == "groupings" and isinstance(v, list) and any(g.get("expressionReferences") for g in v) \
                        and not o.get("measures"):
                    ops.add("distinct")
                walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)
    walk(plan.get("relations", []))
    return ops


def calibration_templates() -> dict[str, str]:
    return {**TEMPLATES, **LTEMPLATES}
