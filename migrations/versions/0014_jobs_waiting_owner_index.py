"""A partial index of the waiting jobs by user and team: the submission limits' count.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-05

Before every group-commit batch the API counts the waiting (``submitted`` or ``queued``) jobs
of the batch's users and teams (``read_backlog``), so the limits can refuse what would pass
them. Without an index of just those jobs PostgreSQL found them through an index of the user's
or the team's every job, or a scan of the whole table, and read each row to check its state:
~3.7 ms a batch with 6,000 waiting among 20,000 jobs, most of the committer's time under a
burst of submissions. This index holds the waiting jobs only: the count reads its own entries
and their rows (~2 ms in the same table).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | Sequence[str] | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

WAITING = "state IN ('submitted', 'queued')"


def upgrade() -> None:
    op.create_index(
        "ix_jobs_waiting_owner",
        "jobs",
        ["user_name", "team_name"],
        postgresql_where=sa.text(WAITING),
        sqlite_where=sa.text(WAITING),
    )


def downgrade() -> None:
    op.drop_index("ix_jobs_waiting_owner", table_name="jobs")
