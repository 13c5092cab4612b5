#!/usr/bin/env bash
# Decision-engine probes on the embedded Ray colony: the query files of
# src/colony/bench/queries/probes over colony.data.probes' four schemas (the column types
# and shapes users' Parquet files have and the benchmark schemas do not: a pandas
# categorical, nanosecond timestamps, struct/list/map and binary columns, a Zipf string key,
# a time series with range joins, an HPC job table with its telemetry). Uses the devices' calibration records as they are (a
# benchmark run made them; calibrates only what has none). Run under the shared lock:
#   flock /tmp/colony-heavy.lock bench/query_probes.sh
# SUFFIX names the run (bench/results/query_probe_<schema>${SUFFIX}.json).
set -uo pipefail
cd "$(dirname "$0")/.."
COLONY=${COLONY:-.venv/bin/colony}
PY=${PY:-.venv/bin/python}
mkdir -p bench/results
for s in events sensors nested jobs; do
  d=/tmp/colony-probe-$s
  [ -f "$d/.done" ] || { $PY -c "from colony.data.probes import write; write('$d', '$s')" && touch "$d/.done"; }
  timeout 900 "$COLONY" bench query --queries src/colony/bench/queries/probes/$s.sql --data "$d" --calib-runs 240 \
    --calib-rows 1200000 --json bench/results/query_probe_$s${SUFFIX:-}.json > /tmp/colony-query_probe_$s.log 2>&1
  echo "$s: rc $?"
done
