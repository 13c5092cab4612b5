"""Particle data: the seeds' schema, deterministic generators and real-world-shaped loaders."""

from colony.data.schema import PARTICLE_SCHEMA, validate_particles
from colony.data.generators import uniform, clustered, Simulation
from colony.data.loaders import (FORMATS, iter_particles, load_trackml, load_opensky, load_ais, stable_id_hash,
                                 sample_path)

__all__ = [
    "PARTICLE_SCHEMA", "validate_particles", "uniform", "clustered", "Simulation",
    "load_trackml", "load_opensky", "load_ais", "stable_id_hash", "sample_path", "FORMATS", "iter_particles",
]
