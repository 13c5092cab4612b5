"""Near-storage computation, device side: global block addresses, block stores, block locks
and the registered operations a CSD runs (pure; no Ray). The host side (COSTA, NESCAFE,
merge sort, the FUSE view) lives in :mod:`colony.drivers.nearstore`."""

from colony.nearstore.address import MAX_DEVICES, Extent, decode, encode
from colony.nearstore.ops import Operation, get_operation, operation

__all__ = ["MAX_DEVICES", "Extent", "decode", "encode", "Operation", "get_operation", "operation"]
