"""A link is refitted on the probe queries' own legs when that predicts the probes' measured
leg better than the bare-buffer calibration did: a blob call carries no plan and no
decision, so it priced a small query's leg ~1 ms low; a bare push of one buffer priced a
push-back of whole tables 1.4-1.8x high; and the call-path fit scaled every term to make up
for each. A fit that already predicts the probes is kept."""

import numpy as np

from colony.drivers.query import _leg_offset, _link_fit


def _legs(rng, n, overhead, per_byte, blob_a, blob_b):
    legs = []
    for _ in range(n):
        b = float(np.exp(rng.uniform(np.log(1e2), np.log(8e6))))
        t = (overhead + per_byte * b) * rng.uniform(0.95, 1.05)
        legs.append((b, t, b * rng.uniform(0.8, 1.2), blob_a + blob_b * b))
    return legs


def test_probe_leg_replaces_a_blob_fit_that_misses_the_call_overhead():
    rng = np.random.default_rng(0)
    legs = _legs(rng, 28, 0.003, 1e-9, blob_a=0.002, blob_b=1e-9)      # blob fit 1 ms low
    model, rep = _link_fit(legs, "down probes")
    assert abs(model.a - 0.003) < 0.0004 and abs(model.b / 1e-9 - 1) < 0.2
    assert rep["loo_ape_median"] < 5 < rep["ape_before_median"] and rep["n"] == 28
    assert rep["source"] == "down probes"


def test_handover_refit_replaces_a_bare_push_fit_that_prices_tables_high():
    """Run 124's shape: the push probe fitted 1.4 ns/B + 1.9 ms, the probes' handovers took
    ~0.6 ns/B + 8 ms (pushes of whole tables from 0.2 to 70 MB, and small cut results)."""
    rng = np.random.default_rng(4)
    legs = _legs(rng, 40, 0.008, 0.6e-9, blob_a=0.0019, blob_b=1.4e-9)
    model, rep = _link_fit(legs, "handovers")
    assert abs(model.a - 0.008) < 0.001 and abs(model.b / 0.6e-9 - 1) < 0.15
    assert rep["loo_ape_median"] < 5 and rep["ape_before_median"] > 20


def test_a_blob_fit_that_predicts_the_probes_is_kept():
    rng = np.random.default_rng(1)
    legs = _legs(rng, 28, 0.003, 1e-9, blob_a=0.003, blob_b=1e-9)
    assert _link_fit(legs, "down probes") is None


def test_too_few_measured_legs_keep_the_blob_fit():
    rng = np.random.default_rng(2)
    legs = _legs(rng, 8, 0.003, 1e-9, blob_a=0.001, blob_b=1e-9)
    legs[:3] = [(np.nan, np.nan, 1e3, 0.001)] * 3                         # legs not measured
    assert _link_fit(legs, "down probes") is None


def test_a_hosted_leg_measured_beyond_its_link_price_gets_that_offset():
    """The handover of a split (the call to the host and its answer back) took ~7 ms more than
    the bare push probe priced on the families benchmark: the offset is learnt from the probes."""
    rng = np.random.default_rng(3)
    priced = [float(np.exp(rng.uniform(np.log(1e-3), np.log(5e-2)))) for _ in range(20)]
    pts = [(p, (p + 0.007) * rng.uniform(0.97, 1.03)) for p in priced]
    off, rep = _leg_offset(pts)
    assert abs(off - 0.007) < 0.001 and rep["loo_ape_median"] < rep["ape_before_median"] and rep["n"] == 20
    assert rep["ape_after_median"] < 5
    right = [(p, p * rng.uniform(0.97, 1.03)) for p in priced]            # the link prices it already
    assert _leg_offset(right) is None
    assert _leg_offset(pts[:5]) is None and _leg_offset([]) is None        # too few probes
