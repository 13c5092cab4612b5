"""The particle schema of the seeds (thesis Table 5.3)."""

import pyarrow as pa

from colony.errors import DataError

PARTICLE_SCHEMA = pa.schema([
    ("id", pa.uint64()),           # unique record id
    ("time", pa.uint64()),         # time step of the snapshot
    ("particle_id", pa.uint64()),  # identity of the particle across time
    ("x", pa.float64()), ("y", pa.float64()), ("z", pa.float64()),      # in [0, 1]
    ("vx", pa.float64()), ("vy", pa.float64()), ("vz", pa.float64()),   # in [-100, 100]
])

POSITION_RANGE = (0.0, 1.0)
VELOCITY_RANGE = (-100.0, 100.0)


def validate_particles(table: pa.Table) -> pa.Table:
    """Check a table carries the particle columns with the seeds' types; return it unchanged."""
    missing = [f.name for f in PARTICLE_SCHEMA if f.name not in table.column_names]
    if missing:
        raise DataError(f"particle table lacks columns {missing}; expected {PARTICLE_SCHEMA.names}")
    for f in PARTICLE_SCHEMA:
        got = table.schema.field(f.name).type
        if got != f.type:
            raise DataError(f"column {f.name!r} has type {got}, expected {f.type}; cast it first")
    return table
