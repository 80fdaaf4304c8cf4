"""The one way tests wait on threads, processes and servers: ``wait_for``, bounded.

``wait_for(check)`` calls ``check`` until it returns something truthy and returns that value
(so ``assert wait_for(...)`` and ``value = wait_for(...)`` both read naturally); after
``timeout`` seconds it raises ``WaitTimeout`` (an ``AssertionError``) naming what it waited
for, so a broken feature fails with a message instead of hanging. Logic that does not need
real concurrency waits on a ``tests.support.clock.ManualClock`` instead.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


class WaitTimeout(AssertionError):
    """The awaited condition did not hold within the timeout."""


def wait_for(
    check: Callable[[], T], timeout: float = 20.0, interval: float = 0.02, what: str = ""
) -> T:
    """Poll ``check`` every ``interval`` seconds until it returns a truthy value (returned);
    raise ``WaitTimeout`` once ``timeout`` seconds passed without one."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise WaitTimeout(f"not within {timeout}s: {what or _describe(check)}")
        time.sleep(interval)


def _describe(check: Callable[[], object]) -> str:
    name = getattr(check, "__qualname__", repr(check))
    code = getattr(check, "__code__", None)
    where = f" ({code.co_filename.rsplit('/', 1)[-1]}:{code.co_firstlineno})" if code else ""
    return f"{name}{where}"
