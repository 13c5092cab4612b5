#!/usr/bin/env bash
# Fetches the Arrow Flight SQL JDBC driver from Maven Central (checksum-verified) for the
# gateway's JDBC test and for DBeaver users: prints the jar's path. Idempotent.
set -euo pipefail
VERSION=${FLIGHT_SQL_JDBC_VERSION:-18.3.0}
DIR=${COLONY_JDBC_DIR:-$HOME/.cache/colony/jdbc}
JAR="$DIR/flight-sql-jdbc-driver-$VERSION.jar"
URL="https://repo1.maven.org/maven2/org/apache/arrow/flight-sql-jdbc-driver/$VERSION/flight-sql-jdbc-driver-$VERSION.jar"
mkdir -p "$DIR"
if [ ! -s "$JAR" ]; then
    tmp="$JAR.part"
    curl -fsSL --retry 3 -o "$tmp" "$URL"
    want=$(curl -fsSL --retry 3 "$URL.sha1" | cut -c1-40)
    have=$(sha1sum "$tmp" | cut -c1-40)
    if [ "$want" != "$have" ]; then
        echo "checksum mismatch for $URL (want $want, got $have)" >&2
        rm -f "$tmp"
        exit 1
    fi
    mv "$tmp" "$JAR"
fi
echo "$JAR"
