"""The waiting jobs of each user and team, counted as jobs change: the submission limits' read.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-05

Before every group-commit batch the API reads how many jobs (``submitted`` or ``queued``) the
batch's users and teams have waiting (``read_backlog``). Counting them, even over the partial
index of migration 0014, reads every waiting job of the user: the work grows with the backlog,
and under a sweep of submissions it was half of each batch's time. ``waiting_counts`` holds the
counts themselves, one row per user (``kind`` 'user') and per team ('team'), kept by triggers
on ``jobs`` in the transaction of each insert, update or delete, so they are exact whatever
writes the jobs (the store, an admin's SQL): PostgreSQL adds each statement's changes at once
(statement triggers over its transition tables), SQLite one row at a time. A row whose count
fell to 0 stays; the read skips it. The partial index of migration 0014, which only that
count read, is dropped: every insert and state change of a job paid for it.

Downgrade drops the triggers and the table and builds the index again (the count reads the
jobs again).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015"
down_revision: str | Sequence[str] | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

WAITING = "('submitted', 'queued')"
OWNER_INDEX = "ix_jobs_waiting_owner"  # migration 0014's
#: each of a statement's changed rows as +1 (``new_rows``) or -1 (``old_rows``) for its user
#: and its team while waiting, summed per user and team; in key order, so concurrent
#: statements lock the counts' rows in one order
_PG_CHANGES = {
    "insert": ("new_rows",),
    "update": ("new_rows", "old_rows"),
    "delete": ("old_rows",),
}


def _pg_function(event: str) -> str:
    parts = []
    for rows in _PG_CHANGES[event]:
        sign = "1" if rows == "new_rows" else "-1"
        for kind, column in (("user", "user_name"), ("team", "team_name")):
            parts.append(
                f"SELECT '{kind}' AS kind, {column} AS name, {sign} AS change FROM {rows} "
                f"WHERE {column} IS NOT NULL AND state IN {WAITING}"
            )
    return (
        f"CREATE FUNCTION waiting_counts_{event}() RETURNS trigger LANGUAGE plpgsql AS $$ "
        "BEGIN "
        "INSERT INTO waiting_counts (kind, name, jobs) "
        f"SELECT kind, name, sum(change) FROM ({' UNION ALL '.join(parts)}) AS changes "
        "GROUP BY kind, name HAVING sum(change) <> 0 ORDER BY kind, name "
        "ON CONFLICT (kind, name) DO UPDATE SET jobs = waiting_counts.jobs + EXCLUDED.jobs; "
        "RETURN NULL; "
        "END $$"
    )


def _pg_trigger(event: str) -> str:
    tables = " ".join(
        f"{'NEW' if rows == 'new_rows' else 'OLD'} TABLE AS {rows}" for rows in _PG_CHANGES[event]
    )
    return (
        f"CREATE TRIGGER waiting_counts_{event} AFTER {event.upper()} ON jobs "
        f"REFERENCING {tables} FOR EACH STATEMENT EXECUTE FUNCTION waiting_counts_{event}()"
    )


def _sqlite_change(row: str, kind: str, column: str, sign: str) -> str:
    return (
        f"INSERT INTO waiting_counts (kind, name, jobs) SELECT '{kind}', {row}.{column}, {sign} "
        f"WHERE {row}.{column} IS NOT NULL AND {row}.state IN {WAITING} "
        f"ON CONFLICT (kind, name) DO UPDATE SET jobs = jobs + excluded.jobs;"
    )


def _sqlite_trigger(event: str) -> str:
    rows = {"insert": [("NEW", "1")], "update": [("OLD", "-1"), ("NEW", "1")]}.get(
        event, [("OLD", "-1")]
    )
    body = " ".join(
        _sqlite_change(row, kind, column, sign)
        for row, sign in rows
        for kind, column in (("user", "user_name"), ("team", "team_name"))
    )
    on = "UPDATE OF state, user_name, team_name" if event == "update" else event.upper()
    return f"CREATE TRIGGER waiting_counts_{event} AFTER {on} ON jobs BEGIN {body} END"


def upgrade() -> None:
    op.create_table(
        "waiting_counts",
        sa.Column("kind", sa.String(8), primary_key=True),
        sa.Column("name", sa.String(128), primary_key=True),
        sa.Column("jobs", sa.BigInteger(), nullable=False),
    )
    postgres = op.get_bind().dialect.name == "postgresql"
    for event in ("insert", "update", "delete"):  # first: they lock the jobs until the end
        if postgres:
            op.execute(_pg_function(event))
            op.execute(_pg_trigger(event))
        else:
            op.execute(_sqlite_trigger(event))
    op.execute(
        "INSERT INTO waiting_counts (kind, name, jobs) "
        f"SELECT 'user', user_name, count(*) FROM jobs WHERE user_name IS NOT NULL "
        f"AND state IN {WAITING} GROUP BY user_name "
        f"UNION ALL SELECT 'team', team_name, count(*) FROM jobs WHERE team_name IS NOT NULL "
        f"AND state IN {WAITING} GROUP BY team_name"
    )
    op.drop_index(OWNER_INDEX, table_name="jobs")


def downgrade() -> None:
    postgres = op.get_bind().dialect.name == "postgresql"
    for event in ("insert", "update", "delete"):
        op.execute(f"DROP TRIGGER waiting_counts_{event}{' ON jobs' if postgres else ''}")
        if postgres:
            op.execute(f"DROP FUNCTION waiting_counts_{event}()")
    op.drop_table("waiting_counts")
    waiting = sa.text(f"state IN {WAITING}")
    op.create_index(
        OWNER_INDEX,
        "jobs",
        ["user_name", "team_name"],
        postgresql_where=waiting,
        sqlite_where=waiting,
    )
