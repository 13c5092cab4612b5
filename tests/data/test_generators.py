import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from colony.data import (PARTICLE_SCHEMA, Simulation, clustered, load_ais, load_opensky, load_trackml,
                         stable_id_hash, uniform, validate_particles)
from colony.data.loaders import read_table
from colony.errors import DataError


@pytest.mark.parametrize("gen", [uniform, clustered])
def test_generators_schema_ranges_and_determinism(gen):
    t = gen(50_000, seed=7)
    assert t.schema == PARTICLE_SCHEMA
    validate_particles(t)
    for c in "xyz":
        assert 0.0 <= pc.min(t[c]).as_py() and pc.max(t[c]).as_py() <= 1.0
    for c in ("vx", "vy", "vz"):
        assert -100.0 <= pc.min(t[c]).as_py() and pc.max(t[c]).as_py() <= 100.0
    assert t.equals(gen(50_000, seed=7))
    assert not t.equals(gen(50_000, seed=8))
    assert gen(0).num_rows == 0


def test_uniform_low_bits_balanced():
    t = uniform(200_000, seed=1)
    bins = np.bincount(t["particle_id"].to_numpy() & 15, minlength=16)
    assert bins.max() / bins.mean() < 1.05


def test_clustered_is_skewed():
    t = clustered(100_000, seed=3, n_clusters=8, skew=1.5, spread=0.01)
    h, _ = np.histogramdd(np.stack([t[c].to_numpy() for c in "xyz"], 1), bins=10)
    assert h.max() > 20 * h.mean()   # dense blobs, far from uniform


def test_simulation_snapshots_cover_every_particle_each_step():
    sim = Simulation(n_particles=5_000, n_ranks=4, seed=2)
    seen_ids = set()
    for step in range(3):
        snaps = sim.step()
        assert [r for r, _ in snaps] == [0, 1, 2, 3]
        pids = np.concatenate([t["particle_id"].to_numpy() for _, t in snaps])
        assert np.array_equal(np.sort(pids), np.arange(5_000))
        for rank, t in snaps:
            assert set(t["time"].to_pylist()) <= {step}
            x = t["x"].to_numpy()
            assert ((x * 4).astype(int).clip(0, 3) == rank).all()
            seen_ids.update(t["id"].to_pylist())
    assert len(seen_ids) == 15_000  # record ids unique across steps


def test_simulation_particles_migrate_between_ranks():
    sim = Simulation(n_particles=2_000, n_ranks=8, seed=4, dt=0.01)
    first = {r: set(t["particle_id"].to_pylist()) for r, t in sim.step()}
    for _ in range(5):
        last = {r: set(t["particle_id"].to_pylist()) for r, t in sim.step()}
    assert any(first[r] != last[r] for r in first)


def test_loaders_shapes_and_ids():
    tm, os_, ais = load_trackml(), load_opensky(), load_ais()
    assert tm.num_columns == 3 + 10
    assert os_.num_columns == 3 + 16
    assert ais.num_columns == 3 + 17
    for t in (tm, os_, ais):
        assert t.schema.names[:3] == ["id", "time", "particle_id"]
        assert all(t.schema.field(i).type == pa.uint64() for i in range(3))
        assert t.num_rows == 4000
    # TrackML ids keep their integer value and fall into 3 low-bit classes
    assert set((tm["particle_id"].to_numpy() & 15).tolist()) == {0, 1, 2}
    # AIS: the MMSI integer is the id; time is epoch seconds
    from colony.data import sample_path
    from colony.data.loaders import AIS_LAYOUT
    src = read_table(sample_path("ais"), AIS_LAYOUT)
    assert tm["time"].to_pylist()[:3] == [1, 2, 3]
    assert ais["particle_id"].to_pylist()[:5] == src["MMSI"].to_pylist()[:5]
    assert ais["time"][0].as_py() >= 1_483_228_800


def test_stable_id_hash_is_stable_and_documented():
    h = stable_id_hash(pa.array(["a0b1c2", "a0b1c2", "ffffff"]))
    assert h.type == pa.uint64()
    assert h[0] == h[1] and h[0] != h[2]
    # BLAKE2b-64, little-endian: a fixed value that must never change across releases
    import hashlib
    assert h[0].as_py() == int.from_bytes(hashlib.blake2b(b"a0b1c2", digest_size=8).digest(), "little")
    assert stable_id_hash(pa.array([3, 5], pa.int32())).to_pylist() == [3, 5]


@pytest.mark.parametrize("bad, msg", [
    (pa.array(["a", None]), "null"),
    (pa.array([1, -2]), "negative"),
    (pa.array([1.5]), "type"),
])
def test_stable_id_hash_rejects_bad_ids(bad, msg):
    with pytest.raises(DataError, match=msg):
        stable_id_hash(bad)


def test_loader_errors(tmp_path):
    with pytest.raises(DataError, match="does not exist"):
        load_ais(tmp_path / "nope.csv")
    p = tmp_path / "x.csv"
    p.write_text("a,b\n1,2\n")
    with pytest.raises(DataError, match="missing columns"):
        load_ais(p)
    (tmp_path / "x.txt").write_text("")
    with pytest.raises(DataError, match="unknown file type"):
        load_ais(tmp_path / "x.txt")
    with pytest.raises(DataError, match="lacks columns"):
        validate_particles(pa.table({"id": [1]}))


def test_loader_reads_parquet(tmp_path):
    import pyarrow.parquet as pq
    from colony.data import sample_path
    from colony.data.loaders import OPENSKY_LAYOUT
    pq.write_table(read_table(sample_path("opensky"), OPENSKY_LAYOUT), tmp_path / "s.parquet")
    assert load_opensky(tmp_path / "s.parquet").equals(load_opensky())
