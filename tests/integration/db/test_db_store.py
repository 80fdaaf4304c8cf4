"""What only the SQL store shows: how it keeps tokens in the database (the store's
behaviour through its ports is the contract suite, ``tests/contract/test_store_*.py``)."""

from __future__ import annotations

from starburst.core.records import JobSpec, Move, Role


def test_only_a_tokens_hash_is_stored(store, engine):  # type: ignore[no-untyped-def]
    import sqlalchemy as sa

    store.accounts.save_user("fin", team="finance")
    issued = store.accounts.issue_token("fin", Role.FINANCE)
    with engine.connect() as conn:
        stored = conn.execute(sa.text("SELECT token_hash, prefix FROM api_tokens")).one()
    assert issued.secret not in stored.token_hash and len(stored.token_hash) == 64
    assert issued.secret.startswith(stored.prefix) and len(stored.prefix) == 10


def test_a_token_in_steady_use_is_written_at_most_once_a_minute(store, clock, engine):  # type: ignore[no-untyped-def]
    import sqlalchemy as sa

    store.accounts.save_user("ann", team="ml")
    issued = store.accounts.issue_token("ann", Role.USER)

    def last_used() -> object:
        with engine.connect() as conn:
            return conn.execute(sa.text("SELECT last_used_at FROM api_tokens")).scalar_one()

    store.accounts.authenticate(issued.secret)
    first = last_used()
    assert first is not None
    clock.advance(59)
    assert store.accounts.authenticate(issued.secret) is not None and last_used() == first
    clock.advance(2)
    assert store.accounts.authenticate(issued.secret) is not None and last_used() != first


def test_a_batch_of_moves_writes_only_at_the_versions_read(store, engine):  # type: ignore[no-untyped-def]
    """``transition_many`` writes all its jobs in one statement; a job found at another
    version than the one read is refused by name, never written blindly."""
    import pytest
    import sqlalchemy as sa

    from starburst.adapters.db.transitions import _update_at_versions
    from starburst.core.lifecycle import JobState
    from starburst.core.records import JobSpec, StaleVersion

    a, b = (store.submissions.submit(JobSpec(gpus=1, name=n)).job for n in "ab")
    moved = store.lifecycle.transition_many(
        [Move(a.id, "admitted"), Move(b.id, "admitted")], JobState.QUEUED, actor="c"
    )
    assert [j.version for j in moved.moved] == [2, 2]
    with engine.begin() as conn:  # another writer moved b on meanwhile
        conn.execute(sa.text("UPDATE jobs SET version = 5 WHERE id = :b"), {"b": b.id})
    fresh = {"b_id": a.id, "b_version": 2, "version": 3, "wait_budget": 7.0}
    stale = {"b_id": b.id, "b_version": 2, "version": 3, "wait_budget": 7.0}
    with pytest.raises(StaleVersion, match=f"job {b.id} .* found 5"), engine.begin() as conn:
        _update_at_versions(conn, [fresh, stale])
    assert store.jobs.get(a.id).version == 2  # the statement's other write rolled back


def test_a_batch_stores_exactly_what_one_at_a_time_stores(store, engine):  # type: ignore[no-untyped-def]
    """On PostgreSQL a batch of submissions is one ``INSERT ... SELECT FROM unnest(...)``
    (``base.unnest_insert``), a single one the ORM's ``INSERT``: the rows and their events
    must come out the same, NULLs and JSON included, and a known key is still skipped."""
    import sqlalchemy as sa

    from starburst.core.dependencies import Dependency

    base = store.submissions.submit(JobSpec(gpus=1, name="base")).job.id

    def specs(tag: str) -> list[JobSpec]:
        return [
            JobSpec(
                gpus=2,
                name=f"{tag}-a",
                user="ann",
                team="ml",
                image="i:1",
                command="run",
                cpus=1.5,
                declared_runtime=60.0,
                deadline=1.9e9,
                extra={"k": "v"},
                after=(Dependency(base),),
                array=f"{tag}-arr",
                array_limit=2,
            ),
            JobSpec(gpus=0, name=f"{tag}-b"),
        ]

    singles = [
        store.submissions.submit(s, idempotency_key=f"one-{i}").job.id
        for i, s in enumerate(specs("one"))
    ]
    batch = [
        s.job.id
        for s in store.submissions.submit_many(
            [(s, f"many-{i}", None) for i, s in enumerate(specs("many"))]
            + [(specs("x")[1], "one-0", None)]
        )
    ]
    assert batch[2] == singles[0]  # the known key: the job it made, not a new one
    skip = {"id", "idempotency_key", "name", "array_id"}

    def rows(ids: list[str]) -> list[dict[str, object]]:
        with engine.connect() as conn:
            found = (
                conn.execute(
                    sa.text("SELECT * FROM jobs WHERE id IN :ids").bindparams(
                        sa.bindparam("ids", expanding=True)
                    ),
                    {"ids": ids},
                )
                .mappings()
                .all()
            )
            nulls = (
                conn.execute(
                    sa.text(
                        "SELECT id, depends_on IS NULL AS dn, extra IS NULL AS en FROM jobs "
                        "WHERE id IN :ids"
                    ).bindparams(sa.bindparam("ids", expanding=True)),
                    {"ids": ids},
                )
                .mappings()
                .all()
            )
        by_id = {r["id"]: {k: v for k, v in r.items() if k not in skip} for r in found}
        for n in nulls:
            by_id[n["id"]].update(dn=n["dn"], en=n["en"])
        return [by_id[i] for i in ids]

    assert rows(batch[:2]) == rows(singles)
    with engine.connect() as conn:
        events = conn.execute(
            sa.text(
                "SELECT job_id, from_state, to_state, reason, actor, fencing_token FROM job_events "
                "WHERE job_id IN :ids ORDER BY id"
            ).bindparams(sa.bindparam("ids", expanding=True)),
            {"ids": batch[:2]},
        ).all()
    assert [tuple(e)[1:] for e in events] == [
        (None, "submitted", "submitted", "ann", None),
        (None, "submitted", "submitted", "unknown", None),
    ]
