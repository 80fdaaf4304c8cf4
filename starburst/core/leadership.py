"""Leadership: the port through which one controller replica of many becomes the leader.

Terms and invariants:
- *leader lock*: held by at most one replica at a time; each acquisition hands out a new
  *fencing token* (monotonic per lock name). The store refuses writes that carry an older
  token (``StaleLeader``), so a deposed leader that has not noticed yet changes nothing.
- ``is_held`` turns False once the replica lost the lock (its database session died, its
  Kubernetes Lease was not renewed in time); the controller then steps down.
- ``close`` releases the lock and frees what the lock owns (a connection, a renewal
  thread, an API client); the lock is not used again afterwards.

Implementations: PostgreSQL advisory lock and SQLite lock file (``adapters.db.leader``),
Kubernetes Lease (``adapters.kubernetes.lease``), in-memory (``adapters.memory.store``).
"""

from __future__ import annotations

from typing import Protocol

from starburst.core.errors import TransientError


class LeaderLockBusy(TransientError):
    """Another replica holds the leader lock (``acquire`` timed out)."""


class LeaderLock(Protocol):
    @property
    def token(self) -> int | None:
        """The fencing token while held, else None."""
        ...

    def try_acquire(self) -> int | None:
        """Take the lock if free; return the new fencing token, or None if it is held."""
        ...

    def acquire(self, timeout: float | None = None) -> int:
        """Wait up to ``timeout`` seconds (None: forever); raise ``LeaderLockBusy``."""
        ...

    def is_held(self) -> bool:
        """Whether this replica still holds the lock (False once it was lost)."""
        ...

    def release(self) -> None:
        """Hand the lock back (a no-op when not held); it may be acquired again."""
        ...

    def close(self) -> None:
        """Release, and free what the lock owns; the lock is not used again."""
        ...
