"""The ledger's cost counters on a real PostgreSQL, where an entry's id is taken before its
transaction commits: an entry committed after a higher id was already counted is still
counted (on the next scrape), exactly once; an id rolled back stops being asked for."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest
import sqlalchemy as sa

from starburst.adapters.db.models import CostEntryRow, table
from starburst.adapters.db.store import SqlStore
from starburst.controller.metrics import LedgerCounters
from starburst.core.records import CostEntry, JobSpec

pytestmark = pytest.mark.postgres
T0 = 1_767_225_600.0


@pytest.fixture
def pg_store(pg_db_url: str) -> Iterator[SqlStore]:
    store = SqlStore.open(pg_db_url)
    yield store
    store.close()


def _money(counters: LedgerCounters) -> dict[tuple[str, ...], float]:
    money = next(iter(counters.collect()))
    return {tuple(s.labels.values()): s.value for s in money.samples}


def _entry_row(job_id: str, start: float, micros: int) -> dict[str, Any]:
    return {
        "job_id": job_id,
        "source": "cloud",
        "team_name": "ml",
        "cloud": "aws",
        "period_start": datetime.fromtimestamp(start, UTC),
        "period_end": datetime.fromtimestamp(start + 60, UTC),
        "gpu_hours": 0.0,
        "amount_micros": micros,
        "currency": "USD",
    }


class Spy:
    """The store, recording the ``missing`` ranges each scrape asks for again."""

    def __init__(self, store: SqlStore) -> None:
        self.store, self.asked = store, []  # type: list[tuple[tuple[int, int], ...]]

    def ledger_totals_after(self, after_id: int, missing: Any = ()) -> Any:
        self.asked.append(tuple(missing))
        return self.store.ledger.ledger_totals_after(after_id, missing)


def test_an_entry_committed_after_a_higher_id_is_counted_once(pg_store: SqlStore) -> None:
    job = pg_store.submissions.submit(JobSpec(gpus=1, team="ml")).job.id
    clock = [0.0]
    spy = Spy(pg_store)
    counters = LedgerCounters(spy, missing_ttl_s=600.0, monotonic=lambda: clock[0])
    late = pg_store.engine.connect()  # the API writing while the controller writes too
    slow = late.begin()
    late.execute(sa.insert(table(CostEntryRow)), _entry_row(job, T0, 2_000_000))  # id 1
    pg_store.ledger.record_costs([CostEntry(job, T0 + 60, T0 + 120, Decimal("1"), "aws")])  # id 2
    assert _money(counters) == {("ml", "aws", "USD"): 1.0}  # id 2 only: id 1 not committed
    slow.commit()
    late.close()
    assert _money(counters) == {("ml", "aws", "USD"): 3.0}  # asked for id 1 again: there now
    assert _money(counters) == {("ml", "aws", "USD"): 3.0}  # and never twice
    assert spy.asked[1] and not spy.asked[2]

    gone = pg_store.engine.connect()  # an id taken by a transaction rolled back
    undone = gone.begin()
    gone.execute(sa.insert(table(CostEntryRow)), _entry_row(job, T0 + 120, 5))
    undone.rollback()
    gone.close()
    pg_store.ledger.record_costs([CostEntry(job, T0 + 180, T0 + 240, Decimal("0.5"), "aws")])
    assert _money(counters) == {("ml", "aws", "USD"): 3.5}
    assert spy.asked[-1] == ()
    assert _money(counters) == {("ml", "aws", "USD"): 3.5}
    assert spy.asked[-1] != ()  # the rolled-back id is asked for again, for a while
    clock[0] += 601.0
    _money(counters)
    _money(counters)
    assert spy.asked[-1] == ()  # then given up
