"""The live system's clock: the wall clock behind the core's ``Clock`` port.

The one place outside tests that reads the time of day; everything else takes a ``Clock``.
"""

from __future__ import annotations

import time


class WallClock:
    """Seconds since the epoch, from the system clock."""

    def now(self) -> float:
        return time.time()
