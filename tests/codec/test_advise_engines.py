"""`colony codec advise` ranks (codec, engine) pairs measured on the engines present."""

from __future__ import annotations

import json

import pytest

from colony.codec import advise as adv
from colony.codec.registry import _ENGINES
from colony.codec.engines import SoftwareEngine
from colony.data import uniform


def test_candidates_cover_every_codec_on_every_engine_present(monkeypatch):
    second = SoftwareEngine()
    second.name = "doca"                     # stands in for a second engine that makes lz4 only
    second.codecs = ("lz4",)
    monkeypatch.setitem(_ENGINES, "doca", second)
    pairs = adv.candidates()
    assert ("none", "software") in pairs and ("inner-zstd", "software") in pairs
    assert ("outer-lz4", "software") in pairs and ("outer-lz4", "doca") in pairs
    assert ("outer-zstd", "doca") not in pairs                   # it does not make zstd
    assert sum(1 for c, _ in pairs if c == "none") == 1          # no engine work: measured once


def test_profiles_and_advice_carry_the_engine(tmp_path, monkeypatch):
    monkeypatch.setenv("COLONY_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(adv, "calibrate", lambda threads=None, progress=None: [
        adv.measure(uniform(20_000, seed=1).combine_chunks(), c, 1, 1, e) for c, e in adv.candidates()])
    profiles = adv.load_profiles(threads=1)
    assert {(p.codec, p.engine) for p in profiles} == set(adv.candidates())
    ranked = adv.advise(0.1, profiles)          # a slow link: compression must win
    assert ranked[0].codec != "none" and ranked[0].engine == "software"
    cached = json.loads((tmp_path / "codec-calibration.json").read_text())
    key, = cached
    assert key.endswith("|software")            # the engines present are part of the cache key
    assert all(p["engine"] for p in cached[key])


@pytest.mark.parametrize("link, best", [(0.1, "compressed"), (400.0, "none")])
def test_ranking_follows_the_link(link, best):
    fast = adv.CodecProfile("none", 1, 4000.0, 1e6, 1.0)
    small = adv.CodecProfile("outer-zstd", 1, 500.0, 1000.0, 0.5, "software")
    top = adv.advise(link, [fast, small])[0]
    assert (top.codec == "none") == (best == "none")
