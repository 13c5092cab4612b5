#!/usr/bin/env bash
# Builds the Go producer (producers/go: injects particles into a colony over Arrow Flight).
# Usage: scripts/go-producer.sh [OUT]   (default OUT: build/colony-inject)
# Needs Go >= 1.25 (PATH, or /usr/local/go/bin); downloads Arrow's Go module through the Go
# module proxy (`go mod download`; nothing is vendored). Exit 3 (with the reason on stderr)
# when no usable Go toolchain is here, so tests can skip saying why.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-build/colony-inject}
GO=$(command -v go || true)
[ -z "$GO" ] && [ -x /usr/local/go/bin/go ] && GO=/usr/local/go/bin/go
if [ -z "$GO" ]; then
  echo "no Go toolchain: install Go >= 1.25 (https://go.dev/dl) into /usr/local/go or PATH" >&2
  exit 3
fi
ver=$("$GO" env GOVERSION | sed 's/^go//')
if [ "$(printf '%s\n' 1.25 "$ver" | sort -V | head -1)" != 1.25 ]; then
  echo "Go $ver is too old for arrow-go v18.8: install Go >= 1.25 (https://go.dev/dl)" >&2
  exit 3
fi
mkdir -p "$(dirname "$OUT")"
OUT=$(cd "$(dirname "$OUT")" && pwd)/$(basename "$OUT")
cd producers/go
"$GO" mod download
"$GO" build -o "$OUT" .
echo "built $OUT with $("$GO" env GOVERSION)"
