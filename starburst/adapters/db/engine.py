"""Opening a database: URL rules, dialect set-up and translating driver failures.

- ``postgresql://`` and ``postgres://`` URLs use the psycopg 3 driver; ``sqlite:///path``
  creates the parent directory; ``sqlite://`` (no path) is a private in-memory database.
- SQLite runs every transaction as ``BEGIN IMMEDIATE`` (one writer at a time, waiting up to
  ``busy_timeout`` instead of failing on a lock upgrade), in WAL mode, with foreign keys on.
- Errors shown to people never contain a password: ``redact(url)`` masks it.
- ``DatabaseUnavailable`` (transient) is raised when the server cannot be reached or the
  connection dies mid-statement; ``DatabaseConfigError`` for a URL that cannot work.
- JSON columns are read by ``json_loads``: ``json.loads``, with the values most rows hold
  (a job's ``extra`` of ``{}``, its ``depends_on`` of ``null``) told without the parser;
  the controller's full re-read of 100,000 queued jobs decodes two per row.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Engine
from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError

from starburst.core.errors import ConfigError, ConflictError, TransientError

ENV_URL = "STARBURST_DATABASE_URL"
DEFAULT_SQLITE = Path.home() / ".local" / "share" / "starburst" / "starburst.db"
SQLITE_BUSY_MS = 30_000

T = TypeVar("T")


#: the JSON texts most rows hold, and a fresh value of each (the parser's own result)
_COMMON_JSON: dict[bytes | str, Callable[[], Any]] = {
    b"{}": dict,
    b"null": lambda: None,
    b"[]": list,
    "{}": dict,
    "null": lambda: None,
    "[]": list,
}


def json_loads(text: bytes | str) -> Any:
    """A JSON column's value: ``json.loads``, quicker for ``{}``, ``null`` and ``[]``
    (psycopg hands bytes, SQLite str)."""
    common = _COMMON_JSON.get(text)
    return common() if common is not None else json.loads(text)


class DatabaseUnavailable(TransientError):
    """The database cannot be reached, or the connection died during a statement."""


class WriteConflict(ConflictError):
    """PostgreSQL rolled the transaction back to end a conflict with a concurrent one (a
    deadlock, a serialization failure): nothing of it was written, and running it again
    may succeed. The database itself is up."""


#: the SQLSTATEs of ``WriteConflict``: deadlock detected, serialization failure
CONFLICT_STATES = frozenset({"40P01", "40001"})


class DatabaseConfigError(ConfigError):
    """A database URL that cannot work (unknown driver, malformed)."""


def default_url() -> str:
    """``$STARBURST_DATABASE_URL``, else an SQLite file in ``~/.local/share/starburst``."""
    return os.environ.get(ENV_URL) or f"sqlite:///{DEFAULT_SQLITE}"


def redact(url: str | sa.URL) -> str:
    """The URL with its password masked (also for strings SQLAlchemy cannot parse)."""
    try:
        parsed = url if isinstance(url, sa.URL) else sa.make_url(url)
        return parsed.render_as_string(hide_password=True)
    except ArgumentError:
        return re.sub(r"(^|//)([^:/@]*):[^/]*@", r"\1\2:***@", str(url))


def normalize_url(url: str) -> sa.URL:
    try:
        parsed = sa.make_url(url)
    except ArgumentError:
        raise DatabaseConfigError(f"not a database URL: {redact(url)}") from None
    if parsed.drivername in ("postgresql", "postgres"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    if not parsed.drivername.startswith(("postgresql", "sqlite")):
        raise DatabaseConfigError(
            f"cannot use database {redact(parsed)}: Starburst supports PostgreSQL and SQLite "
            "only (postgresql://user:password@host/db or sqlite:///path)"
        )
    return parsed


def is_postgres(engine: Engine) -> bool:
    return engine.dialect.name == "postgresql"


def in_memory(url: sa.URL) -> bool:
    """An in-memory SQLite database: private to its process (one connection, shared)."""
    return url.get_backend_name() == "sqlite" and url.database in (None, "", ":memory:")


def _sqlite_setup(engine: Engine) -> None:
    file_backed = not in_memory(engine.url)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None  # we issue BEGIN ourselves (below)
        cursor = dbapi_conn.cursor()
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_MS}")
        if file_backed:
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: sa.Connection) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE")


def create_engine(url: str | None = None, *, check: bool = True, **kwargs: Any) -> Engine:
    """An engine for ``url`` (default: ``default_url()``); with ``check``, connect once so an
    unreachable database fails here with a clear ``DatabaseUnavailable``."""
    parsed = normalize_url(url or default_url())
    # no statement parameters in errors or logs: they hold users' commands and env values
    options: dict[str, Any] = {"hide_parameters": True, "json_deserializer": json_loads}
    if parsed.drivername.startswith("sqlite"):
        if in_memory(parsed):
            options["poolclass"] = sa.StaticPool
        else:
            Path(str(parsed.database)).expanduser().parent.mkdir(parents=True, exist_ok=True)
        options["connect_args"] = {"check_same_thread": False, "timeout": SQLITE_BUSY_MS / 1000}
    elif parsed.drivername.startswith("postgresql"):
        options["pool_pre_ping"] = True
        options["connect_args"] = {"connect_timeout": 10}
    options.update(kwargs)
    try:
        engine = sa.create_engine(parsed, **options)
    except (NoSuchModuleError, ArgumentError):
        raise DatabaseConfigError(
            f"cannot use database {redact(parsed)}: unknown driver {parsed.drivername!r} "
            "(use postgresql://user:password@host/db or sqlite:///path)"
        ) from None
    if engine.dialect.name == "sqlite":
        _sqlite_setup(engine)
    if check:
        with translate_errors(engine), engine.connect() as conn:
            conn.exec_driver_sql("SELECT 1")
    return engine


def _first_line(exc: BaseException) -> str:
    text = str(getattr(exc, "orig", None) or exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


@contextmanager
def translate_errors(engine: Engine) -> Iterator[None]:
    """Turn lost connections and unreachable servers into ``DatabaseUnavailable``, and a
    transaction PostgreSQL rolled back to end a conflict into ``WriteConflict``.

    Constraint violations and programming errors pass through unchanged: they are bugs or
    are handled by the caller.
    """
    try:
        yield
    except DBAPIError as exc:
        if getattr(exc.orig, "sqlstate", None) in CONFLICT_STATES:
            raise WriteConflict(
                f"database {redact(engine.url)}: the transaction was rolled back to end a "
                f"conflict with a concurrent one ({_first_line(exc)}); nothing of it was "
                "written, and it may be retried"
            ) from exc
        lost = exc.connection_invalidated or isinstance(exc, sa.exc.OperationalError)
        if lost and not _is_lock_timeout(exc):
            raise DatabaseUnavailable(
                f"database {redact(engine.url)} is unavailable: {_first_line(exc)}"
            ) from exc
        raise


def _is_lock_timeout(exc: DBAPIError) -> bool:
    return "database is locked" in str(exc.orig)


def run(engine: Engine, work: Callable[[sa.Connection], T]) -> T:
    """Run ``work`` in one transaction; it commits on return and rolls back on any error."""
    with translate_errors(engine), engine.begin() as conn:
        return work(conn)


def run_statements(engine: Engine, work: Callable[[sa.Connection], T]) -> T:
    """Run ``work``, each of whose statements is whole on its own, without a transaction
    around them on PostgreSQL: each statement commits as it ends (autocommit), which
    saves the round trips of ``BEGIN`` and ``COMMIT``. Elsewhere, as ``run``.

    For work that is one statement, or statements that each hold on their own (a write,
    then a read of what it did not write); never for several writes that must stand or
    fall together."""
    if not is_postgres(engine):
        return run(engine, work)
    with (
        translate_errors(engine),
        engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn,
    ):
        return work(conn)
