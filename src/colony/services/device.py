"""The `device` service: what a device can tell about itself (its calibration, its budgets).

Cost models and decision engines on other devices or clients read a device's persisted
calibration through it (``call(dev, "device", "calibration")``) instead of reading files
on another machine; it never exposes emulation settings as performance facts.
"""

from __future__ import annotations

from colony.services.base import Service, endpoint, service


@service
class Device(Service):
    name = "device"

    @endpoint
    def calibration(self) -> dict:
        """The device's persisted calibration ({} if never calibrated)."""
        return dict(self.ctx.calibration or {})

    @endpoint
    def describe(self) -> dict:
        """Name, role, thread budget and pools (facts, not speeds)."""
        return {"name": self.ctx.name, "role": self.ctx.role, "threads": self.ctx.threads,
                "pools": self.ctx.store.pools()}
