"""The registry of job processes this process spawned and has not reaped yet.

Children outlive their backend object by design (a controller that stops leaves its jobs
running for the next life to adopt). So every unreaped ``Popen`` is kept here, module-wide,
until it is reaped: dropping a backend object never finalises a running child's ``Popen``
(which Python reports as a leak), and ``reap_ended_children`` (called by every spawn, and at
exit) reaps the children that ended, whoever spawned them, so a dropped backend's jobs do not
linger as zombies.
"""

from __future__ import annotations

import atexit
import subprocess
import threading

_UNREAPED: set[subprocess.Popen[bytes]] = set()
_UNREAPED_LOCK = threading.Lock()


def register(popen: subprocess.Popen[bytes]) -> None:
    with _UNREAPED_LOCK:
        _UNREAPED.add(popen)


def reaped(popen: subprocess.Popen[bytes]) -> None:
    with _UNREAPED_LOCK:
        _UNREAPED.discard(popen)


def reap_ended_children() -> int:
    """Reap every registered child that has ended (whoever spawned it); how many were."""
    with _UNREAPED_LOCK:
        ended = {p for p in _UNREAPED if p.poll() is not None}
        _UNREAPED.difference_update(ended)
    return len(ended)


atexit.register(reap_ended_children)  # children that ended unwatched are not zombies at exit
