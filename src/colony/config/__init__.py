"""Colony configuration: devices, pools and service placement, read from TOML (pure; no Ray).

``ColonyConfig.from_dict(d)``, ``load(path)`` and ``default()`` return a validated,
immutable configuration; every mistake raises :class:`ConfigError` naming the key and
the fix. The schema is documented in docs/runtime.md.
"""

from colony.config import builders
from colony.config.profiles import PROFILES, Profile
from colony.config.schema import (ROLES, ColonyConfig, DeviceSpec, PoolSpec, RuntimeSpec, ServicePlacement, default,
                                  load, parse_size)

__all__ = ["builders", "PROFILES", "Profile", "ROLES", "ColonyConfig", "DeviceSpec", "PoolSpec", "RuntimeSpec", "ServicePlacement",
           "default", "load", "parse_size"]
