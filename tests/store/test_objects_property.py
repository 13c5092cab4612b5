"""Property: under any put/get/drop sequence the budgeted store keeps every object intact,
memory within budget, disk accounting equal to the spill files, and a reopened store
recovers exactly the spilled objects."""

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from colony import codec
from colony.store import ObjectStore
from colony.errors import ObjectTooLarge, UnknownKey
from colony.store.objects import SPILL_SUFFIX

SIZES = [500, 3_000, 9_000, 20_000]
_OBJS = {(s, v): codec.pack([pa.table({"v": np.full(s // 8, v, dtype=np.int64)})]) for s in SIZES for v in range(3)}

ops = st.lists(st.tuples(st.sampled_from(["put", "get", "drop"]), st.integers(0, 5),
                         st.sampled_from(SIZES), st.integers(0, 2)), min_size=1, max_size=40)


@settings(max_examples=60, deadline=None)
@given(ops=ops, budget=st.sampled_from([10_000, 25_000]), disk=st.sampled_from([0, 30_000, 200_000]))
def test_budgeted_store_invariants(tmp_path_factory, ops, budget, disk):
    d = tmp_path_factory.mktemp("spill")
    s = ObjectStore("d", memory_budget=budget, spill_dir=d, disk_budget=disk)
    s.create_pool("p")
    model: dict[str, bytes] = {}
    for op, k, size, v in ops:
        key = f"k/{k}"
        if op == "put":
            obj = _OBJS[(size, v)]
            try:
                s.put("p", key, obj)
                model[key] = bytes(obj)
            except ObjectTooLarge:
                pass   # refused: the old value (if any) must still be there
        elif op == "get":
            if key in model:
                assert bytes(s.get("p", key)) == model[key]
            else:
                try:
                    s.get("p", key)
                    raise AssertionError("got a key that was never stored")
                except UnknownKey:
                    pass
        elif key in model:
            s.drop("p", key)
            del model[key]
        info = s.info()
        assert info["memory_used"] <= budget
        assert info["disk_used"] <= disk
        files = {f.name: f.stat().st_size for f in d.rglob("*" + SPILL_SUFFIX)}
        assert sum(files.values()) == info["disk_used"]
        assert sorted(s.list("p")) == sorted(model)
    spilled = {e.key for e in s.entries("p") if e.spilled}
    r = ObjectStore("d", memory_budget=budget, spill_dir=d, disk_budget=disk)
    assert set(r.list("p") if "p" in r.pools() else []) == spilled
    for key in spilled:
        assert bytes(r.get("p", key)) == model[key]
