"""Probe: raw Ray object transfer between two Ray nodes on this machine, by chunk size.

Explains what bounds multi-node injection (docs/runtime.md): 24 x 72 MiB buffers are
put on the head node and received by an actor on a second node (no packing), 1 and 4
in flight, for Ray's default object-manager chunk size and a few others. Each setting
runs in its own subprocess (one Ray per process).

    flock /tmp/colony-bench.lock python -m colony.bench.ray_transfer
"""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

CHUNKS = [None, 1 << 20, 16 << 20, 64 << 20]
N, SIZE = 24, 72 << 20


def probe(chunk, temp_dir):
    import numpy as np
    import pyarrow as pa
    import ray
    from ray.cluster_utils import Cluster

    from colony.runtime import auth
    from colony.runtime.tempdir import use_temp_dir
    auth.enable("token")
    use_temp_dir(temp_dir)
    head = {"num_cpus": 1, "object_store_memory": 1 << 30, "include_dashboard": False, "temp_dir": temp_dir}
    if chunk:
        head["_system_config"] = {"object_manager_default_chunk_size": chunk}
    c = Cluster(initialize_head=True, head_node_args=head)
    try:
        c.add_node(num_cpus=1, object_store_memory=1 << 30, resources={"probe_dev": 1})
        c.wait_for_nodes()
        ray.init(address=c.address)

        @ray.remote(num_cpus=0, resources={"probe_dev": 1}, max_concurrency=4)
        class Sink:
            def echo(self, x):
                return len(memoryview(x))
        a = Sink.remote()
        ray.get(a.echo.remote(b"x"))
        buf = pa.py_buffer(np.random.default_rng(0).integers(0, 255, SIZE, dtype=np.uint8).tobytes())
        out = {}
        for inflight in (1, 4):
            t0 = time.perf_counter()
            pend = []
            for _ in range(N):
                pend.append(a.echo.remote(ray.put(buf)))
                while len(pend) >= inflight:
                    ray.get(pend.pop(0))
            ray.get(pend)
            out[f"inflight_{inflight}_gbps"] = N * SIZE / (time.perf_counter() - t0) / 1e9
        return out
    finally:
        ray.shutdown()
        c.shutdown()


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "child":
        chunk = int(sys.argv[2]) or None
        print(json.dumps(probe(chunk, sys.argv[3])))
        sys.exit(0)
    from colony.bench.common import entry
    entry("colony.bench.ray_transfer", __doc__)
    from colony.machine import describe as machine
    rows = []
    for chunk in CHUNKS:
        p = subprocess.run([sys.executable, __file__, "child", str(chunk or 0), "/tmp/ray-colony-bench"],
                           capture_output=True, text=True, env=dict(os.environ), timeout=300)
        if p.returncode != 0:
            raise SystemExit(p.stderr[-3000:])
        r = json.loads(p.stdout.strip().splitlines()[-1])
        r["chunk_bytes"] = chunk or "default (5 MiB)"
        rows.append(r)
        print(r, flush=True)
    best = max(max(r["inflight_1_gbps"], r["inflight_4_gbps"]) for r in rows)
    out = {"benchmark": "ray_transfer", "machine": machine(), "objects": N, "object_bytes": SIZE, "rows": rows,
           "summary": {"best_internode_gbps": best, "default_chunk_inflight_4_gbps": rows[0]["inflight_4_gbps"]}}
    dest = Path(__file__).parent / "results" / "ray_transfer.json"
    dest.write_text(json.dumps(out, indent=1))
    print(out["summary"])
