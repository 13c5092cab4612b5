#!/usr/bin/env bash
# Runs every benchmark one after another (never in parallel: 2-core machines are noisy
# enough); each writes its JSON under bench/results/. The code lives in colony.bench.
set -euo pipefail
cd "$(dirname "$0")/.."
COLONY=${COLONY:-.venv/bin/colony}
PY=${PY:-.venv/bin/python}
for b in codec data transfer pacing inject sift nearstore mbwu characterize availability interference; do
  echo "== colony bench $b"
  "$COLONY" bench "$b"
done
echo "== python -m colony.bench.query"; "$PY" -m colony.bench.query
echo "== python -m colony.bench.ray_transfer"; "$PY" -m colony.bench.ray_transfer
for m in deadline query_fail_fast sift_file; do echo "== python -m colony.bench.$m"; "$PY" -m colony.bench.$m; done
