"""The simulated clock: time jumps from event to event and never goes backwards."""

from __future__ import annotations


class SimClock:
    __slots__ = ("_now",)

    def __init__(self, start: float = 0.0) -> None:
        self._now = start

    def now(self) -> float:
        return self._now

    def advance_to(self, t: float) -> None:
        if t < self._now:
            raise ValueError(f"simulated time cannot go back from {self._now} to {t}")
        self._now = t
