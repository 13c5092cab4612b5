"""The nvCOMP engine. GPU tests run only where nvCOMP finds a CUDA device (pip install
'colony[gpu]' on a GPU machine) and are skipped with the reason everywhere else; its
CPU-side plumbing (staging, zlib unwrapping, detection) is tested everywhere."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from colony import codec
from colony.codec import container
from colony.codec.nvcomp import MAX_SEGMENT, _stage, _zlib_wrapped
from colony.codec.registry import available_engines
from colony.data import uniform
from colony.errors import CodecError, EngineMismatch, EngineUnavailable

NVCOMP = available_engines()["nvcomp"]
gpu = pytest.mark.skipif(NVCOMP != "available", reason=f"engine nvcomp {NVCOMP}")


# -- everywhere -----------------------------------------------------------------------------------
def test_absent_nvcomp_says_why_and_what_to_do():
    if NVCOMP == "available":
        pytest.skip("nvCOMP is present here")
    assert NVCOMP.startswith("absent: ")
    with pytest.raises(EngineUnavailable, match=r"engine 'nvcomp' is not available: .*use engine 'software'"):
        codec.pack(uniform(100), "outer-lz4", engine="nvcomp")


def test_stage_carves_aligned_segments_in_place_and_gathers_the_rest():
    host = np.arange(256, dtype=np.uint8)
    base = host.ctypes.data
    view = memoryview(host)
    if base % 16 == 0:
        out, offs = _stage(view, base, [base, base + 32, base + 64], [10, 20, 30], 16)
        assert out.ctypes.data == base and offs == [0, 32, 64]        # no copy
    out, offs = _stage(view, base, [base + 3, base + 40], [5, 7], 16)   # misaligned: gathered
    assert out.ctypes.data % 16 == 0 and offs == [0, 16]
    assert out[0:5].tolist() == list(range(3, 8)) and out[16:23].tolist() == list(range(40, 47))


def test_zlib_header_detection_matches_zlib():
    data = b"colony " * 1000
    assert _zlib_wrapped(zlib.compress(data, 1)[:2])
    raw = zlib.compressobj(1, zlib.DEFLATED, -15)
    assert not _zlib_wrapped((raw.compress(data) + raw.flush())[:2])
    with_dict = zlib.compressobj(1, zlib.DEFLATED, 15, zdict=b"colony")
    assert not _zlib_wrapped((with_dict.compress(data) + with_dict.flush())[:2])   # FDICT: not for nvCOMP


# -- on a GPU ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def table():
    return uniform(60_000, seed=5).combine_chunks()


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("name", ["lz4", "zstd", "deflate", "gdeflate"])
def test_nvcomp_round_trip(table, name):
    buf = codec.pack(table, f"outer-{name}", engine="nvcomp", threads=2)
    assert container.producer(buf) == "nvcomp"
    assert codec.unpack_one(buf, engine="nvcomp", threads=2).equals(table)


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("name", ["lz4", "zstd", "deflate"])
@pytest.mark.parametrize("producer, consumer", [("nvcomp", "software"), ("software", "nvcomp")])
def test_interchangeable_both_ways(table, name, producer, consumer):
    buf = codec.pack(table, f"outer-{name}", engine=producer, threads=2)
    assert codec.unpack_one(buf, engine=consumer, threads=2).equals(table)


@gpu
@pytest.mark.gpu
def test_gdeflate_is_refused_by_software_naming_nvcomp(table):
    buf = codec.pack(table, "outer-gdeflate", engine="nvcomp")
    with pytest.raises(EngineMismatch, match="produced by engine 'nvcomp'"):
        codec.unpack(buf, engine="software")


@gpu
@pytest.mark.gpu
def test_nvcomp_refuses_segments_larger_than_its_chunks(table):
    buf = codec.pack(table, "outer-deflate", segment_size=MAX_SEGMENT["deflate"] * 4)
    with pytest.raises(CodecError, match="takes segments of at most"):
        codec.unpack(buf, engine="nvcomp")
