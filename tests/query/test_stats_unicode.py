"""String statistics persist whatever characters the strings hold (real data has accents,
CJK and emoji), and those older statistics stored in Latin-1 are still read."""

import datasketches as ds
import pyarrow as pa
import pytest

from colony.query.stats import ColumnStats, TableStats, Utf8SerDe


@pytest.mark.parametrize("vals", [["CÔTE D'IVOIRE", "RÉUNION", "PERU"], ["日本", "Zürich", "😀", ""]])
def test_non_ascii_strings_round_trip_through_persisted_statistics(vals):
    t = pa.table({"s": vals * 50, "n": list(range(50 * len(vals)))})
    st = TableStats.build([t])
    back = TableStats.from_table(st.to_table())
    cs, again = st.columns["s"], back.columns["s"]
    assert again.items.get_min_value() == cs.items.get_min_value() == min(vals)
    assert again.items.get_max_value() == cs.items.get_max_value() == max(vals)
    for v in vals:
        assert again.str_cdf(v) == pytest.approx(cs.str_cdf(v))
    assert sorted(set(back.sample["s"])) == sorted(vals)


def test_a_string_sketch_written_by_the_library_serde_is_still_read():
    old = ds.kll_items_sketch(200)
    for v in ["RÉUNION", "abc", "zeta"]:
        old.update(v)
    got = ds.kll_items_sketch.deserialize(old.serialize(ds.PyStringsSerDe()), Utf8SerDe())
    assert got.get_min_value() == "RÉUNION" and got.get_max_value() == "zeta"
    row = ColumnStats.build(pa.array(["x", "y"])).to_row()
    row["items"] = old.serialize(ds.PyStringsSerDe())
    assert ColumnStats.from_row(row).items.n == 3
