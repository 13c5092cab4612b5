"""The probe schemas carry the column types they exist for, deterministically."""

import pyarrow as pa
import pytest

from colony.data import probes
from colony.errors import InvalidArgument


def test_probe_schemas_have_the_types_they_probe():
    ev = probes.events(2_000)
    assert pa.types.is_dictionary(ev["events"].schema.field("city").type)
    assert pa.types.is_large_string(ev["events"].schema.field("tag").type)
    assert ev["events"].column("amount").null_count > 0
    obs = probes.nested(2_000)["obs"].schema
    assert obs.field("at").type == pa.timestamp("ns")
    assert pa.types.is_dictionary(obs.field("kind").type)
    assert pa.types.is_struct(obs.field("pt").type) and pa.types.is_list(obs.field("hits").type)
    s = probes.sensors(2_000)
    assert s["readings"].column("ts").to_numpy().tolist() == sorted(s["readings"].column("ts").to_numpy().tolist())
    assert s["windows"].num_rows == 30
    assert probes.events(2_000)["events"].equals(ev["events"])        # the same tables every time
    j = probes.jobs(500, 3_000)
    assert pa.types.is_dictionary(j["jobs"].schema.field("queue").type)
    assert j["jobs"].schema.field("submit").type == pa.timestamp("us", tz="UTC")
    assert pa.types.is_decimal(j["jobs"].schema.field("cost").type) and j["jobs"].column("cost").null_count > 0
    assert j["samples"].schema.field("job_id").type == pa.uint32() and j["samples"].column("temp_c").null_count > 0
    assert probes.jobs(500, 3_000)["samples"].equals(j["samples"])


def test_an_unknown_probe_schema_is_refused(tmp_path):
    with pytest.raises(InvalidArgument, match="events, sensors, nested, jobs"):
        probes.write(str(tmp_path), "particles")
