"""The in-memory store's leader lock: one holder at a time among replicas sharing the store,
a new fencing token at each acquisition, and writes fenced by a deposed holder refused."""

from __future__ import annotations

import pytest

from starburst.adapters.memory.store import LeaderLockBusy, MemoryLeaderLock, MemoryStore
from starburst.core.lifecycle import JobState
from starburst.core.records import JobSpec, StaleLeader


def test_one_holder_at_a_time_and_each_term_fences_the_last() -> None:
    store = MemoryStore()
    job_id = store.submissions.submit(JobSpec(gpus=1)).job.id
    first, second = MemoryLeaderLock(store), MemoryLeaderLock(store)
    token = first.try_acquire()
    assert token == 1 and first.is_held() and first.token == 1
    assert first.try_acquire() == 1  # holding it already: the same term
    assert second.try_acquire() is None and not second.is_held()
    with pytest.raises(LeaderLockBusy):
        second.acquire(timeout=0.0)
    store.lifecycle.transition(job_id, JobState.QUEUED, reason="ok", actor="a", fencing_token=token)
    first.release()
    assert not first.is_held() and first.token is None
    assert second.acquire(timeout=0.0) == 2
    with pytest.raises(StaleLeader):
        store.lifecycle.transition(
            job_id, JobState.BURSTING, reason="late", actor="a", fencing_token=1
        )
    assert store.jobs.get(job_id).state is JobState.QUEUED
    second.release()
    second.release()  # releasing twice is harmless


def test_locks_of_other_names_and_stores_are_independent() -> None:
    store, other = MemoryStore(), MemoryStore()
    controller = MemoryLeaderLock(store)
    assert controller.try_acquire() == 1
    assert MemoryLeaderLock(store, "reporter").try_acquire() == 1  # another lock name
    assert MemoryLeaderLock(other).try_acquire() == 1  # another store
    assert store.next_term() == 2  # the store's own leader name: the controller's lock


def test_closing_a_lock_hands_it_over_and_every_lock_is_the_core_port(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """``close`` is part of ``core.leadership.LeaderLock``: the daemon calls it on any lock
    (it once probed for it with getattr)."""
    import inspect

    from starburst.adapters.db.leader import PostgresLeaderLock, SqliteLeaderLock
    from starburst.adapters.kubernetes.lease import LeaseLock
    from starburst.core.leadership import LeaderLock
    from starburst.core.leadership import LeaderLockBusy as CoreBusy

    store = MemoryStore()
    first, second = MemoryLeaderLock(store), MemoryLeaderLock(store)
    assert first.try_acquire() == 1
    first.close()
    assert not first.is_held() and second.acquire(timeout=0.0) == 2
    with pytest.raises(CoreBusy):  # every lock's "busy" is the core's error
        first.acquire(timeout=0.0)
    port = {n for n, _ in inspect.getmembers(LeaderLock) if not n.startswith("_")}
    for lock in (MemoryLeaderLock, PostgresLeaderLock, SqliteLeaderLock, LeaseLock):
        assert port <= {n for n in dir(lock) if not n.startswith("_")}, lock
