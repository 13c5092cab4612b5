"""A string column's draws and mean width are kept on its statistics (the estimator asks for
them on every projection and sampled predicate it walks); kept, they must be exactly what
``Generator.choice`` and the plain weighted mean give."""

import numpy as np
import pyarrow as pa

from colony.query.stats import TableStats


def _column():
    t = pa.table({"s": pa.array([f"v{i % 37}" * (1 + i % 5) for i in range(5000)])})
    return TableStats.build([t]).columns["s"]


def test_string_draws_equal_generator_choice_for_the_same_stream():
    cs = _column()
    items, w = cs.weighted_items()
    for seed in range(4):
        want = items[np.random.Generator(np.random.SFC64(seed)).choice(len(items), size=2000, p=w / w.sum())]
        rng = np.random.Generator(np.random.SFC64(seed))
        assert (cs.sample(2000, rng) == want).all()
        assert (cs.sample(10, rng) == items[np.random.Generator(np.random.SFC64(seed)).choice(
            len(items), size=2010, p=w / w.sum())][2000:]).all()     # the stream continues as choice's would


def test_mean_string_length_is_the_weighted_sample_mean():
    cs = _column()
    items, w = cs.weighted_items()
    assert cs.mean_str_len() == float(np.dot([len(x) for x in items], w) / w.sum())
    assert cs.mean_str_len() == cs.mean_str_len()


def test_guide_table_draws_equal_a_full_search_over_many_items():
    """Codes come from a guide table; a draw whose bucket holds a cdf step is searched. Over
    thousands of items (many such buckets), every draw is the one a full search gives."""
    t = pa.table({"s": pa.array([f"k{i}" for i in range(20_000)] + ["hot"] * 5000)})
    cs = TableStats.build([t]).columns["s"]
    items, w = cs.weighted_items()
    assert len(items) > 500
    cdf = (w / w.sum()).cumsum()
    cdf /= cdf[-1]
    for seed in range(3):
        want = cdf.searchsorted(np.random.Generator(np.random.SFC64(seed)).random(100_000), side="right")
        got = cs.sample_codes(100_000, np.random.Generator(np.random.SFC64(seed)))
        assert (got == want).all()
    m, guide = cs._guide
    assert (guide[:-1] != guide[1:]).any() and m >= 16 * len(items)     # the searched path ran too
