"""The real API on real PostgreSQL under schemathesis: no 5xx, nothing the document hides.

A bounded run for the suite (``bench/api_fuzz.py`` runs a fuller one and prints its counts):
every operation, positive and negative cases, every check (``tests/support/apifuzz.py``).
Under load the time limit cuts operations short, but every operation of the document must
have been fuzzed: a run that never reached one is a failure, not a pass.
"""

from __future__ import annotations

from typing import Any

import pytest

from starburst.adapters.db.store import SqlStore
from starburst.api import create_app
from starburst.core.records import Role
from starburst.settings import Settings
from tests.support.apifuzz import fuzz
from tests.support.databases import upgrade

pytest.importorskip("schemathesis")


def fuzzed(url: str, *, max_examples: int, time_limit: float) -> tuple[Any, Any]:
    """The real app on the migrated database ``url``, fuzzed with an admin token (seed 10)."""
    upgrade(url)
    store = SqlStore.open(url)
    try:
        store.accounts.save_user("fuzz-admin", team="ml")
        app = create_app(Settings(database_url=url), store, auth=True)
        result = fuzz(
            app,
            lambda: store.accounts.issue_token("fuzz-admin", Role.ADMIN).secret,
            max_examples=max_examples,
            seed=10,
            time_limit=time_limit,
        )
    finally:
        store.close()
    return app, result


@pytest.mark.slow
def test_schema_fuzzing_finds_no_5xx_and_no_schema_violation(postgres_database: str) -> None:
    app, result = fuzzed(postgres_database, max_examples=15, time_limit=40)
    print(result.summary())
    documented = {
        f"{m.upper()} {path}" for path, ops in app.openapi()["paths"].items() for m in ops
    }
    assert set(result.operations) == documented, result.summary()
    # every operation fuzzed, less deeply on a loaded machine (how many cases is time's say)
    assert result.unreached == [], result.summary()
    assert result.server_errors == 0, result.summary()
    assert result.schema_violations == 0, result.summary()
    assert result.other_failures == 0, result.summary()


@pytest.mark.slow
def test_a_spent_time_limit_still_fuzzes_every_operation_once(postgres_database: str) -> None:
    """With no time at all, each operation and mode still gets its first case (and is
    reported cut short): the time is shared out, never spent on the first operations only."""
    _, result = fuzzed(postgres_database, max_examples=5, time_limit=0.0)
    assert result.operations and result.unreached == [], result.summary()
    assert result.skipped_operations, result.summary()
    assert result.cases <= 2 * len(result.operations), result.summary()
    assert result.server_errors == result.schema_violations == 0, result.summary()
