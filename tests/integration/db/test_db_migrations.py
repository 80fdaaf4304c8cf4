"""Alembic migrations: a full round trip on PostgreSQL, no drift from the models, the CLI."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from starburst.adapters.db import migrate
from starburst.adapters.db.engine import create_engine
from starburst.adapters.db.models import Base
from starburst.cli.main import main

TABLES = set(Base.metadata.tables)


def cli(*args: str) -> int:
    """Run ``starburst`` in-process; its exit code."""
    with pytest.raises(SystemExit) as exit_:
        main(list(args))
    return int(exit_.value.code or 0)


def _tables(url: str) -> set[str]:
    engine = create_engine(url)
    try:
        return set(sa.inspect(engine).get_table_names()) - {"alembic_version"}
    finally:
        engine.dispose()


def _drift(url: str) -> list[object]:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            context = MigrationContext.configure(conn, opts={"compare_type": True})
            return list(compare_metadata(context, Base.metadata))
    finally:
        engine.dispose()


@pytest.mark.postgres
def test_upgrade_downgrade_upgrade_on_postgres(postgres_database: str) -> None:
    migrate.upgrade(postgres_database)
    assert _tables(postgres_database) == TABLES
    assert migrate.current(postgres_database) == migrate.head()
    migrate.downgrade(postgres_database, "base")
    assert _tables(postgres_database) == set()
    assert migrate.current(postgres_database) is None
    migrate.upgrade(postgres_database)
    assert _tables(postgres_database) == TABLES
    assert _drift(postgres_database) == []


def test_migrated_schema_matches_the_models(db_url: str) -> None:
    """Autogenerate finds nothing to add, drop or alter (on both dialects)."""
    assert _drift(db_url) == []


def test_cli_upgrade_current_downgrade(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    url = f"sqlite:///{tmp_path}/cli.db"
    assert cli("db", "upgrade", "--url", url) == 0
    assert f"at revision {migrate.head()}" in capsys.readouterr().out
    assert _tables(url) == TABLES
    assert cli("db", "current", "--url", url) == 0
    head = migrate.head()
    assert f"revision {head} (newest: {head})" in capsys.readouterr().out
    assert cli("db", "downgrade", "--url", url, "--to", "base", "--yes") == 0
    assert _tables(url) == set()


def test_job_events_are_append_only(store, engine) -> None:  # type: ignore[no-untyped-def]
    from starburst.core.records import JobSpec

    job_id = store.submissions.submit(JobSpec(gpus=1)).job.id
    for statement in ("UPDATE job_events SET reason = 'rewritten'", "DELETE FROM job_events"):
        with pytest.raises(sa.exc.DatabaseError, match="append-only"), engine.begin() as conn:
            conn.execute(sa.text(statement))
    assert [e.reason for e in store.jobs.events(job_id)] == ["submitted"]


def test_cli_uses_the_environment_url(tmp_path, capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    url = f"sqlite:///{tmp_path}/env.db"
    monkeypatch.setenv("STARBURST_DATABASE_URL", url)
    assert cli("db", "upgrade") == 0
    assert _tables(url) == TABLES


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://admin:hunter2@127.0.0.1:1/starburst",
        "nosuchdb://admin:hunter2@host/db",
        "admin:hunter2@host/db",
    ],
)
def test_cli_bad_or_unreachable_database_is_one_line_without_password(url, capsys) -> None:  # type: ignore[no-untyped-def]
    code = cli("db", "upgrade", "--url", url)
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("error: ") and err.count("\n") == 1
    assert "hunter2" not in err and "admin:***@" in err
    assert "Traceback" not in err


def test_cli_db_group_and_import_starburst_stay_free_of_sqlalchemy() -> None:
    code = (
        "import sys, starburst, starburst.cli.main, starburst.cli.db;"
        "starburst.cli.main.build_app(['db']);"
        "assert 'sqlalchemy' not in sys.modules, 'sqlalchemy imported';"
        "assert 'alembic' not in sys.modules, 'alembic imported'"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONWARNINGS": "error"},
        check=False,
    )
    assert done.returncode == 0, done.stderr


ROLLUP_KEY = "day, job_id, source, user_name, team_name, project, cloud, region, gpu_type, currency"


def _rollups(engine) -> list[tuple[object, ...]]:  # type: ignore[no-untyped-def]
    with engine.connect() as conn:
        return [
            tuple(r)
            for r in conn.execute(
                sa.text(
                    f"SELECT {ROLLUP_KEY}, sum(amount_micros), sum(gpu_hours), sum(entries) "
                    f"FROM cost_rollups GROUP BY {ROLLUP_KEY} ORDER BY {ROLLUP_KEY}"
                )
            )
        ]


def test_0006_backfills_the_rollups_the_store_keeps_and_downgrades_cleanly(empty_url) -> None:  # type: ignore[no-untyped-def]
    """Rollups written entry by entry equal those the migration computes from the entries;
    downgrading drops only the rollups."""
    from decimal import Decimal

    from starburst.adapters.db.store import SqlStore
    from starburst.core.lifecycle import JobState
    from starburst.core.records import CostEntry, JobSpec

    t0, day = 1_767_225_600.0, 86_400.0
    migrate.upgrade(empty_url)
    store = SqlStore.open(empty_url)
    try:
        jobs = [
            store.submissions.submit(
                JobSpec(gpus=2, user=u, team="ml", extra={"project": "p"})
            ).job.id
            for u in ("ann", "bob")
        ]
        store.ledger.record_costs(
            [
                CostEntry(
                    job,
                    t0 + h * 3600 + 1800,  # some at 23:30: the day of their start
                    t0 + (h + 1) * 3600 + 1800,
                    Decimal("1.5"),
                    "aws",
                    gpu_hours=h / 8,
                    region=None if h % 3 else "us-east-1",
                )
                for job in jobs
                for h in range(0, 100, 5)
            ]
        )
        store.lifecycle.transition(jobs[0], JobState.QUEUED, reason="admitted", actor="t", at=t0)
        store.lifecycle.transition(
            jobs[0], JobState.RUNNING_ONPREM, reason="fits", actor="t", at=t0 + day
        )
        store.lifecycle.transition(
            jobs[0], JobState.SUCCEEDED, reason="done", actor="t", at=t0 + 2 * day
        )
        kept = _rollups(store.engine)
        report = store.ledger.cost_report(t0, t0 + 10 * day, ("user", "day", "location", "source"))
        assert len(kept) > 10 and sum(int(r[-1]) for r in kept) == 41
        migrate.downgrade(store.engine, "0005")
        assert "cost_rollups" not in sa.inspect(store.engine).get_table_names()
        with store.engine.connect() as conn:
            assert conn.execute(sa.text("SELECT count(*) FROM cost_entries")).scalar_one() == 41
        migrate.upgrade(store.engine, "0006")
        assert _rollups(store.engine) == kept
        migrate.upgrade(store.engine)
        assert (
            store.ledger.cost_report(t0, t0 + 10 * day, ("user", "day", "location", "source"))
            == report
        )
    finally:
        store.close()


def test_0008_folds_gpu_type_parts_on_downgrade_and_upgrades_again(empty_url) -> None:  # type: ignore[no-untyped-def]
    """A run on nodes of two GPU types has an entry per type; downgrading to 0007 (whose key
    has no part) adds the second into the first, so no GPU-hour is lost either way."""
    from starburst.adapters.db.store import SqlStore
    from starburst.core.capacity import Part
    from starburst.core.lifecycle import JobState
    from starburst.core.records import JobSpec

    t0 = 1_767_225_600.0
    migrate.upgrade(empty_url)
    store = SqlStore.open(empty_url)
    try:
        job = store.submissions.submit(JobSpec(gpus=12, user="ann", team="ml")).job.id
        store.lifecycle.transition(job, JobState.QUEUED, reason="admitted", actor="t", at=t0)
        placement = (Part(0, "a", 8, 0.0, 0.0), Part(1, "b", 4, 0.0, 0.0))
        store.lifecycle.record_placement(job, placement, at=t0, gpu_types=["A100", "V100"])
        store.lifecycle.transition(job, JobState.RUNNING_ONPREM, reason="fits", actor="t", at=t0)
        store.lifecycle.transition(job, JobState.SUCCEEDED, reason="done", actor="t", at=t0 + 3600)
        by_type = store.ledger.cost_report(t0, t0 + 3600, ("gpu_type",))
        assert [(t.key["gpu_type"], t.onprem_gpu_hours) for t in by_type] == [
            ("A100", 8.0),
            ("V100", 4.0),
        ]
        migrate.downgrade(store.engine, "0007")
        with store.engine.connect() as conn:
            rows = conn.execute(sa.text("SELECT gpu_type, gpu_hours FROM cost_entries")).all()
            rollups = conn.execute(sa.text("SELECT gpu_type, gpu_hours FROM cost_rollups")).all()
        assert [tuple(r) for r in rows] == [tuple(r) for r in rollups] == [("A100", 12.0)]
        migrate.upgrade(store.engine)
        assert _drift(str(store.engine.url.render_as_string(hide_password=False))) == []
        [day] = store.ledger.cost_report(t0 - 86_400, t0 + 86_400, ())  # from the rollups
        assert day.onprem_gpu_hours == 12.0
    finally:
        store.close()
