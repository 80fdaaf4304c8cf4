"""The cloud side's health as a hold: while the cloud cannot burst, every job waits on-prem.

``CloudGate(health)`` asks a cloud that can tell (its ``CloudHealth`` capability: SkyPilot
says "no cloud enabled in SkyPilot: run `sky check`" or that its API server does not answer)
once per pass; while it is degraded the pass holds every job (``HOLD_ALL``) with that reason
instead of bursting it, and ``reason`` is what readiness reports as the cloud side's
degradation. A cloud that cannot tell (``health`` None) is never held here.
"""

from __future__ import annotations

from starburst.core.cycle import HOLD_ALL
from starburst.core.ports import CloudHealth


class CloudGate:
    def __init__(self, health: CloudHealth | None) -> None:
        self._health = health
        self.reason: str | None = None

    def __call__(self, now: float) -> dict[str, str]:
        self.reason = self._health.degraded() if self._health is not None else None
        if self.reason is None:
            return {}
        return {HOLD_ALL: held_reason(self.reason)}


def held_reason(degraded: str) -> str:
    """Why every job waits on-prem while the cloud side cannot burst."""
    return f"the cloud side cannot burst ({degraded}); waiting on-prem"
