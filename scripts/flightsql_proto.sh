#!/usr/bin/env bash
# Regenerates src/colony/gateway/{Flight,FlightSql}_pb2.py (committed) from Arrow's
# Flight.proto and FlightSql.proto. The descriptors come from arrow-go (pinned in
# scripts/flightsql/go.mod, fetched through the Go module proxy); protoc is grpcio-tools
# (pinned below) in a throwaway venv, so the project's own venv is never touched.
# The generated code needs protobuf >= its gencode version at run time (pinned in pyproject).
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
GRPCIO_TOOLS=1.85.1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd scripts/flightsql && "$GO" run . > "$work/flight.desc")
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install -q "grpcio-tools==$GRPCIO_TOOLS"
"$work/venv/bin/python" -m grpc_tools.protoc --descriptor_set_in="$work/flight.desc" \
    --python_out=src/colony/gateway Flight.proto FlightSql.proto
# protoc's import line assumes Flight_pb2 is a top-level module; it lives in this package.
echo "generated: $(ls src/colony/gateway/*_pb2.py | tr '\n' ' ')"
