"""Fixtures of the store contract: ``store`` is parametrized over every implementation of
the store ports — ``memory`` (``MemoryStore``), ``sqlite`` and ``postgresql`` (``SqlStore``,
each on an empty database migrated with the real migrations) — all on a hand-moved ``clock``.
``elect()`` makes a new leader: it hands out the store's next fencing token, after which
writes fenced with an older one are refused.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import postgres as _postgres
from tests.support.clock import ManualClock
from tests.support.databases import MigratedTemplates, emptied

# Fixtures shared through tests/support/postgres.py (re-exported so pytest finds them here).
postgres_url = _postgres.postgres_url


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
    _postgres.drop_database(url)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture(
    params=["memory", "sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)],
)
def backend(
    request: pytest.FixtureRequest,
    clock: ManualClock,
    migrated_templates: MigratedTemplates,
    tmp_path: Path,
) -> Iterator[tuple[Any, Callable[[], int]]]:
    """A fresh store of the parametrized kind and its ``elect``."""
    if request.param == "memory":
        from starburst.adapters.memory.store import MemoryStore

        memory = MemoryStore(clock=clock)
        yield memory, memory.next_term
        return
    from starburst.adapters.db.engine import create_engine
    from starburst.adapters.db.leader import next_term
    from starburst.adapters.db.store import SqlStore

    if request.param == "sqlite":
        url = migrated_templates.sqlite_url(tmp_path)
    else:
        url = emptied(request.getfixturevalue("postgres_session_db"))
    engine = create_engine(url)
    sql = SqlStore(engine, clock=clock)
    yield sql, lambda: next_term(engine, sql.leader_name, "test")
    sql.close()


@pytest.fixture
def store(backend: tuple[Any, Callable[[], int]]) -> Any:
    return backend[0]


@pytest.fixture
def elect(backend: tuple[Any, Callable[[], int]]) -> Callable[[], int]:
    return backend[1]
