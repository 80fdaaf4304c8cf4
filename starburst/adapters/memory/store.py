"""``MemoryStore``: the whole store port (``core.ports.Store``) held in memory.

For the controller on virtual time, the simulator and tests: the same rules as the SQL store
(it passes the same contract suite, ``tests/contract/test_store_*.py``), no database,
nothing durable. One re-entrant lock makes each method one transaction; see ``tables.py``.

Leadership: ``next_term()`` hands out fencing tokens (as ``adapters.db.leader.next_term``
does for a leader elected elsewhere), and ``MemoryLeaderLock`` is a leader lock over it for
replicas in one process.
"""

from __future__ import annotations

import threading

from starburst.core.leadership import LeaderLockBusy
from starburst.core.ports import (
    Accounts,
    Clock,
    JobStore,
    Ledger,
    ModelRegistry,
    Store,
    TuningLog,
)

from .accounts import MemoryAccounts
from .jobs import MemoryJobs
from .learning import MemoryLearning
from .ledger import MemoryLedger
from .transitions import MemoryTransitions
from .tuning import MemoryTuning


class MemoryStore(MemoryJobs, MemoryTransitions, MemoryLedger, MemoryAccounts, MemoryLearning):
    """``MemoryStore(clock=..., leader_name="controller")``: ``clock`` stamps writes made
    without ``at=`` (default: the wall clock); ``leader_name`` is the lock whose tokens
    fence writes made with ``fencing_token=``."""

    def __init__(self, *, clock: Clock | None = None, leader_name: str = "controller") -> None:
        super().__init__(clock=clock, leader_name=leader_name)
        self._leader_locks: dict[str, threading.Lock] = {}

    @property
    def tuning(self) -> MemoryTuning:
        return MemoryTuning(self)

    def close(self) -> None:
        """Nothing to release; the state stays readable."""

    def leader_mutex(self, name: str) -> threading.Lock:
        with self._lock:
            return self._leader_locks.setdefault(name, threading.Lock())


class MemoryLeaderLock:
    """A leader lock among replicas sharing one ``MemoryStore``; each acquisition hands out
    the store's next fencing token (``core.leadership.LeaderLock``)."""

    def __init__(self, store: MemoryStore, name: str | None = None) -> None:
        self._store = store
        self.name = store.leader_name if name is None else name
        self._mutex = store.leader_mutex(self.name)
        self._token: int | None = None

    @property
    def token(self) -> int | None:
        return self._token

    def try_acquire(self) -> int | None:
        return self._take(0.0)

    def acquire(self, timeout: float | None = None) -> int:
        token = self._take(timeout)
        if token is None:
            raise LeaderLockBusy(f"leader lock {self.name!r} is held by another replica")
        return token

    def _take(self, timeout: float | None) -> int | None:
        if self._token is not None:
            return self._token
        if not self._mutex.acquire(timeout=-1 if timeout is None else timeout):
            return None
        self._token = self._store.next_term(self.name)
        return self._token

    def is_held(self) -> bool:
        return self._token is not None

    def release(self) -> None:
        if self._token is not None:
            self._mutex.release()
        self._token = None

    def close(self) -> None:
        self.release()


def _implements_the_core_ports(
    store: MemoryStore,
) -> tuple[JobStore, Ledger, Accounts, ModelRegistry, TuningLog]:
    whole: Store = store  # mypy checks, structurally, that MemoryStore is every store port
    return whole, whole, whole, whole, whole.tuning
