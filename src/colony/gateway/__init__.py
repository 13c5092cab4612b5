"""Arrow Flight SQL in front of a colony: any SQL client (ADBC, JDBC, DBeaver, pandas,
polars) queries the tables the colony's devices hold, through the same path as
`colony query` (plan, estimate, decide, execute). See docs/gateway.md."""
