"""Make job_events append-only on PostgreSQL: UPDATE and DELETE raise.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30

The store never changes an event; this makes the database refuse it too, so the history
finance and `starburst explain` read cannot be rewritten by a bug or a stray SQL session.
SQLite gets the same guarantee from triggers that RAISE(ABORT).
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0002"
down_revision: str | Sequence[str] | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

PG_UP = """
CREATE FUNCTION starburst_job_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'job_events is append-only (% refused)', TG_OP;
END $$;
CREATE TRIGGER job_events_append_only BEFORE UPDATE OR DELETE ON job_events
    FOR EACH ROW EXECUTE FUNCTION starburst_job_events_append_only();
"""
PG_DOWN = """
DROP TRIGGER IF EXISTS job_events_append_only ON job_events;
DROP FUNCTION IF EXISTS starburst_job_events_append_only();
"""
SQLITE_UP = [
    f"""CREATE TRIGGER job_events_no_{op_name.lower()} BEFORE {op_name} ON job_events
        BEGIN SELECT RAISE(ABORT, 'job_events is append-only ({op_name} refused)'); END"""
    for op_name in ("UPDATE", "DELETE")
]
SQLITE_DOWN = ["DROP TRIGGER IF EXISTS job_events_no_update",
               "DROP TRIGGER IF EXISTS job_events_no_delete"]


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(PG_UP)
    else:
        for statement in SQLITE_UP:
            op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(PG_DOWN)
    else:
        for statement in SQLITE_DOWN:
            op.execute(statement)
