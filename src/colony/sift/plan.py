"""Sifting plan and key format: how many stages, which bits each stage matches, and
where every part goes next.

A particle's *routing value* is its id (``routing="low"``, the seeds' choice) or a
stable 64-bit hash of it (``routing="hash"``, for ids with uneven low bits). Stage t
(1-based) splits by bits [k(t-1), kt) of it; after s stages the low k*s bits name the
final bin. s is the fewest stages with 2^(k*s) >= N bins (thesis Table 6-1).

Keys carry the next stage, the matched bits, the source and a TFT tag, and are unique::

    s{stage}.b{nbits}.m{matched:x}.{source}.c{seq}/{tag}        (stage inputs)
    bins.b{nbits}.m{bin:x}.{source}.c{seq}/{bin}                 (final bins)

The tag is the integer a TFT pool folds onto its members (tag mod pool size): part p
of PE i goes to tag i*2^k + p, so each PE fans out to 2^k neighbours (the seeds' pools
P_t(i)) and a final bin b always lands on member b mod P, wherever it came from.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from colony.sift.partition import MAX_BITS, ROUTINGS
from colony.errors import SiftError

BINS_STAGE = "bins"
_SOURCE = re.compile(r"^[A-Za-z0-9_\-:]+$")
_KEY = re.compile(r"^(?:s(?P<stage>\d+)|(?P<bins>bins))\.b(?P<nbits>\d+)\.m(?P<matched>[0-9a-f]+)\."
                  r"(?P<source>[A-Za-z0-9_\-:]+)\.c(?P<seq>\d+)/(?P<tag>\d+)$")


def stages_for(k: int, n_bins: int) -> int:
    """Fewest s with 2^(k*s) >= n_bins (N=100: k=2->4, 3->3, 4..6->2, 7->1)."""
    if k < 1:
        raise SiftError(f"k must be >= 1 to make progress, got {k}")
    if n_bins < 1:
        raise SiftError(f"need at least one bin, got {n_bins}")
    s = 0
    while (1 << (k * s)) < n_bins:
        s += 1
    return max(s, 1)


@dataclass(frozen=True)
class SiftPlan:
    """k bits per stage, at least ``n_bins`` final bins, over ``members`` (PE devices)."""

    k: int
    n_bins: int
    members: tuple[str, ...]
    routing: str = "low"

    def __post_init__(self) -> None:
        if not 1 <= self.k <= MAX_BITS:
            raise SiftError(f"k must be in 1..{MAX_BITS}, got {self.k}")
        if self.routing not in ROUTINGS:
            raise SiftError(f"unknown routing {self.routing!r}; choose one of {ROUTINGS}")
        if not self.members:
            raise SiftError("a sifting plan needs at least one member device")
        if len(set(self.members)) != len(self.members):
            raise SiftError(f"member devices repeat: {list(self.members)}")
        if self.k * self.stages > 64:
            raise SiftError(f"k={self.k} x {self.stages} stages needs more than 64 id bits")
        object.__setattr__(self, "members", tuple(self.members))

    @property
    def stages(self) -> int:
        return stages_for(self.k, self.n_bins)

    @property
    def total_bins(self) -> int:
        return 1 << (self.k * self.stages)

    @property
    def fanout(self) -> int:
        return 1 << self.k

    def shift(self, stage: int) -> int:
        """First id bit that ``stage`` (1-based) splits on."""
        return self.k * (stage - 1)

    def index(self, device: str) -> int:
        try:
            return self.members.index(device)
        except ValueError:
            raise SiftError(f"device {device!r} is not a sifting member; members: {list(self.members)}") from None

    def owner_of(self, tag: int) -> str:
        """TFT: the member that owns a key with this tag."""
        return self.members[tag % len(self.members)]

    def next_tag(self, stage: int, src_index: int, part: int, matched: int) -> int:
        """Tag of the part leaving ``stage``: a neighbour PE, or the bin itself after the last stage."""
        if stage >= self.stages:
            return matched
        return src_index * self.fanout + part

    def bin_owner(self, bin_id: int) -> str:
        return self.owner_of(bin_id)

    def to_dict(self) -> dict:
        return {"k": self.k, "n_bins": self.n_bins, "members": list(self.members), "routing": self.routing,
                "stages": self.stages, "total_bins": self.total_bins}

    @classmethod
    def from_dict(cls, d: dict) -> "SiftPlan":
        return cls(k=int(d["k"]), n_bins=int(d["n_bins"]), members=tuple(d["members"]),
                   routing=d.get("routing", "low"))


@dataclass(frozen=True)
class SiftKey:
    stage: int | str        # next stage number, or "bins"
    nbits: int              # how many low bits of the routing value are matched
    matched: int            # their value
    source: str             # producing device (or injecting rank)
    seq: int                # producer's sequence number (compaction or injection)
    tag: int                # TFT tag

    def __str__(self) -> str:
        head = BINS_STAGE if self.stage == BINS_STAGE else f"s{self.stage}"
        return f"{head}.b{self.nbits}.m{self.matched:x}.{self.source}.c{self.seq}/{self.tag}"

    @property
    def prefix(self) -> tuple[int, int]:
        return self.nbits, self.matched


def make_key(stage: int | str, nbits: int, matched: int, source: str, seq: int, tag: int) -> str:
    if not _SOURCE.match(source):
        raise SiftError(f"source name {source!r} may only use letters, digits, '_', '-' and ':'")
    if seq < 0 or tag < 0:
        raise SiftError("sequence numbers and tags are >= 0")
    return str(SiftKey(stage, nbits, matched, source, seq, tag))


def parse_key(key: str) -> SiftKey:
    m = _KEY.match(key)
    if not m:
        raise SiftError(f"{key!r} is not a sifting key (expected s<stage>.b<bits>.m<hex>.<source>.c<seq>/<tag>)")
    stage: int | str = BINS_STAGE if m["bins"] else int(m["stage"])
    return SiftKey(stage, int(m["nbits"]), int(m["matched"], 16), m["source"], int(m["seq"]), int(m["tag"]))


def bin_of(particle_ids, plan: SiftPlan):
    """Final bin of each particle id (numpy array in, numpy array out)."""
    import numpy as np

    from colony.sift.partition import routing_value
    v = routing_value(np.asarray(particle_ids, dtype=np.uint64), plan.routing)
    return v & np.uint64(plan.total_bins - 1)
