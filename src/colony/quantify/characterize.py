"""Platform characterization: stress-ng stressors normalized to a reference platform,
Arrow kernels and a key-value stress, each with thread sweeps (thesis §4.2, §4.5.4;
seed 001 §4.3.2).

Why: raw bogo-ops/s mean nothing alone; divided by a reference platform's results
they become "reference work units" (the thesis used a Raspberry Pi 4B: RPWU) that
rank platforms per operation. The seeds print no Pi numbers, so the default
reference shipped here is this project's own characterization machine, labelled as such.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from colony.errors import InvalidParameter, SpecFileError, ToolUnavailable

DEFAULT_STRESSORS = ("cpu", "matrix", "vecmath", "memcpy", "qsort", "hsearch", "zlib", "crypt", "switch", "fork")
BBOX_FRACTIONS = (1.0, 0.5, 0.25, 0.1, 0.01)
REFERENCE_FILE = Path(__file__).with_name("reference") / "default.json"


# ------------------------------------------------------------------ stress-ng

def stress_ng_path() -> str:
    p = shutil.which("stress-ng")
    if not p:
        raise ToolUnavailable("stress-ng is not installed; run `bash scripts/sysdeps.sh` "
                              "(or `apt-get install -y stress-ng`)")
    return p


def parse_stress_ng_yaml(text: str) -> dict:
    """The `metrics` list of a `stress-ng --yaml` file as {stressor: metrics}."""
    import yaml
    try:
        doc = yaml.safe_load(text) or {}
    except yaml.YAMLError as e:
        raise SpecFileError(f"stress-ng YAML output is not valid YAML: {e}") from e
    out = {}
    for m in doc.get("metrics") or []:
        if not isinstance(m, dict) or "stressor" not in m:
            continue
        out[str(m["stressor"])] = {
            "bogo_ops": m.get("bogo-ops"),
            "bogo_ops_per_s_real": m.get("bogo-ops-per-second-real-time"),
            "bogo_ops_per_s_cpu": m.get("bogo-ops-per-second-usr-sys-time"),
            "wall_s": m.get("wall-clock-time"),
        }
    info = doc.get("system-info") or {}
    return {"metrics": out, "version": info.get("stress-ng-version"), "cpus": info.get("cpus")}


def run_stress_ng(stressors=DEFAULT_STRESSORS, timeout_s: float = 2.0, instances: int = 1, progress=None) -> dict:
    """Run each stressor alone (`--STRESSOR N --timeout Ts --metrics --yaml F`) and collect bogo-ops/s."""
    exe = stress_ng_path()
    if timeout_s <= 0 or instances < 0:
        raise InvalidParameter("timeout must be > 0 s and instances >= 0 (0 = one per CPU)")
    results, failed, version = {}, {}, None
    with tempfile.TemporaryDirectory(prefix="colony-stress-") as tmp:
        for s in stressors:
            yml = Path(tmp) / f"{s}.yaml"
            cmd = [exe, f"--{s}", str(instances), "--timeout", f"{timeout_s}s", "--metrics", "--yaml", str(yml),
                   "--temp-path", tmp]
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s * 10 + 30, cwd=tmp)
            parsed = parse_stress_ng_yaml(yml.read_text()) if yml.exists() else {"metrics": {}}
            version = version or parsed.get("version")
            m = parsed["metrics"].get(s)
            if proc.returncode != 0 or not m or not m.get("bogo_ops_per_s_real"):
                failed[s] = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or [f"exit {proc.returncode}"]
            else:
                results[s] = m
            if progress:
                progress(s)
    return {"version": version, "timeout_s": timeout_s, "instances": instances, "stressors": results,
            "failed": failed}


# ------------------------------------------------------------------ Arrow kernels

def _acero(table, nodes):
    from pyarrow import acero
    decl = acero.Declaration.from_sequence([acero.Declaration("table_source", acero.TableSourceNodeOptions(table))]
                                           + nodes)
    return decl.to_table(use_threads=True)


def kernel_maximum(table):
    """Max of the squared speed vx²+vy²+vz² (an aggregate: input -> one value)."""
    import pyarrow.compute as pc
    from pyarrow import acero
    sq = pc.add(pc.add(pc.multiply(pc.field("vx"), pc.field("vx")), pc.multiply(pc.field("vy"), pc.field("vy"))),
                pc.multiply(pc.field("vz"), pc.field("vz")))
    return _acero(table, [acero.Declaration("project", acero.ProjectNodeOptions([sq], ["s2"])),
                          acero.Declaration("aggregate", acero.AggregateNodeOptions([("s2", "max", None, "max_s2")]))])


def kernel_normalize(table):
    """Magnitude and unit vector of the velocity appended to every row (input grows by a constant)."""
    import pyarrow.compute as pc
    from pyarrow import acero
    mag = pc.sqrt(pc.add(pc.add(pc.multiply(pc.field("vx"), pc.field("vx")),
                                pc.multiply(pc.field("vy"), pc.field("vy"))),
                         pc.multiply(pc.field("vz"), pc.field("vz"))))
    names = table.column_names
    exprs = [pc.field(n) for n in names] + [mag] + [pc.divide(pc.field(c), mag) for c in ("vx", "vy", "vz")]
    return _acero(table, [acero.Declaration("project", acero.ProjectNodeOptions(exprs, names + ["speed", "ux", "uy", "uz"]))])


def kernel_bbox(table, fraction: float):
    """Rows inside a cube [0, s]³ with s³ = fraction of the unit cube (uniform data keeps ~fraction of rows)."""
    import pyarrow.compute as pc
    from pyarrow import acero
    s = fraction ** (1 / 3)
    cond = (pc.field("x") <= s) & (pc.field("y") <= s) & (pc.field("z") <= s)
    return _acero(table, [acero.Declaration("filter", acero.FilterNodeOptions(cond))])


def arrow_kernels(rows: int = 1 << 20, threads=None, repeats: int = 3, seed: int = 0, chunk: int = 1 << 16,
                  progress=None) -> dict:
    """Time the three kernels on `rows` uniform particles with 1..cores Arrow threads (best of `repeats`)."""
    import pyarrow as pa
    from colony.data import uniform
    if rows < 1 or repeats < 1:
        raise InvalidParameter("rows and repeats must be >= 1")
    threads = list(threads or sorted({1, 2, os.cpu_count() or 1}))
    t = uniform(rows, seed=seed)
    table = pa.Table.from_batches(t.to_batches(max_chunksize=chunk))
    kernels = {"maximum": kernel_maximum, "normalize": kernel_normalize}
    kernels.update({f"bbox_{int(f * 100)}pct": (lambda tb, f=f: kernel_bbox(tb, f)) for f in BBOX_FRACTIONS})
    old = pa.cpu_count()
    out = {"rows": rows, "threads": threads, "kernels": {}}
    try:
        for name, fn in kernels.items():
            pts = []
            for th in threads:
                pa.set_cpu_count(th)
                best, res = float("inf"), None
                for _ in range(repeats):
                    t0 = time.perf_counter()
                    res = fn(table)
                    best = min(best, time.perf_counter() - t0)
                pts.append({"threads": th, "seconds": best, "rows_out": res.num_rows,
                            "mrows_per_s": rows / best / 1e6})
            out["kernels"][name] = pts
            if progress:
                progress(name)
    finally:
        pa.set_cpu_count(old)
    return out


# ------------------------------------------------------------------ key-value stress

def kv_stress(threads=None, iterations: int = 3000, value_size: int = 64, colliding_keys: int = 8,
              progress=None) -> dict:
    """put/get/delete loops on one RocksDB from N threads; keys collide (shared set) or not (per thread).

    Like Faodel's LocalKV test (thesis §4.5.4): it stresses hashing, locking and allocation.
    """
    import rocksdict as r
    threads = list(threads or sorted({1, 2, 4, (os.cpu_count() or 1) * 2}))
    if iterations < 1 or any(t < 1 for t in threads):
        raise InvalidParameter("iterations and thread counts must be >= 1")
    val = b"v" * value_size
    out = {"iterations_per_thread": iterations, "value_size": value_size, "colliding_keys": colliding_keys,
           "modes": {}}
    for mode in ("colliding", "distinct"):
        pts = []
        for n in threads:
            with tempfile.TemporaryDirectory(prefix="colony-kvstress-", dir="/dev/shm" if os.path.isdir("/dev/shm")
                                             else None) as tmp:
                opt = r.Options(raw_mode=True)
                opt.create_if_missing(True)
                db = r.Rdict(tmp, options=opt)
                errors = []

                def work(tid):
                    try:
                        for i in range(iterations):
                            k = (b"k%08d" % (i % colliding_keys)) if mode == "colliding" else b"t%04d-%08d" % (tid, i)
                            db.put(k, val)
                            db.get(k)
                            db.delete(k)
                    except Exception as e:
                        errors.append(str(e))

                ts = [threading.Thread(target=work, args=(i,)) for i in range(n)]
                t0 = time.perf_counter()
                for th in ts:
                    th.start()
                for th in ts:
                    th.join()
                dt = time.perf_counter() - t0
                db.close()
            if errors:
                raise InvalidParameter(f"kv stress failed: {errors[0]}")
            pts.append({"threads": n, "seconds": dt, "ops_per_s": 3 * iterations * n / dt})
            if progress:
                progress(f"{mode}:{n}")
        out["modes"][mode] = pts
    return out


# ------------------------------------------------------------------ normalize, rank, compare

def load_results(path: str | Path) -> dict:
    p = Path(path)
    if not p.is_file():
        raise SpecFileError(f"results file {p} not found; create one with `colony characterize --json {p}`")
    try:
        doc = json.loads(p.read_text())
    except json.JSONDecodeError as e:
        raise SpecFileError(f"{p} is not JSON: {e}") from e
    if "stress_ng" not in doc or "stressors" not in doc["stress_ng"]:
        raise SpecFileError(f"{p} has no stress_ng.stressors; it is not a `colony characterize` results file")
    doc.setdefault("label", p.stem)
    return doc


def normalize(result: dict, reference: dict) -> dict:
    """Each stressor's bogo-ops/s (real time) ÷ the reference's; geometric mean over the common stressors."""
    mine = result["stress_ng"]["stressors"]
    ref = reference["stress_ng"]["stressors"]
    ratios = {s: mine[s]["bogo_ops_per_s_real"] / ref[s]["bogo_ops_per_s_real"]
              for s in sorted(set(mine) & set(ref)) if ref[s].get("bogo_ops_per_s_real")}
    if not ratios:
        raise SpecFileError("the results and the reference share no stressor; run the same stressor list on both")
    gm = math.exp(sum(math.log(v) for v in ratios.values()) / len(ratios)) if all(v > 0 for v in ratios.values()) \
        else 0.0
    return {"ratios": ratios, "geomean": gm, "common": len(ratios)}


def compare(results: list[dict], reference: dict | None = None) -> dict:
    """Normalize several machines' results to one reference and rank them (overall and per stressor)."""
    if not results:
        raise InvalidParameter("give at least one results file to compare")
    ref = reference or results[0]
    rows = []
    for r in results:
        n = normalize(r, ref)
        rows.append({"label": r.get("label"), "machine": r.get("machine", {}), **n})
    rows.sort(key=lambda x: -x["geomean"])
    for i, r in enumerate(rows, 1):
        r["rank"] = i
    stressors = sorted(set.intersection(*(set(r["ratios"]) for r in rows)))
    per = {s: [x["label"] for x in sorted(rows, key=lambda x: -x["ratios"][s])] for s in stressors}
    return {"reference": ref.get("label"), "ranking": rows, "per_stressor_order": per}


def _save(fig, path) -> str:
    import matplotlib.pyplot as plt
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return str(path)


def plots(result: dict, outdir, reference: dict | None = None) -> list[str]:
    """PNG plots: normalized stressors, Arrow kernel thread sweeps, KV stress thread sweeps."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    if reference is not None and result.get("stress_ng", {}).get("stressors"):
        n = normalize(result, reference)
        fig, ax = plt.subplots(figsize=(7, 3.8))
        ax.bar(list(n["ratios"]), list(n["ratios"].values()))
        ax.axhline(1.0, color="k", lw=0.8)
        ax.set_ylabel(f"relative to {reference.get('label')}")
        ax.set_title(f"stress-ng, geometric mean {n['geomean']:.2f}")
        plt.setp(ax.get_xticklabels(), rotation=45, ha="right")
        paths.append(_save(fig, out / "stress_ng_normalized.png"))
    if result.get("arrow"):
        fig, ax = plt.subplots(figsize=(6.4, 4))
        for name, pts in result["arrow"]["kernels"].items():
            ax.plot([p["threads"] for p in pts], [p["seconds"] * 1e3 for p in pts], marker="o", label=name)
        ax.set_xlabel("Arrow threads")
        ax.set_ylabel("ms")
        ax.set_title(f"Arrow kernels on {result['arrow']['rows']:,} particles")
        ax.legend(fontsize=7)
        paths.append(_save(fig, out / "arrow_kernels.png"))
    if result.get("kv"):
        fig, ax = plt.subplots(figsize=(6.4, 4))
        for mode, pts in result["kv"]["modes"].items():
            ax.plot([p["threads"] for p in pts], [p["ops_per_s"] for p in pts], marker="o", label=mode)
        ax.set_xlabel("threads")
        ax.set_ylabel("put+get+delete ops/s")
        ax.set_title("key-value stress (RocksDB)")
        ax.legend()
        paths.append(_save(fig, out / "kv_stress.png"))
    return paths


def default_reference() -> dict:
    """The shipped reference results (this project's characterization machine; see its `note`)."""
    return load_results(REFERENCE_FILE)
