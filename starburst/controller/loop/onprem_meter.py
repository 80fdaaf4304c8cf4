"""Metering the private cluster while jobs run on it (showback of running jobs).

A run on-prem enters the ledger in intervals (``core.billing.onprem_usage``: at most one
metering chunk long, never across a UTC midnight, at the GPU types of the nodes it was
placed on). ``OnpremMeter`` asks the store to enter the complete intervals of every run
still going, once per chunk of the clock; the state change that ends a run enters the
rest of it. Both continue from the run's last entry, so a run is entered once, whoever
writes first, and a restarted controller simply carries on.
"""

from __future__ import annotations

import math

from starburst.core.ports import Ledger


class OnpremMeter:
    """Enters running on-prem jobs' usage every ``chunk`` seconds of the clock."""

    def __init__(self, store: Ledger, chunk: float) -> None:
        self.store, self.chunk = store, chunk
        self._next = -math.inf

    def meter(self, now: float) -> int:
        """Meter if a chunk of the clock has passed since the last time; entries written."""
        if now < self._next:
            return 0
        self._next = now + self.chunk
        return self.store.meter_onprem(now, chunk=self.chunk)
