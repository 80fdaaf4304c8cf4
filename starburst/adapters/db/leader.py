"""The controller's leader lock, with fencing tokens.

Several controller replicas may run; only the holder of the lock schedules. Terms:
- *holder*: the replica that acquired the lock; it keeps a dedicated connection open for as
  long as it leads.
- *fencing token*: on every successful acquisition ``leader_terms.token`` for the lock's name
  is incremented and handed to the new holder. The holder passes it with each decision it
  writes (``fencing_token=``); the store rejects tokens older than the current one, so a
  replica that lost the lock without noticing (a long GC pause, a partition) cannot write.

Invariants:
- PostgreSQL: a session-level advisory lock on the holder's connection. A second replica
  cannot take it while the holder's session lives, and the server frees it the moment that
  session ends (process killed, connection dropped, backend terminated).
- SQLite: an exclusive transaction held open on a lock file next to the database
  (``<db>.<name>.leader``); the operating system frees it when the holding process dies or
  the connection closes. An in-memory SQLite database uses a per-process lock.
- Tokens only ever grow; they are stored in the database itself, not in the lock.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import socket
import sqlite3
import threading
from datetime import UTC, datetime

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Engine

from starburst.core.leadership import LeaderLock, LeaderLockBusy

from .engine import translate_errors
from .models import LeaderTermRow, table

TERMS = table(LeaderTermRow)
_LOCK_NOT_AVAILABLE = "55P03"  # PostgreSQL: lock_timeout expired


def default_holder() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def lock_key(name: str) -> int:
    """A stable signed 64-bit advisory-lock key for ``name``."""
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big", signed=True)


def _next_token(conn: sa.Connection, name: str, holder: str) -> int:
    now = datetime.now(UTC)
    insert = postgresql.insert(TERMS) if conn.dialect.name == "postgresql" else sqlite.insert(TERMS)
    statement = (
        insert.values(name=name, token=1, holder=holder, acquired_at=now)
        .on_conflict_do_update(
            index_elements=["name"],
            set_={"token": TERMS.c.token + 1, "holder": holder, "acquired_at": now},
        )
        .returning(TERMS.c.token)
    )
    return int(conn.execute(statement).scalar_one())


class PostgresLeaderLock:
    """Advisory lock on a dedicated connection (see the module docstring)."""

    def __init__(self, engine: Engine, name: str = "controller", holder: str | None = None):
        self._engine, self.name = engine, name
        self.holder = holder or default_holder()
        self._key = lock_key(name)
        self._conn: sa.Connection | None = None
        self._token: int | None = None

    @property
    def token(self) -> int | None:
        return self._token

    @property
    def backend_pid(self) -> int | None:
        """The server process of the holding session (for operators and tests)."""
        if self._conn is None:
            return None
        return int(self._conn.exec_driver_sql("SELECT pg_backend_pid()").scalar_one())

    def _open(self) -> sa.Connection:
        with translate_errors(self._engine):
            return self._engine.connect().execution_options(isolation_level="AUTOCOMMIT")

    def try_acquire(self) -> int | None:
        if self._token is not None:
            return self._token
        conn = self._open()
        try:
            with translate_errors(self._engine):
                got = conn.execute(sa.select(sa.func.pg_try_advisory_lock(self._key))).scalar()
                if not got:
                    conn.close()
                    return None
                return self._won(conn)
        except BaseException:
            _discard(conn)  # the server went away mid-way: never leak the session
            self._conn, self._token = None, None
            raise

    def acquire(self, timeout: float | None = None) -> int:
        if self._token is not None:
            return self._token
        conn = self._open()
        wait = "0" if timeout is None else f"{max(1, int(timeout * 1000))}ms"
        with translate_errors(self._engine):
            conn.exec_driver_sql(f"SET lock_timeout = '{wait}'")
            try:
                conn.execute(sa.select(sa.func.pg_advisory_lock(self._key)))
            except sa.exc.OperationalError as exc:
                conn.close()
                if getattr(exc.orig, "sqlstate", None) != _LOCK_NOT_AVAILABLE:
                    raise
                raise LeaderLockBusy(
                    f"leader lock {self.name!r} is held by another replica"
                ) from None
            conn.exec_driver_sql("SET lock_timeout = 0")
            return self._won(conn)

    def _won(self, conn: sa.Connection) -> int:
        self._conn = conn
        self._token = _next_token(conn, self.name, self.holder)
        return self._token

    def is_held(self) -> bool:
        if self._conn is None:
            return False
        query = sa.text(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted "
            "AND pid = pg_backend_pid() AND objsubid = 1 "
            "AND classid::bigint = :hi AND objid::bigint = :lo"
        )
        unsigned = self._key & 0xFFFFFFFFFFFFFFFF
        try:
            found = self._conn.execute(query, {"hi": unsigned >> 32, "lo": unsigned & 0xFFFFFFFF})
            return bool(found.scalar())
        except sa.exc.SQLAlchemyError:
            self._drop()
            return False

    def release(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(sa.exc.SQLAlchemyError):  # a dead session took the lock along
                self._conn.execute(sa.select(sa.func.pg_advisory_unlock(self._key)))
        self._drop()

    def close(self) -> None:
        self.release()  # the lock owns only its session, which release gives back

    def _drop(self) -> None:
        if self._conn is not None:
            _discard(self._conn)
        self._conn, self._token = None, None


def _discard(conn: sa.Connection) -> None:
    try:
        conn.close()
    except sa.exc.SQLAlchemyError:
        with contextlib.suppress(sa.exc.SQLAlchemyError):
            conn.invalidate()


_MEMORY_LOCKS: dict[str, threading.Lock] = {}
_MEMORY_GUARD = threading.Lock()


class SqliteLeaderLock:
    """An exclusive transaction on ``<db>.<name>.leader`` (see the module docstring)."""

    def __init__(self, engine: Engine, name: str = "controller", holder: str | None = None):
        self._engine, self.name = engine, name
        self.holder = holder or default_holder()
        database = engine.url.database
        self.path = None if database in (None, "", ":memory:") else f"{database}.{name}.leader"
        self._file: sqlite3.Connection | None = None
        self._memory: threading.Lock | None = None
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
        if self.path is None:
            with _MEMORY_GUARD:
                lock = _MEMORY_LOCKS.setdefault(self.name, threading.Lock())
            if not lock.acquire(timeout=-1 if timeout is None else timeout):
                return None
            self._memory = lock
        else:
            wait = 365 * 24 * 3600.0 if timeout is None else timeout
            conn = sqlite3.connect(
                self.path, timeout=wait, isolation_level=None, check_same_thread=False
            )
            try:
                conn.execute("BEGIN EXCLUSIVE")
            except sqlite3.OperationalError:
                conn.close()
                return None
            self._file = conn
        with translate_errors(self._engine), self._engine.begin() as conn_:
            self._token = _next_token(conn_, self.name, self.holder)
        return self._token

    def is_held(self) -> bool:
        return self._token is not None

    def release(self) -> None:
        if self._file is not None:
            self._file.close()  # ends the transaction and frees the file lock
        if self._memory is not None:
            self._memory.release()
        self._file, self._memory, self._token = None, None, None

    def close(self) -> None:
        self.release()


def next_term(engine: Engine, name: str, holder: str) -> int:
    """Hand out the next fencing token of ``name`` (for a leader elected elsewhere, e.g. by a
    Kubernetes Lease: the store still fences every write with it)."""
    with translate_errors(engine), engine.begin() as conn:
        return _next_token(conn, name, holder)


def local_state(engine: Engine, name: str) -> str | None:
    """The ``host:state directory`` the last leader of ``name`` recorded (None: none)."""
    query = sa.select(TERMS.c.local_state).where(TERMS.c.name == name)
    with translate_errors(engine), engine.connect() as conn:
        return conn.execute(query).scalar()


def record_local_state(engine: Engine, name: str, token: int, where: str | None) -> bool:
    """Record ``where`` as the local state of the term ``token`` of ``name``; False if a
    later term began meanwhile (nothing is written then)."""
    update = (
        sa.update(TERMS)
        .where(TERMS.c.name == name, TERMS.c.token == token)
        .values(local_state=where)
    )
    with translate_errors(engine), engine.begin() as conn:
        return conn.execute(update).rowcount == 1


def leader_lock(engine: Engine, name: str = "controller", holder: str | None = None) -> LeaderLock:
    """The leader lock that fits the engine's database."""
    if engine.dialect.name == "postgresql":
        return PostgresLeaderLock(engine, name, holder)
    return SqliteLeaderLock(engine, name, holder)
