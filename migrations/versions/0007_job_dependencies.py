"""Job dependencies and array throttles: what a job waits for, and why it is held.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01

``depends_on`` lists the jobs a job waits for (``ID`` waits for the end, ``ID:ok`` for
success); ``array_id`` and ``array_limit`` name its array and how many of the array's
elements may be queued or running at once; ``held_reason`` says why a ``submitted`` job is
held out of the queue (``starburst.core.dependencies``). All are NULL for existing jobs,
which depend on nothing. Held jobs stay in the ``submitted`` state: a new state would need
the state CHECK rebuilt, a table copy on SQLite.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | Sequence[str] | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("jobs", sa.Column("depends_on", sa.JSON(), nullable=True))
    op.add_column("jobs", sa.Column("array_id", sa.String(256), nullable=True))
    op.add_column("jobs", sa.Column("array_limit", sa.Integer(), nullable=True))
    op.add_column("jobs", sa.Column("held_reason", sa.Text(), nullable=True))
    op.create_index(op.f("ix_jobs_array_id"), "jobs", ["array_id"])


def downgrade() -> None:
    op.drop_index(op.f("ix_jobs_array_id"), table_name="jobs")
    # plain DROP COLUMN (SQLite ≥ 3.35 has it): a batch copy of ``jobs`` would have to drop
    # the table every other table references
    for column in ("held_reason", "array_limit", "array_id", "depends_on"):
        op.drop_column("jobs", column)
