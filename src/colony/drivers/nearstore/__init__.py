"""Near-storage computation, host side: COSTA orchestration, the NESCAFE file layer, merge
sort over CSDs and the FUSE view; they reach the CSDs only through the Colony interface."""

from colony.drivers.nearstore.costa import Costa, SubOp, lock_all_policy, sequential_policy
from colony.drivers.nearstore.mergesort import mergesort   # registers the 'mergesort' offload
from colony.drivers.nearstore.nescafe import Nescafe, NFile, register_offload

__all__ = ["Costa", "SubOp", "lock_all_policy", "sequential_policy", "Nescafe", "NFile", "register_offload", "mergesort"]
