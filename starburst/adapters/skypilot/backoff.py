"""Exponential backoff for transient SkyPilot failures, in the caller's clock.

``delay(n)`` is the wait after the n-th consecutive transient failure (n ≥ 1):
``min(cap, base × factor^(n-1))``. No jitter: the adapter is the only caller per job and
deterministic delays keep tests and decision logs reproducible. After ``max_attempts``
consecutive transient failures the failure is treated as permanent (the reason says so).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Backoff:
    base: float = 5.0
    factor: float = 2.0
    cap: float = 300.0
    max_attempts: int = 8

    def delay(self, failures: int) -> float:
        return min(self.cap, self.base * self.factor ** max(0, failures - 1))

    def exhausted(self, failures: int) -> bool:
        return failures >= self.max_attempts
