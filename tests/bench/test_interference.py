"""The interference benchmark's parts: the bulk-synchronous job and the summary arithmetic.
(The benchmark itself runs under the shared lock: colony bench interference.)"""

import os

import pytest

from colony.bench.interference import pin, run_bsp, summarize


def test_bsp_job_runs_every_iteration_through_the_barrier_on_its_cores():
    cores = sorted(os.sched_getaffinity(0))[:1]
    seen = {}
    r = run_bsp(2, 12, 64, 2, cores, ready=lambda ranks: seen.update(ranks=ranks))
    assert len(r["iter_s"]) == 12 and all(t > 0 for t in r["iter_s"])
    assert sum(r["iter_s"]) <= r["wall_s"] + 0.05                  # timed inside the wall window
    assert len(seen["ranks"]) == 2 and len(r["worker_cpu_s"]) == 2


def test_pin_sets_every_thread_of_a_process():
    cores = sorted(os.sched_getaffinity(0))
    try:
        assert pin(os.getpid(), cores[:1]) == cores[:1]
    finally:
        pin(os.getpid(), cores)


def _row(rep, wall, daemon=0.0, device=None, ops=0):
    return {"repeat": rep, "wall_s": wall, "iter_s": [wall / 4] * 4, "iter_median_s": wall / 4,
            "iter_p99_s": wall / 4, "iter_max_s": wall / 4, "daemon_cpu_s": daemon, "daemon_device": device,
            "ray_other_cpu_s": 0.0, "service_ops": ops, "service_bytes": ops * 10}


def test_summary_pairs_repeats_and_computes_the_seeds_expected_slowdown():
    runs = {"alone": [_row(0, 10.0), _row(1, 11.0), _row(2, 9.0)],
            "ckpt-host": [_row(0, 13.8, 0.7, "hostd", 5), _row(1, 14.3, 0.7, "hostd"), _row(2, 13.5, 0.7, "hostd")],
            "ckpt-device": [_row(0, 10.0, 3.0, "nic0"), _row(1, 11.0, 3.0, "nic0"), _row(2, 9.0, 3.0, "nic0")]}
    s = summarize(runs, host_cores=[0], device_cores=[1], client_cores=[1], params={}, load_start=(1, 1, 1),
                  affinity={})
    host = s["cases"]["ckpt-host"]
    assert host["slowdown_vs_alone"]["median"] == pytest.approx(0.38)           # 13.8/10, 14.3/11, 13.5/9
    assert host["slowdown_vs_alone"]["max"] == pytest.approx(0.5)
    assert host["worst_run_slowdown"] == pytest.approx(14.3 / 10 - 1)
    assert host["expected_slowdown_from_cpu"]["median"] == pytest.approx(0.07)    # 0.7 CPU s / 10 s on 1 core
    assert s["cases"]["ckpt-device"]["expected_slowdown_from_cpu"]["median"] == 0.0
    assert s["headline"]["ckpt-host"]["median_slowdown_pct"] == 38.0
    assert s["seeds"]["median_slowdown_pct"] == 38
