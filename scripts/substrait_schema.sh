#!/usr/bin/env bash
# Regenerates src/colony/query/_substrait_schema.py (committed): the Substrait message table
# of the C plan decoder, from substrait-protobuf's descriptors. SUBSTRAIT is the spec version
# DataFusion's producer writes (a plan's version.minorNumber; datafusion pinned in pyproject):
# bump both together. A throwaway venv, so the project's venv (protobuf 7) is never touched.
set -euo pipefail
cd "$(dirname "$0")/.."
SUBSTRAIT=0.85.0
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install -q "substrait-protobuf==$SUBSTRAIT" "protobuf==5.29.5"
"$work/venv/bin/python" scripts/substrait_schema.py "$SUBSTRAIT" src/colony/query/_substrait_schema.py
echo "generated: src/colony/query/_substrait_schema.py"
