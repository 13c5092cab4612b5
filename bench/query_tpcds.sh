#!/usr/bin/env bash
# Decision-engine benchmark on TPC-DS (issue 13's "any schema"): the 99 queries as DuckDB's
# tpcds extension ships them (src/colony/bench/queries/tpcds/queries.sql) over its dsdgen
# data at scale factor 0.1 (colony.data.tpcds: the pinned DuckDB wheel fetched from the
# package index, run in a child process). Neither the data nor the queries were seen by
# calibration or by anyone tuning Colony before the thirty-ninth stop. Uses the devices'
# calibration records as they are (a stale one is recalibrated). Run under the shared lock:
#   flock /tmp/colony-heavy.lock bench/query_tpcds.sh
# SUFFIX names the run (bench/results/query_tpcds${SUFFIX}.json).
set -uo pipefail
cd "$(dirname "$0")/.."
COLONY=${COLONY:-.venv/bin/colony}
D=${DATA:-/tmp/colony-tpcds-sf01}
[ -f "$D/store_sales.parquet" ] || .venv/bin/python -m colony.data.tpcds "$D" --sf 0.1 || exit 1
mkdir -p bench/results
uptime
timeout 1500 "$COLONY" bench query --queries src/colony/bench/queries/tpcds/queries.sql --data "$D" \
  --calib-runs ${CALIB_RUNS:-240} --calib-rows ${CALIB_ROWS:-1200000} \
  --json bench/results/query_tpcds${SUFFIX:-}.json > /tmp/colony-query_tpcds.log 2>&1
rc=$?
uptime
exit $rc
