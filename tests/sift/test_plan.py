"""Stage counts, key format and routing of the sifting plan."""

import pytest

from colony.sift import SiftPlan, make_key, parse_key, stages_for
from colony.errors import SiftError
from colony.store import owner


@pytest.mark.parametrize("k,stages", [(1, 7), (2, 4), (3, 3), (4, 2), (5, 2), (6, 2), (7, 1), (8, 1)])
def test_stage_count_for_100_bins(k, stages):   # thesis Table 6-1
    assert stages_for(k, 100) == stages


def test_stage_count_edges():
    assert stages_for(4, 1) == 1 and stages_for(4, 16) == 1 and stages_for(4, 17) == 2
    with pytest.raises(SiftError):
        stages_for(0, 4)


def test_key_round_trip_and_tft_owner():
    key = make_key(2, 4, 0xB, "dev-3", 7, 45)
    assert key == "s2.b4.mb.dev-3.c7/45"
    k = parse_key(key)
    assert (k.stage, k.nbits, k.matched, k.source, k.seq, k.tag) == (2, 4, 11, "dev-3", 7, 45)
    members = [f"n{i}" for i in range(4)]
    plan = SiftPlan(k=4, n_bins=100, members=tuple(members))
    assert plan.owner_of(k.tag) == owner(key, members, "tft")     # the store's TFT agrees
    b = parse_key(make_key("bins", 8, 0xAB, "n1", 0, 0xAB))
    assert b.stage == "bins" and b.matched == 0xAB


def test_fanout_goes_to_neighbours_and_bins_to_fixed_owner():
    plan = SiftPlan(k=2, n_bins=16, members=tuple(f"n{i}" for i in range(5)))
    assert plan.stages == 2
    assert {plan.owner_of(plan.next_tag(1, 3, p, p)) for p in range(4)} == {"n2", "n3", "n4", "n0"}
    assert plan.next_tag(2, 1, 3, 0b1110) == 0b1110     # last stage: tag = bin


def test_bad_plans_and_keys():
    with pytest.raises(SiftError, match="at least one member"):
        SiftPlan(k=2, n_bins=4, members=())
    with pytest.raises(SiftError, match="repeat"):
        SiftPlan(k=2, n_bins=4, members=("a", "a"))
    with pytest.raises(SiftError, match="not a sifting key"):
        parse_key("foo/1")
    with pytest.raises(SiftError, match="source name"):
        make_key(1, 0, 0, "a.b", 0, 0)
