"""The one hand-moved clock of the test suite.

``ManualClock`` implements the core's ``Clock`` port: ``now()`` returns ``t`` (seconds, on
whatever epoch the test picks), which only ``advance`` (forward by some seconds) and ``set``
(to an instant) move, so a test decides exactly when time passes. Tests that need time to pass
on its own (threads, processes, servers) use the wall clock and ``tests.support.waiting``.
"""

from __future__ import annotations

#: the default start: an instant in 2026, so dates and months in reports look real
EPOCH = 1_780_000_000.0


class ManualClock:
    """A clock the test moves by hand (``t`` is the current instant)."""

    def __init__(self, start: float = EPOCH) -> None:
        self.t = float(start)

    def now(self) -> float:
        return self.t

    def advance(self, seconds: float) -> float:
        """Move forward by ``seconds`` (never back: a clock that runs backwards is a bug)."""
        if seconds < 0:
            raise ValueError(f"a clock only moves forward, not by {seconds}s")
        self.t += seconds
        return self.t

    def set(self, instant: float) -> float:
        """Jump to ``instant`` (a scenario's next event time)."""
        self.t = float(instant)
        return self.t
