"""Colony's object format and its codecs (the seeds' Bitar): see :mod:`colony.codec.container`."""

from colony.codec.container import (CODECS, DEFAULT_SEGMENT, ObjectInfo, ObjectWriter, pack, read_info,
                                    resolve_codec, stream_size, unpack, unpack_one, verify)
from colony.codec.registry import available_engines, get_engine, register_engine

__all__ = ["CODECS", "DEFAULT_SEGMENT", "ObjectInfo", "ObjectWriter", "stream_size", "pack", "unpack", "unpack_one",
           "read_info", "resolve_codec", "verify", "available_engines", "get_engine", "register_engine"]
