"""The leader lock: one holder at a time, monotonic fencing tokens, freed when the holder dies."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest
import sqlalchemy as sa

from starburst.adapters.db.engine import create_engine
from starburst.adapters.db.leader import LeaderLockBusy, PostgresLeaderLock, leader_lock

ROOT = Path(__file__).resolve().parents[3]


def test_second_holder_cannot_acquire_until_release(engine):  # type: ignore[no-untyped-def]
    first = leader_lock(engine, "controller", holder="replica-a")
    second = leader_lock(engine, "controller", holder="replica-b")
    token = first.try_acquire()
    assert token is not None and first.is_held()
    assert second.try_acquire() is None
    with pytest.raises(LeaderLockBusy):
        second.acquire(timeout=0.05)
    assert not second.is_held() and second.token is None
    first.release()
    assert not first.is_held()
    next_token = second.acquire(timeout=5)
    assert next_token == token + 1 and second.token == next_token
    with engine.connect() as conn:
        holder = conn.execute(sa.text("SELECT holder FROM leader_terms")).scalar_one()
    assert holder == "replica-b"
    second.release()


def test_a_waiting_replica_blocks_until_the_holder_releases(engine):  # type: ignore[no-untyped-def]
    holder = leader_lock(engine, "controller", holder="a")
    waiter = leader_lock(engine, "controller", holder="b")
    first = holder.acquire(timeout=5)
    got: list[int] = []
    acquired = threading.Event()

    def wait_for_lock() -> None:
        got.append(waiter.acquire(timeout=30))
        acquired.set()

    thread = threading.Thread(target=wait_for_lock)
    thread.start()
    assert not acquired.wait(0.3)  # never while the holder holds it
    holder.release()
    thread.join()
    assert got == [first + 1] and waiter.is_held()
    waiter.release()


def test_locks_with_different_names_are_independent(engine):  # type: ignore[no-untyped-def]
    a, b = leader_lock(engine, "controller"), leader_lock(engine, "metering")
    assert a.try_acquire() == 1 and b.try_acquire() == 1
    a.release()
    b.release()


@pytest.mark.postgres
def test_postgres_lock_frees_when_the_holders_backend_is_killed(pg_db_url):  # type: ignore[no-untyped-def]
    engine = create_engine(pg_db_url)
    holder = PostgresLeaderLock(engine, "controller", holder="doomed")
    waiter = PostgresLeaderLock(engine, "controller", holder="next")
    token = holder.acquire(timeout=5)
    pid = holder.backend_pid
    assert waiter.try_acquire() is None
    with engine.connect() as admin:
        admin.execute(sa.text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
    assert not holder.is_held()
    assert waiter.acquire(timeout=5) == token + 1 and waiter.is_held()
    holder.release()  # harmless after death
    waiter.release()
    engine.dispose()


def _holder_process(url: str) -> subprocess.Popen[str]:
    code = textwrap.dedent(f"""
        import sys, time
        sys.path.insert(0, {str(ROOT)!r})
        from starburst.adapters.db.engine import create_engine
        from starburst.adapters.db.leader import leader_lock
        lock = leader_lock(create_engine({url!r}), "controller", holder="child")
        print(lock.acquire(timeout=10), flush=True)
        sys.stdin.read()  # hold until killed
    """)
    return subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )


def test_lock_frees_when_the_holding_process_is_killed(db_url, engine):  # type: ignore[no-untyped-def]
    child = _holder_process(db_url)
    try:
        assert child.stdout is not None
        token = int(child.stdout.readline())
        waiter = leader_lock(engine, "controller", holder="survivor")
        assert waiter.try_acquire() is None
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        assert waiter.acquire(timeout=10) == token + 1
        waiter.release()
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        if child.stdout is not None:
            child.stdout.close()
        if child.stdin is not None:
            child.stdin.close()
