#!/usr/bin/env bash
# The codec before issue 17 (git 39352d9, or the ref given) against this tree's batched engines, alternating
# processes; run it under `flock /tmp/colony-heavy.lock`. Writes /tmp/codec_ab_{main,new}_{1,2}.json
# (GB/s, best of 3 per figure); bench/results/codec_engines_vs_main.json came from one such run.
set -euo pipefail
cd "$(dirname "$0")/.."
ref="${1:-39352d9}"
tmp="$(mktemp -d)"; git archive "$ref" src | tar -x -C "$tmp"
cat > "$tmp/ab.py" <<'PY'
import json, time
import colony.codec as C
from colony.data import uniform
t = uniform(256 * 2**20 // 72, seed=0).combine_chunks()
def best(fn, n=3):
    b = 1e9
    for _ in range(n):
        t0 = time.perf_counter(); fn(); b = min(b, time.perf_counter() - t0)
    return b
out = {"src": C.__file__}
for codec in ("outer-lz4", "outer-zstd", "outer-deflate"):
    for th in (1, 2):
        buf = C.pack(t, codec, threads=th)
        out[f"{codec}_t{th}"] = {
            "serialize_gbps": t.nbytes / best(lambda: C.pack(t, codec, threads=th)) / 1e9,
            "deserialize_verified_gbps": t.nbytes / best(lambda: C.unpack(buf, threads=th)) / 1e9,
            "deserialize_unverified_gbps": t.nbytes / best(lambda: C.unpack(buf, threads=th, verify=False)) / 1e9}
print(json.dumps(out))
PY
for i in 1 2; do
  PYTHONPATH="$tmp/src" .venv/bin/python "$tmp/ab.py" > "/tmp/codec_ab_main_$i.json"
  .venv/bin/python "$tmp/ab.py" > "/tmp/codec_ab_new_$i.json"
done
rm -rf "$tmp"
