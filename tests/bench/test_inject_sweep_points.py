"""`colony bench inject --sweep`: every point is the base or differs from it in one knob."""

from __future__ import annotations

from colony.bench.inject import SWEEP_BASE, SWEEP_KNOBS, sweep_points


def test_sweep_points_vary_one_knob_at_a_time_per_size():
    sizes = [16 << 20, 64 << 20]
    points = sweep_points(sizes)
    per_size = 1 + sum(len(v) for v in SWEEP_KNOBS.values())
    assert len(points) == per_size * len(sizes)
    for n in sizes:
        mine = [p for p in points if p["particles"] == n]
        assert [p["varied"] for p in mine].count("base") == 1
        for p in mine:
            differs = [k for k in SWEEP_BASE if p[k] != SWEEP_BASE[k]]
            assert differs == ([] if p["varied"] == "base" else [p["varied"]])
        # both device-side placements are measured at every size
        assert {p["serialize"] for p in mine} == {"inflight", "device"}


def test_device_cpu_is_read_from_proc_or_reported_unknown():
    import os

    from colony.bench.inject import _proc_cpu
    busy = sum(i * i for i in range(200_000))
    assert busy > 0 and _proc_cpu(os.getpid()) > 0
    assert _proc_cpu(None) is None and _proc_cpu(2 ** 30) is None
