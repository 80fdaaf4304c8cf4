"""A partial index of each user's jobs not yet ended, in queue order: a researcher's listing.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-02

A user's active listing (``GET /v1/jobs?state=active`` for a researcher, ``starburst ls``)
filters on the user and the active states. ``ix_jobs_active_queue`` (0010) holds every user's
active jobs, and ``ix_jobs_user_queue`` (0009) every job of the user, finished ones included.
Once psycopg prepares the statement (its sixth run), PostgreSQL may plan it generically, not
knowing which user: it then walked ``ix_jobs_user_queue`` through the user's whole history to
find the active ones (~15-30 ms a page for a user with 20,000 ended and 2,000 waiting jobs).
This index holds only active jobs, by user, in ``queued_at, id`` order: a page reads its own
rows, whatever the plan. The states are those of revision 0010.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | Sequence[str] | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ACTIVE = "state IN ('submitted', 'queued', 'running_onprem', 'bursting', 'running_cloud')"


def upgrade() -> None:
    op.create_index(
        "ix_jobs_active_user_queue",
        "jobs",
        ["user_name", "queued_at", "id"],
        postgresql_where=sa.text(ACTIVE),
        sqlite_where=sa.text(ACTIVE),
    )


def downgrade() -> None:
    op.drop_index("ix_jobs_active_user_queue", table_name="jobs")
