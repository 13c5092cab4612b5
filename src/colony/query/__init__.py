"""In-transit queries: SQL -> Substrait planning, statistics, cardinality and operation vectors."""

from colony.query.estimate import OPS, Estimate, estimate
from colony.query.plan import TableSpec, to_substrait
from colony.query.stats import ColumnStats, StatsIndex, TableStats

__all__ = ["OPS", "Estimate", "estimate", "TableSpec", "to_substrait", "ColumnStats", "StatsIndex", "TableStats"]
