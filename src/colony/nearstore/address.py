"""Global block addresses (SCANCOMS/INSTANT): the owning device id lives in the upper
9 bits of a 64-bit block address, the device-local block number in the lower 55.

INSTANT could borrow the top 9 bits because 512-byte sectors leave them unused; here the
layout is explicit so any device can tell, from an address alone, whether a block is
local or must be fetched device to device.
"""

from __future__ import annotations

from colony.errors import AddressError

DEVICE_BITS = 9
BLOCK_BITS = 64 - DEVICE_BITS
MAX_DEVICES = 1 << DEVICE_BITS          # 512 device ids: 0..511
MAX_BLOCK = (1 << BLOCK_BITS) - 1
_BLOCK_MASK = MAX_BLOCK


def encode(device_id: int, block: int) -> int:
    """(device id, local block number) -> 64-bit global block address."""
    if not 0 <= device_id < MAX_DEVICES:
        raise AddressError(f"device id {device_id} is outside 0..{MAX_DEVICES - 1}; "
                           f"a global address has {DEVICE_BITS} bits for the device")
    if not 0 <= block <= MAX_BLOCK:
        raise AddressError(f"block number {block} is outside 0..{MAX_BLOCK} "
                           f"({BLOCK_BITS} bits); use a larger block size")
    return (device_id << BLOCK_BITS) | block


def decode(addr: int) -> tuple[int, int]:
    """64-bit global block address -> (device id, local block number)."""
    if not 0 <= addr < (1 << 64):
        raise AddressError(f"address {addr} is not an unsigned 64-bit value")
    return addr >> BLOCK_BITS, addr & _BLOCK_MASK


def device_of(addr: int) -> int:
    return decode(addr)[0]


def fmt(addr: int) -> str:
    """Human-readable form, e.g. 'd3:b1024'."""
    d, b = decode(addr)
    return f"d{d}:b{b}"


from dataclasses import dataclass  # noqa: E402


@dataclass(frozen=True)
class Extent:
    """``nbytes`` stored in contiguous blocks from global address ``addr`` (one device)."""

    addr: int
    nbytes: int

    @property
    def device(self) -> int:
        return decode(self.addr)[0]

    @property
    def block(self) -> int:
        return decode(self.addr)[1]

    def nblocks(self, block_size: int) -> int:
        return -(-self.nbytes // block_size)

    def blocks(self, block_size: int) -> range:
        """Local block numbers this extent covers."""
        b = self.block
        return range(b, b + self.nblocks(block_size))

    def __str__(self) -> str:
        return f"{fmt(self.addr)}+{self.nbytes}B"
