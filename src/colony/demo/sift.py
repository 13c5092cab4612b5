"""`colony demo` part: a time-stepped simulation injects snapshots; the colony sifts them into tracks.

The lead wires :func:`sift_demo` into ``colony demo``. It works on any colony with
``call(device, service, method, ...)`` whose SmartNIC devices host the ``sift`` service:
a Ray colony from ``colony.connect()`` or an in-process ``LocalColony``.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from colony.data import Simulation
from colony.drivers.sift import Sifter, StageReport


def _members(colony) -> list[str]:
    """SmartNIC devices of the colony (all devices when it has none)."""
    devs = colony.devices()
    return [d.name for d in devs if d.role == "smartnic"] or [d.name for d in devs]


def sift_demo(colony, report_dir: str | Path, n_particles: int = 20_000, steps: int = 20, k: int = 2,
              n_bins: int | None = None, threshold_rows: int = 50_000, seed: int = 0) -> dict:
    """Run a simulation for ``steps`` time steps, sift its snapshots into tracks, plot the stages.

    Returns summary numbers and the path of a PNG: split vs publish time per stage, and
    the final bin sizes (balance).
    """
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    members = _members(colony)
    colony.place("sift", members)          # PEs on the SmartNICs (a no-op if already placed)
    report_dir = Path(report_dir)
    report_dir.mkdir(parents=True, exist_ok=True)
    sifter = Sifter(colony, members, k=k, n_bins=n_bins or 4 * len(members), threshold_rows=threshold_rows)
    sim = Simulation(n_particles=n_particles, n_ranks=len(members), seed=seed)
    stage_tot: dict[int, StageReport] = {s: StageReport(s) for s in range(1, sifter.plan.stages + 1)}

    def add(reps):
        for r in reps:
            t = stage_tot[r.stage]
            t.rows += r.rows
            t.split_s += r.split_s
            t.pack_s += r.pack_s
            t.publish_s += r.publish_s
            t.parts += r.parts

    t0 = time.perf_counter()
    injected = 0
    for _ in range(steps):
        for rank, snap in sim.step():
            sifter.inject(snap, members[rank], source=f"rank{rank}", seq=sim.time - 1)
            injected += snap.num_rows
        add(sifter.pump())                 # PEs over their threshold compact while the simulation runs
    add(sifter.run())                      # drain: the last wave through every stage
    wall = time.perf_counter() - t0
    bins = sifter.bins()
    sizes = np.array([bins.get(b, 0) for b in range(sifter.plan.total_bins)], float)
    placed = int(sizes.sum())
    probe = sifter.track(0)
    track_ok = probe is not None and probe.column("time").to_pylist() == list(range(steps))

    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4))
    st = sorted(stage_tot)
    split = [stage_tot[s].split_s for s in st]
    pub = [stage_tot[s].pack_s + stage_tot[s].publish_s for s in st]
    x = np.arange(len(st))
    a1.bar(x - 0.2, split, 0.4, label="split")
    a1.bar(x + 0.2, pub, 0.4, label="publish (pack + deliver)")
    a1.set_xticks(x, [f"stage {s}" for s in st])
    a1.set_ylabel("seconds (sum over PEs)")
    a1.set_title(f"{1 << k}-way x {sifter.plan.stages} stages, {len(members)} devices")
    a1.legend()
    a2.bar(np.arange(len(sizes)), sizes, color="tab:green")
    a2.axhline(sizes.mean(), color="k", lw=0.8, ls="--", label="mean")
    a2.set_xlabel("final bin")
    a2.set_ylabel("rows")
    a2.set_title(f"bin balance: max/mean {sizes.max() / sizes.mean():.2f}")
    a2.legend()
    fig.tight_layout()
    fig_path = report_dir / "sift_stages.png"
    fig.savefig(fig_path, dpi=110)
    plt.close(fig)
    return {
        "devices": members, "particles": n_particles, "steps": steps, "rows_injected": injected,
        "rows_placed": placed, "exactly_once": placed == injected, "k": k, "stages": sifter.plan.stages,
        "bins": sifter.plan.total_bins, "bin_max_over_mean": float(sizes.max() / sizes.mean()),
        "split_s_per_stage": split, "publish_s_per_stage": pub, "wall_s": wall,
        "track_of_particle_0_complete": track_ok, "figure": str(fig_path),
    }
