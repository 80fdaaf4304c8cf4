"""Waiting for a condition in tests of threads and processes: bounded, so a broken feature
fails instead of hanging."""

from __future__ import annotations

import time
from collections.abc import Callable


def wait_for(check: Callable[[], bool], timeout: float = 20.0) -> bool:
    """Poll ``check`` every 50 ms until it is true (True) or ``timeout`` passes (False)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return False
