"""The Colony runtime on Ray: device actors, pools, injection, emulation, calibration.

The only package (with CLI and bench wiring) that imports Ray.
"""

from colony.runtime.actor import DeviceActor, RayPeers, actor_name
from colony.runtime.client import Colony, connect, ray_start_line

__all__ = ["Colony", "DeviceActor", "RayPeers", "actor_name", "connect", "ray_start_line"]
