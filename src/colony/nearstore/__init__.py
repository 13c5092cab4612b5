"""Near-storage computation (SCANCOMS): computational storage devices with a global
block address space, COSTA block-lock orchestration, a NESCAFE-like file layer and a
distributed merge sort that moves data device to device or through the host.

Pure: no Ray here. The CSD service is :mod:`colony.services.nearstore`.
"""

from colony.nearstore.address import MAX_DEVICES, Extent, decode, encode
from colony.nearstore.costa import Costa, SubOp, lock_all_policy, sequential_policy
from colony.nearstore.nescafe import Nescafe, NFile, register_offload
from colony.nearstore.ops import Operation, get_operation, operation
from colony.nearstore.tokenbucket import link

__all__ = ["MAX_DEVICES", "Extent", "decode", "encode", "Costa", "SubOp", "lock_all_policy",
           "sequential_policy", "Nescafe", "NFile", "register_offload", "Operation",
           "get_operation", "operation", "link"]
