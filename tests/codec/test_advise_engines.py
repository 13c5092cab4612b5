"""`colony codec advise` ranks (codec, engine) pairs measured on the engines present."""

from __future__ import annotations

import pytest

from colony.codec import advise as adv
from colony.codec import profile as prof
from colony.codec.registry import _ENGINES
from colony.codec.engines import SoftwareEngine


def test_candidates_cover_every_codec_on_every_engine_present(monkeypatch):
    second = SoftwareEngine()
    second.name = "doca"                     # stands in for a second engine that makes lz4 only
    second.codecs = ("lz4",)
    monkeypatch.setitem(_ENGINES, "doca", second)
    pairs = prof.candidates()
    assert ("none", "software") in pairs and ("inner-zstd", "software") in pairs
    assert ("outer-lz4", "software") in pairs and ("outer-lz4", "doca") in pairs
    assert ("outer-zstd", "doca") not in pairs                   # it does not make zstd
    assert sum(1 for c, _ in pairs if c == "none") == 1          # no engine work: measured once


def test_device_record_holds_every_codec_and_engine(tmp_path):
    """The device suite measures every (codec, engine) pair under the device's thread budget,
    into the device's one calibration record; advice is ranked from that record."""
    from colony.cost import suite
    suite.update("nic0", "fp", suite.device_suite(threads=1, quick=True), tmp_path)
    profiles = prof.profiles(suite.record("nic0", "fp", tmp_path))
    assert {(p.codec, p.engine) for p in profiles} == set(prof.candidates())
    assert all(p.threads == 1 and p.serialize_mbps > 0 and 0 < p.ratio <= 1.05 for p in profiles)
    ranked = adv.advise(0.1, profiles)          # a slow link: compression must win
    assert ranked[0].codec != "none" and ranked[0].engine == "software"
    assert prof.profiles({}) == []


@pytest.mark.parametrize("link, best", [(0.1, "compressed"), (400.0, "none")])
def test_ranking_follows_the_link(link, best):
    fast = prof.CodecProfile("none", 1, 4000.0, 1e6, 1.0)
    small = prof.CodecProfile("outer-zstd", 1, 500.0, 1000.0, 0.5, "software")
    top = adv.advise(link, [fast, small])[0]
    assert (top.codec == "none") == (best == "none")
