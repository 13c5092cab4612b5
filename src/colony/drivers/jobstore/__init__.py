"""The job-local store, host side: the client (API) and the FUSE view over it; they reach the
devices only through the Colony interface (put/get for chunks, call for metadata)."""

from colony.drivers.jobstore.client import JobStore, Writer

__all__ = ["JobStore", "Writer"]
