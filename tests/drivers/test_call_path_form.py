"""The call-path fit keeps the form its own leave-one-out error prefers: none, a per-call
offset over models that already time the execution path, or a slope where the probes show one."""

import numpy as np

from colony.drivers.query import _call_path_fit


def test_narrow_probes_with_a_constant_overhead_keep_the_offset_form():
    rng = np.random.default_rng(0)
    raw = rng.uniform(0.040, 0.060, 12)                 # probes of similar size
    act = (raw + 0.012) * rng.uniform(0.93, 1.07, 12)   # a 12 ms call overhead, noisy
    form, m, loo = _call_path_fit(raw, act)
    assert form == "offset" and m.b == 1.0 and abs(m.a - 0.012) < 0.005 and loo < 15
    assert abs(m.predict(0.150) / 0.162 - 1) < 0.05    # a larger query keeps its own size


def test_a_real_slope_is_kept_where_the_probes_show_one():
    raw = np.linspace(0.01, 0.5, 12)
    form, m, _ = _call_path_fit(raw, 0.002 + 2.0 * raw)
    assert form == "slope" and abs(m.b - 2.0) < 0.05


def test_no_correction_is_kept_where_the_probes_show_none():
    raw = np.linspace(0.02, 0.2, 12)
    form, m, loo = _call_path_fit(raw, raw.copy())      # every form fits exactly: the simplest is kept
    assert form == "none" and (m.a, m.b) == (0.0, 1.0) and loo == 0.0


def test_no_slope_from_probes_of_one_size():
    rng = np.random.default_rng(2)
    raw = rng.uniform(0.030, 0.050, 6)                  # all alike: a slope is not identifiable
    form, m, _ = _call_path_fit(raw, 0.02 + 0.0 * raw + rng.uniform(0, 0.002, 6))
    assert form in ("none", "offset") and m.b == 1.0
