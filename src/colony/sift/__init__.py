"""Particle sifting: reorganize particle snapshots into tracks over a multi-stage PE pipeline (pure; no Ray)."""

from colony.sift.node import BINS, OUTBOX, SiftNode, sort_tracks, stage_pool
from colony.sift.partition import mix64, partition_ids, routing_value, split, split_by_ids, split_by_select
from colony.sift.plan import SiftKey, SiftPlan, bin_of, make_key, parse_key, stages_for

__all__ = ["BINS", "OUTBOX", "SiftNode", "sort_tracks", "stage_pool", "mix64", "partition_ids", "routing_value",
           "split", "split_by_ids", "split_by_select", "SiftKey", "SiftPlan", "bin_of", "make_key", "parse_key",
           "stages_for"]
