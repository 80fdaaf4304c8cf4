"""``MemoryStore``: the whole store port (``core.ports.Store``) held in memory.

For the controller on virtual time, the simulator and tests: the same rules as the SQL store
(it passes the same contract suite, ``tests/contract/test_store_*.py``), no database,
nothing durable. Like ``SqlStore`` it is a plain object: one ``MemoryDatabase``
(``tables.py``: the tables, one re-entrant lock that makes each method one transaction, the
clock, the leader terms) and one repository per port over it — ``submissions``
(``submissions.MemorySubmissions``), ``jobs`` (``jobs.MemoryJobs``), ``lifecycle``
(``transitions.MemoryTransitions``), ``ledger``
(``ledger.MemoryLedger``), ``accounts`` (``accounts.MemoryAccounts``), ``models``
(``learning.MemoryModels``) and ``tuning`` (``tuning.MemoryTuning``).

Leadership: ``next_term()`` hands out fencing tokens (as ``adapters.db.leader.next_term``
does for a leader elected elsewhere), and ``MemoryLeaderLock`` is a leader lock over it for
replicas in one process.
"""

from __future__ import annotations

import threading

from starburst.core.leadership import LeaderLockBusy
from starburst.core.ports import Clock, Store

from .accounts import MemoryAccounts
from .jobs import MemoryJobs
from .learning import MemoryModels
from .ledger import MemoryLedger
from .submissions import MemorySubmissions
from .tables import MemoryDatabase
from .transitions import MemoryTransitions
from .tuning import MemoryTuning


class MemoryStore:
    """``MemoryStore(clock=..., leader_name="controller")``: ``clock`` stamps writes made
    without ``at=`` (default: the wall clock); ``leader_name`` is the lock whose tokens
    fence writes made with ``fencing_token=``."""

    def __init__(self, *, clock: Clock | None = None, leader_name: str = "controller") -> None:
        self.database = MemoryDatabase(clock=clock, leader_name=leader_name)
        self.submissions = MemorySubmissions(self.database)
        self.jobs = MemoryJobs(self.database)
        self.lifecycle = MemoryTransitions(self.database)
        self.ledger = MemoryLedger(self.database)
        self.accounts = MemoryAccounts(self.database)
        self.models = MemoryModels(self.database)
        self.tuning = MemoryTuning(self.database)
        self._leader_locks: dict[str, threading.Lock] = {}

    @property
    def clock(self) -> Clock:
        return self.database.clock

    @property
    def leader_name(self) -> str:
        return self.database.leader_name

    def next_term(self, name: str | None = None) -> int:
        """Hand out the next fencing token of lock ``name`` (default: this store's leader);
        from now on writes fenced with an older token are refused."""
        return self.database.next_term(name)

    def close(self) -> None:
        """Nothing to release; the state stays readable."""

    def leader_mutex(self, name: str) -> threading.Lock:
        with self.database.lock:
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


def _implements_the_core_port(store: MemoryStore) -> Store:
    return store  # mypy checks, structurally, that MemoryStore is the core's Store
