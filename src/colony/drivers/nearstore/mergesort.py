"""Distributed merge sort over CSDs, in the two modes the thesis compares.

- ``d2d`` (INSTANT): one plan of sorts and a merge tree, run by COSTA under block locks;
  a merge pulls its right-hand input from the peer device directly (device to device).
- ``host`` (Intel OAS baseline): the application sequences the phases itself: all sorts,
  then per tree level it copies each right-hand run device -> host -> device (chunk by
  chunk, store and forward, like ``cp``) and merges locally.

Both end with the host reading the sorted file back. Every merge takes the lower file
part as its left input, and merges prefer the left input on ties, so the result is
byte-identical to one stable host sort of the whole file.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from colony.errors import NearStoreError
from colony.nearstore.address import Extent
from colony.drivers.nearstore.costa import Costa, Policy, SubOp
from colony.drivers.nearstore.nescafe import Nescafe, NFile, register_offload


MODES = ("d2d", "host")


def mergesort(fs: Nescafe, parts: list[Extent], mode: str = "d2d",
              policy: Policy | None = None, **params: Any) -> tuple[Extent, dict]:
    """Sort the records stored in ``parts`` (file order). Returns the extent holding the
    sorted file and a report: phase times, per-op times, bytes per link and phase."""
    if mode not in MODES:
        raise NearStoreError(f"mergesort mode {mode!r} is not one of {MODES}")
    if not parts:
        raise NearStoreError("mergesort needs a file with at least one part")
    op_params = {"record_size": params.get("record_size", 100), "key_size": params.get("key_size", 10)}
    fs.reset_counters()
    t0 = time.time()
    temps: list[Extent] = []
    ops: list[SubOp] = []
    costa = Costa(fs.client, fs.directory)
    report: dict[str, Any] = {"mode": mode, "devices": len(parts),
                              "bytes": sum(p.nbytes for p in parts)}

    sorted_runs = []
    for i, ext in enumerate(parts):
        dev = costa.owner(ext)
        out = fs.client.call(dev, "nearstore", "allocate", ext.nbytes)
        temps.append(out)
        ops.append(SubOp(f"sort{i}", dev, "sort", [ext], out, dict(op_params), phase="sort"))
        sorted_runs.append(out)

    if mode == "d2d":
        runs, level = sorted_runs, 0
        while len(runs) > 1:
            nxt = []
            for j in range(0, len(runs) - 1, 2):
                a, b = runs[j], runs[j + 1]
                dev = costa.owner(a)
                out = fs.client.call(dev, "nearstore", "allocate", a.nbytes + b.nbytes)
                temps.append(out)
                ops.append(SubOp(f"merge{level}.{j // 2}", dev, "merge", [a, b], out,
                                 dict(op_params), phase="merge"))
                nxt.append(out)
            if len(runs) % 2:
                nxt.append(runs[-1])
            runs, level = nxt, level + 1
        costa.run(ops, policy)
        final = runs[0]
        sort_end = max(s.result["ended"] for s in ops if s.phase == "sort")
        merge_end = max((s.result["ended"] for s in ops if s.phase == "merge"), default=sort_end)
        report["sort_s"] = sort_end - t0
        report["merge_s"] = max(0.0, merge_end - sort_end)
        report["merge_copy_s"] = None     # streamed inside the merge: not separable
        report["merge_exec_s"] = None
        report["levels"] = level
    else:
        if policy is not None:
            raise NearStoreError("a COSTA policy applies to mode 'd2d'; the host mode is "
                                 "sequenced by the application (Intel OAS baseline)")
        sorts = list(ops)
        with ThreadPoolExecutor(max_workers=max(2, len(parts)), thread_name_prefix="oas") as pool:
            _run_all(fs, costa, pool, sorts)
            sort_end = time.time()
            copy_s = exec_s = 0.0
            runs, level = sorted_runs, 0
            while len(runs) > 1:
                pairs = [(runs[j], runs[j + 1]) for j in range(0, len(runs) - 1, 2)]
                # step 2: copy each right-hand run through the host to the left device
                t = time.time()
                copies = []
                for a, b in pairs:
                    dst = fs.client.call(costa.owner(a), "nearstore", "allocate", b.nbytes)
                    temps.append(dst)
                    copies.append(dst)
                list(pool.map(lambda ab: fs.host_copy(ab[0], ab[1], phase="merge"),
                              [(b, c) for (_, b), c in zip(pairs, copies)]))
                copy_s += time.time() - t
                # step 3: merge locally on the left device
                t = time.time()
                merges = []
                for k, ((a, b), c) in enumerate(zip(pairs, copies)):
                    dev = costa.owner(a)
                    out = fs.client.call(dev, "nearstore", "allocate", a.nbytes + b.nbytes)
                    temps.append(out)
                    merges.append(SubOp(f"merge{level}.{k}", dev, "merge", [a, c], out,
                                        dict(op_params), phase="merge"))
                _run_all(fs, costa, pool, merges)
                ops.extend(merges)
                exec_s += time.time() - t
                nxt = [m.output for m in merges] + ([runs[-1]] if len(runs) % 2 else [])
                runs, level = nxt, level + 1
        final = runs[0]
        merge_end = time.time()
        report["sort_s"] = sort_end - t0
        report["merge_s"] = merge_end - sort_end
        report["merge_copy_s"] = copy_s
        report["merge_exec_s"] = exec_s
        report["levels"] = level

    report["ops"] = [{"id": s.id, "device": s.device, "phase": s.phase, "bytes": s.output.nbytes,
                      "issued": s.result["issued"] - t0, "started": s.result["started"] - t0,
                      "ended": s.result["ended"] - t0} for s in ops]
    report["_temps"] = [e for e in temps if e != final]
    return final, report


def _run_all(fs: Nescafe, costa: Costa, pool: ThreadPoolExecutor, subs: list[SubOp]) -> None:
    def go(s: SubOp) -> SubOp:
        s.result = fs.client.call(s.device, "nearstore", "run", s.id, s.op, s.inputs, s.output,
                                  params=s.params, phase=s.phase, directory=costa.directory)
        s.output = s.result["output"]
        return s
    Costa.wait([pool.submit(go, s) for s in subs])


def _mergesort_offload(fs: Nescafe, f: NFile, params: dict) -> tuple[Extent, dict]:
    final, report = mergesort(fs, f.fiemap(), **params)
    fs.free(report.pop("_temps"))
    return final, report


register_offload("mergesort", _mergesort_offload)
