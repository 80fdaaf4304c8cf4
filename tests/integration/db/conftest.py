"""Fixtures for the database adapter: every ``store`` test runs on SQLite and PostgreSQL.

``db_url`` is parametrized over both dialects; each test starts from an empty database
migrated with the real migrations (SQLite: a copy of a migrated file; PostgreSQL: one
migrated database per session, truncated before each test). The PostgreSQL server is the session's
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
from tests.support.clock import ManualClock  # noqa: E402
from tests.support.databases import MigratedTemplates, emptied  # noqa: E402

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
def postgres_session_db(postgres_url: str, migrated_templates: MigratedTemplates) -> Iterator[str]:
    """One migrated PostgreSQL database for the session; tests empty it before use."""
    url = migrated_templates.postgres_template(postgres_url)
    yield url
    drop_database(url)


@pytest.fixture(
    params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)],
)
def db_url(
    request: pytest.FixtureRequest, migrated_templates: MigratedTemplates, tmp_path: Path
) -> str:
    """An empty, migrated database of the parametrized dialect."""
    if request.param == "sqlite":
        return migrated_templates.sqlite_url(tmp_path)
    return emptied(request.getfixturevalue("postgres_session_db"))


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
def pg_db_url(postgres_session_db: str) -> str:
    """An empty, migrated PostgreSQL database (for PostgreSQL-only behaviour)."""
    return emptied(postgres_session_db)


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def empty_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A database with no tables yet (for migration tests), on each dialect."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/empty.db"
    return str(request.getfixturevalue("postgres_database"))
