"""An index of the held jobs, in queue order: every pass reads them.

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-06

Each controller pass reads the jobs held out of the queue, oldest first
(``controller.loop.gating``: a dependency or an array's limit may let them in now), as does
``/v1/queue``. Without an index of them, PostgreSQL found them through ``ix_jobs_queue``'s
every ``submitted`` job, reading each row to check its hold: under a burst of 10,000
submissions not yet admitted, 660 buffers and 3–7 ms a pass to find none
(``pg_stat_statements``), ten times that at 100,000. Only a ``submitted`` job is ever held,
so this index holds few rows, and none of a job that was never held.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0017"
down_revision: str | Sequence[str] | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

HELD = "held_reason IS NOT NULL"


def upgrade() -> None:
    op.create_index(
        "ix_jobs_held_queue",
        "jobs",
        ["queued_at", "id"],
        postgresql_where=sa.text(HELD),
        sqlite_where=sa.text(HELD),
    )


def downgrade() -> None:
    op.drop_index("ix_jobs_held_queue", table_name="jobs")
