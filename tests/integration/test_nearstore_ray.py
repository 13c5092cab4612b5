"""nearstore on Ray device actors: CSDs are separate actor processes and a merge pulls
its peer's run with a direct actor-to-actor call. Runs in a subprocess, because one
process holds one Ray colony (the session fixture may hold another)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = r"""
import json, sys, tempfile
import colony
from colony.config.builders import csd_colony
from colony.drivers.nearstore import Nescafe
from colony.nearstore import records as R

n = 4
work = tempfile.mkdtemp(prefix="nearstore-ray-")
c = colony.connect(csd_colony(n, work, name="nearstoretest", temp_dir=sys.argv[1], num_cpus=2,
                              object_store="512MiB"))
calls = []
class Client:
    def call(self, device, service, method, *a, **kw):
        calls.append(method)
        return c.call(device, service, method, *a, **kw)
try:
    names = [f"csd{i}" for i in range(n)]
    fs = Nescafe(Client(), names, chunk_size=64 * 1000)
    fs.set_links(None, None)
    data = R.generate(30000, seed=11, distinct_keys=5000)
    ref = R.host_sort(data)
    fs.create("f", data)
    out = {"pids": sorted({c.call(d, "nearstore", "info")["pid"] for d in names})}
    for mode in ("host", "d2d"):
        calls.clear()
        with fs.open("f") as f:
            f.register("mergesort", mode=mode)
            got = f.read()
            out[mode] = {"identical": got == ref, "links": f.report["link_bytes"],
                         "client_methods": sorted(set(calls))}
    out["S"] = len(data)
    print("RESULT" + json.dumps(out))
finally:
    c.shutdown()
"""


@pytest.mark.ray
def test_mergesort_on_ray_device_actors(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    tmp = os.environ.get("COLONY_TEST_RAY_TMP", f"/tmp/ray-{ROOT.name}") + "-nearstore"
    p = subprocess.run([sys.executable, "-c", SCRIPT, tmp], env=env, capture_output=True,
                       text=True, timeout=240, cwd=tmp_path)
    line = next((l for l in p.stdout.splitlines() if l.startswith("RESULT")), None)
    assert line, p.stdout[-3000:] + p.stderr[-3000:]
    r = json.loads(line[len("RESULT"):])
    S = r["S"]
    assert len(r["pids"]) == 4                                   # four device processes
    assert r["host"]["identical"] and r["d2d"]["identical"]
    # D2D: the merge tree moves S/4 + S/4 + S/2 between actors, and none of it via the host
    assert r["d2d"]["links"]["d2d"]["merge"] == S
    assert r["d2d"]["links"]["host_link"] == {"readback": S}
    assert "peer_read" not in r["d2d"]["client_methods"]
    assert r["host"]["links"]["host_link"]["merge"] == 2 * S     # two levels, each S/2 out + S/2 in
