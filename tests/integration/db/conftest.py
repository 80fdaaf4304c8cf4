"""Fixtures for the database adapter: every ``store`` test runs on SQLite and PostgreSQL.

``db_url`` is parametrized over both dialects; each test gets its own freshly migrated
database (see ``tests/support/databases.py``). The PostgreSQL server is the session's
throwaway cluster (``tests/support/postgres.py``) or ``$STARBURST_TEST_DATABASE_URL``.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

_ROOT = Path(__file__).resolve().parents[3]
if str(_ROOT) not in sys.path:  # `pytest` run without `python -m`
    sys.path.insert(0, str(_ROOT))

from tests.support import postgres as _postgres  # noqa: E402
from tests.support.databases import ManualClock, MigratedTemplates  # noqa: E402

drop_database = _postgres.drop_database
# Fixtures shared through tests/support/postgres.py (re-exported so pytest finds them here).
postgres_url = _postgres.postgres_url
postgres_database = _postgres.postgres_database

pytest.importorskip("sqlalchemy")


@pytest.fixture(scope="session")
def migrated_templates() -> Iterator[MigratedTemplates]:
    templates = MigratedTemplates()
    yield templates
    templates.close()


@pytest.fixture(scope="session")
def postgres_template(postgres_url: str, migrated_templates: MigratedTemplates) -> Iterator[str]:
    """A migrated PostgreSQL database that per-test databases are cloned from."""
    url = migrated_templates.postgres_template(postgres_url)
    yield url
    drop_database(url)


@pytest.fixture(
    params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)],
)
def db_url(
    request: pytest.FixtureRequest, migrated_templates: MigratedTemplates, tmp_path: Path
) -> Iterator[str]:
    """A freshly migrated database of the parametrized dialect."""
    if request.param == "sqlite":
        yield migrated_templates.sqlite_url(tmp_path)
        return
    server = request.getfixturevalue("postgres_url")
    url = migrated_templates.postgres_url(server, request.getfixturevalue("postgres_template"))
    try:
        yield url
    finally:
        drop_database(url)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def engine(db_url: str):  # type: ignore[no-untyped-def]
    from starburst.adapters.db.engine import create_engine

    engine = create_engine(db_url)
    yield engine
    engine.dispose()


@pytest.fixture
def store(engine, clock: ManualClock):  # type: ignore[no-untyped-def]
    from starburst.adapters.db.store import SqlStore

    return SqlStore(engine, clock=clock)


@pytest.fixture
def pg_db_url(
    postgres_url: str, postgres_template: str, migrated_templates: MigratedTemplates
) -> Iterator[str]:
    """A freshly migrated PostgreSQL database (for PostgreSQL-only behaviour)."""
    url = migrated_templates.postgres_url(postgres_url, postgres_template)
    try:
        yield url
    finally:
        drop_database(url)
