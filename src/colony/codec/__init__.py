"""Colony's object format and its codecs (the seeds' Bitar): see :mod:`colony.codec.container`."""

from colony.codec.container import (CODECS, DEFAULT_SEGMENT, ObjectInfo, ObjectWriter, pack, read_info, stream_size,
                                    resolve_codec, unpack, unpack_one)
from colony.codec.registry import available_engines, get_engine, register_engine

__all__ = ["CODECS", "DEFAULT_SEGMENT", "ObjectInfo", "ObjectWriter", "stream_size", "pack", "unpack", "unpack_one", "read_info",
           "resolve_codec", "available_engines", "get_engine", "register_engine"]
