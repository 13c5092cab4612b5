"""The device -> client leg is refitted on the down probes when that predicts the probes'
measured leg better than the blob calibration did: a blob call carries no plan and no
decision, so it priced a small query's leg ~1 ms low and the call-path fit scaled every
term to make up for it. A blob fit that already predicts the probes is kept."""

import numpy as np

from colony.drivers.query import _client_link_fit, _leg_offset


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
    model, rep = _client_link_fit(legs)
    assert abs(model.a - 0.003) < 0.0004 and abs(model.b / 1e-9 - 1) < 0.2
    assert rep["loo_ape_median"] < 5 < rep["blob_fit_ape_median"] and rep["n"] == 28


def test_a_blob_fit_that_predicts_the_probes_is_kept():
    rng = np.random.default_rng(1)
    legs = _legs(rng, 28, 0.003, 1e-9, blob_a=0.003, blob_b=1e-9)
    assert _client_link_fit(legs) is None


def test_too_few_measured_legs_keep_the_blob_fit():
    rng = np.random.default_rng(2)
    legs = _legs(rng, 8, 0.003, 1e-9, blob_a=0.001, blob_b=1e-9)
    legs[:3] = [(np.nan, np.nan, 1e3, 0.001)] * 3                         # legs not measured
    assert _client_link_fit(legs) is None


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
