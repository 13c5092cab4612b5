"""Regenerate the small sample files shipped in colony/data/samples (deterministic).

They follow the public layouts of TrackML hits+truth, OpenSky state vectors and NOAA
AIS positions, with synthetic values; nothing is downloaded.
    python scripts/make_samples.py
"""

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv

OUT = Path(__file__).resolve().parents[1] / "src" / "colony" / "data" / "samples"


def trackml(rng, n=4000):
    # Real TrackML particle ids are large integers whose low bits take few values;
    # here the low 4 bits fall into exactly 3 classes (0, 1, 2).
    n_part = 400
    base = rng.integers(1 << 40, 1 << 52, n_part, dtype=np.uint64) << np.uint64(4)
    pids = base | rng.choice(np.array([0, 1, 2], dtype=np.uint64), n_part, p=[0.6, 0.3, 0.1])
    pick = rng.integers(0, n_part, n)
    return pa.table({
        "hit_id": np.arange(1, n + 1, dtype=np.uint64), "particle_id": pids[pick],
        "x": rng.normal(0, 300, n), "y": rng.normal(0, 300, n), "z": rng.uniform(-3000, 3000, n),
        "tpx": rng.normal(0, 1, n), "tpy": rng.normal(0, 1, n), "tpz": rng.normal(0, 3, n),
        "weight": rng.uniform(0, 1e-4, n), "volume_id": rng.choice([7, 8, 9, 12, 13, 14], n).astype(np.int32),
    })


def opensky(rng, n=4000):
    n_air = 300
    icao = np.array([f"{v:06x}" for v in rng.integers(0, 1 << 24, n_air)])
    calls = np.array([f"{a}{b:04d}" for a, b in zip(rng.choice(["DAL", "UAL", "AAL", "SWA", "BAW"], n_air),
                                                    rng.integers(1, 9999, n_air))])
    pick = rng.integers(0, n_air, n)
    t = np.sort(rng.integers(1_500_000_000, 1_500_003_600, n))
    return pa.table({
        "time": t, "icao24": icao[pick], "lat": rng.uniform(25, 50, n), "lon": rng.uniform(-125, -70, n),
        "velocity": rng.uniform(0, 280, n), "heading": rng.uniform(0, 360, n), "vertrate": rng.normal(0, 5, n),
        "callsign": calls[pick], "onground": rng.random(n) < 0.05, "alert": rng.random(n) < 0.01,
        "spi": rng.random(n) < 0.01, "squawk": np.array([f"{v:04o}" for v in rng.integers(0, 4096, n)]),
        "baroaltitude": rng.uniform(0, 12000, n), "geoaltitude": rng.uniform(0, 12500, n),
        "lastposupdate": t + rng.random(n), "lastcontact": t + rng.random(n),
    })


def ais(rng, n=4000):
    # Few vessels with very different report counts -> uneven low bits of the MMSI.
    n_ves = 60
    mmsi = rng.integers(200_000_000, 775_000_000, n_ves) // 10 * 10 + rng.choice([0, 0, 0, 5], n_ves)
    w = 1.0 / np.arange(1, n_ves + 1) ** 1.1
    pick = rng.choice(n_ves, n, p=w / w.sum())
    t = np.sort(rng.integers(1_483_228_800, 1_483_228_800 + 86_400, n)).astype("datetime64[s]")
    names = np.array([f"VESSEL {i:03d}" for i in range(n_ves)])
    return pa.table({
        "MMSI": mmsi[pick], "BaseDateTime": t, "LAT": rng.uniform(24, 48, n), "LON": rng.uniform(-125, -66, n),
        "SOG": rng.uniform(0, 25, n), "COG": rng.uniform(0, 360, n), "Heading": rng.uniform(0, 511, n),
        "VesselName": names[pick], "IMO": np.array([f"IMO{9_000_000 + i}" for i in range(n_ves)])[pick],
        "CallSign": np.array([f"W{i:04d}" for i in range(n_ves)])[pick],
        "VesselType": rng.choice([30, 31, 52, 60, 70, 80], n_ves)[pick].astype(np.int32),
        "Status": rng.choice([0, 1, 5, 15], n).astype(np.int32), "Length": rng.uniform(10, 300, n_ves)[pick],
        "Width": rng.uniform(3, 45, n_ves)[pick], "Draft": rng.uniform(1, 15, n_ves)[pick],
        "Cargo": rng.choice([0, 70, 80], n_ves)[pick].astype(np.int32),
        "TransceiverClass": rng.choice(["A", "B"], n_ves)[pick],
    })


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    for name, fn, seed in (("trackml_hits.csv", trackml, 1), ("opensky_states.csv", opensky, 2),
                           ("ais_positions.csv", ais, 3)):
        pcsv.write_csv(fn(np.random.default_rng(seed)), OUT / name)
        print("wrote", OUT / name)


if __name__ == "__main__":
    main()
