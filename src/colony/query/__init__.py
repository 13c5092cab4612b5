"""In-transit queries: SQL -> Substrait planning, statistics, cardinality and operation vectors."""

from colony.query.estimate import OPS, BadPlan, Estimate, Unsupported, estimate
from colony.query.plan import (QueryError, QueryMemoryExceeded, QueryTimeout, ResultTooLarge, SqlError,
                               TableSpec, UnknownColumn, UnknownTable, UnsupportedFunction, to_substrait)
from colony.query.stats import ColumnStats, StatsIndex, TableStats

__all__ = ["OPS", "BadPlan", "Estimate", "Unsupported", "estimate", "QueryError", "QueryMemoryExceeded",
           "QueryTimeout", "ResultTooLarge", "SqlError", "TableSpec", "UnknownColumn", "UnknownTable",
           "UnsupportedFunction", "to_substrait", "ColumnStats", "StatsIndex", "TableStats"]
