"""Availability model (thesis eqs 3.1–3.12) and its Monte Carlo check."""

import math

import pytest

from colony.errors import InvalidParameter
from colony.quantify import availability as av


def _by_hand(m, n, c, f, rm):
    """Eq. 3.12 written out independently of the module."""
    P = lambda k, r: r ** k * math.exp(-r) / math.factorial(k)  # noqa: E731
    rd, mp = f * rm, c * m
    lgp, les = 4 * m / 6, 4 * mp / 6
    C = math.comb
    num = (P(3, rm) * lgp / C(m, 3) + P(3, rd) * n * lgp / C(m * n, 3)
           + P(1, rm) * P(2, rd) * 3 * n * lgp / (m * C(m * n, 2))
           + P(2, rm) * P(1, rd) * 3 * n * lgp / (C(m, 2) * m * n))
    den = (P(3, rm) * les / C(mp, 3) + P(3, rd) * les / C(mp, 3)
           + P(1, rm) * P(2, rd) * 3 * les / (mp * C(mp, 2))
           + P(2, rm) * P(1, rd) * 3 * les / (C(mp, 2) * mp))
    return num / den


@pytest.mark.parametrize("m,n,c,f", [(10, 4, 4, 2.0), (10, 4, 4, 0.06), (6, 12, 3, 2.0), (20, 2, 1, 0.5)])
def test_closed_form_matches_written_out_equation(m, n, c, f):
    assert av.relative_benefit(m, n, c, f, 4, 0.01) == pytest.approx(_by_hand(m, n, c, f, 0.01), rel=1e-12)


def test_scatter_width_cancels_in_the_ratio():
    assert av.relative_benefit(10, 4, 4, 2.0, w=2) == pytest.approx(av.relative_benefit(10, 4, 4, 2.0, w=8))


def test_thesis_insights_hold():
    # Insight 1: lower device failure rate (SSD) -> higher relative benefit
    assert av.relative_benefit(10, 4, 4, av.F_SSD) > av.relative_benefit(10, 4, 4, av.F_HDD)
    # Insight 2: more devices per server -> higher benefit
    assert av.relative_benefit(10, 8, 8, 2.0) > av.relative_benefit(10, 4, 4, 2.0)
    # Insight 3: more embedded nodes per server -> higher benefit
    assert av.relative_benefit(10, 12, 6, 2.0) > av.relative_benefit(10, 12, 3, 2.0)


def test_where_the_seed_numbers_fall():
    claims = av.seed_claims()
    # n = 4, c = n, w = 4, rare failures: HDD 7.1 sits between m = 5 (7.23) and m = 6 (7.00)
    assert av.relative_benefit(5, 4, 4, 2.0) > 7.1 > av.relative_benefit(6, 4, 4, 2.0)
    assert claims["hdd_7.1"]["m"] == 6 and claims["hdd_7.1"]["value"] == pytest.approx(7.0, abs=0.01)
    # SSD 20.7 sits between m = 8 and m = 9 (20.56)
    assert av.relative_benefit(8, 4, 4, 0.06) > 20.7 > av.relative_benefit(9, 4, 4, 0.06)


@pytest.mark.parametrize("kw, msg", [
    (dict(m=2, n=4, c=1, f=2), "m "), (dict(m=6, n=1, c=1, f=2), "n "), (dict(m=6, n=2, c=0, f=2), "c "),
    (dict(m=6, n=2, c=1, f=0), "f "), (dict(m=6, n=2, c=1, f=2, w=6), "scatter width"),
    (dict(m=6, n=2, c=1, f=2, w=1), "w "), (dict(m=6, n=2, c=1, f=2, rm=0), "R_m"),
    (dict(m=6.5, n=2, c=1, f=2), "integer"),
])
def test_validation(kw, msg):
    with pytest.raises(InvalidParameter, match=msg):
        av.relative_benefit(**kw)


@pytest.mark.parametrize("m,n,c,f", [(6, 2, 2, 1.0), (6, 3, 1, 2.0), (9, 2, 1, 0.5)])
def test_monte_carlo_agrees_with_closed_form(m, n, c, f):
    r = av.monte_carlo(m, n, c, f, w=4, rm=0.5, trials=150_000, seed=7)
    assert r.gp_agrees, r.as_dict()
    assert r.es_agrees, r.as_dict()
    assert r.copysets_gp == 4 * m // 6 and r.copysets_es == 4 * m * c // 6


def test_monte_carlo_detects_a_wrong_count(monkeypatch):
    # if N_md(2,1) were n*l instead of 3*n*l the simulation must disagree
    r = av.monte_carlo(6, 2, 1, 1.0, w=4, rm=0.8, trials=150_000, seed=3)
    p = av.validate(6, 2, 1, 1.0, 4, 0.8)
    t = av.terms_gp(p)
    wrong = sum(t.values()) - t["Pmd(2,1)"] * 2 / 3
    assert not (r.mc_gp_ci[0] <= wrong <= r.mc_gp_ci[1])


def test_copysets_are_distinct_and_cover_nodes():
    import numpy as np
    cs = av.build_copysets(12, 4, np.random.default_rng(0))
    assert len(cs) == 8 and len(set(cs)) == 8
    assert set().union(*cs) == set(range(12))
    with pytest.raises(InvalidParameter, match="divisible by 3"):
        av.build_copysets(10, 4, np.random.default_rng(0))


def test_figures_and_plots(tmp_path):
    figs = av.figures_data(ms=range(5, 9), ns=(2, 4), cs=(1, 2))
    assert set(figs) == {"m_n_hdd", "m_c_hdd", "m_n_ssd", "m_c_ssd", "n_at_m10", "c_at_m10"}
    rows = figs["n_at_m10"]["ssd"]
    assert [r["n"] for r in rows] == list(range(2, 13))
    assert all(b["relative_benefit"] > a["relative_benefit"] for a, b in zip(rows, rows[1:]))
    paths = av.plot_figures(figs, tmp_path)
    assert len(paths) == 6 and all((tmp_path / p.split("/")[-1]).stat().st_size > 1000 for p in paths)


def test_any_failure_simulation_bounds_the_three_failure_terms():
    # every exactly-three-failure loss event is also a loss in the full model, so the full
    # model's P_loss cannot be below the eq. 3.12 sum (up to sampling error)
    r = av.simulate_any_failures(6, 2, 2, 1.0, w=4, rm=0.5, trials=100_000, seed=5)
    p = av.validate(6, 2, 2, 1.0, 4, 0.5)
    assert r["p_loss_gp_ci"][1] >= sum(av.terms_gp(p).values())
    assert r["p_loss_es_ci"][1] >= sum(av.terms_es(p).values())
    assert 0 < r["p_loss_es"] < r["p_loss_gp"] < 1
