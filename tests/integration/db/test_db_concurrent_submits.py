"""Two writers whose batches share idempotency keys never deadlock.

Two API replicas each run a group commit; a client that retries a submission on another
connection can land its repeat in the other replica's batch while the first is in flight,
and the two batches may hold the shared keys in opposite orders. Each statement takes an
index entry per key as it inserts it: in opposite orders, each ended up waiting for a key
the other held, until PostgreSQL's deadlock detector (``deadlock_timeout``, a second) failed
one of them (seen as one-second p99s in ``bench/api_bench.py --split`` with retries). The
batch's jobs are now inserted in key order (``submissions._insert_at_once``).
"""

from __future__ import annotations

import time

import pytest

from starburst.adapters.db import migrate
from starburst.adapters.db.store import SqlStore
from starburst.core.records import JobSpec, Submission
from tests.support.racing import race, slow_rows

#: each job row's insert first sleeps this long (a trigger), so the two statements interleave
ROW_S = 0.3


@pytest.mark.postgres
def test_batches_sharing_keys_in_opposite_orders_both_complete(postgres_database: str) -> None:
    migrate.upgrade(postgres_database)
    first, second = SqlStore.open(postgres_database), SqlStore.open(postgres_database)
    try:
        with first.engine.begin() as conn:
            slow_rows(conn, "INSERT", ROW_S)
        spec = JobSpec(gpus=1, user="ann", team="ml", image="x:1", command="true")
        keys = ["ann/a", "ann/b"]
        answers: dict[str, list[Submission]] = {}

        def submit(name: str, store: SqlStore, order: list[str], after: float) -> None:
            time.sleep(after)
            answers[name] = store.submissions.submit_many([(spec, k, None) for k in order])

        # the second starts half a row later: in batch order, the first holds "a" and wants
        # "b" while the second holds "b" and wants "a"
        errors = [
            exc
            for exc in race(
                lambda: submit("first", first, keys, 0.0),
                lambda: submit("second", second, keys[::-1], ROW_S / 2),
            )
            if exc is not None
        ]

        assert not errors, f"a batch failed: {errors[0]!r}"
        by_key = {sub.job.idempotency_key: sub for batch in answers.values() for sub in batch}
        assert set(by_key) == set(keys)
        created = [sub for batch in answers.values() for sub in batch if sub.created]
        assert sorted(str(sub.job.idempotency_key) for sub in created) == keys  # each once
        ids = {
            name: {sub.job.idempotency_key: sub.job.id for sub in b} for name, b in answers.items()
        }
        assert ids["first"] == ids["second"]  # both answers name the same two jobs
        with first.engine.connect() as conn:
            stored = conn.exec_driver_sql("SELECT count(*) FROM jobs").scalar()
        assert stored == 2
    finally:
        first.close()
        second.close()
