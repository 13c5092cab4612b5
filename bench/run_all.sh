#!/usr/bin/env bash
# Runs every benchmark script in bench/ one after another (never in parallel: 2-core
# machines are noisy enough); each writes its JSON under bench/results/.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
for script in bench/*.py; do
  echo "== $script"
  "$PY" "$script"
done
