"""An index for one user's jobs in queue order: ``GET /v1/jobs`` for a user with many jobs.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01

A user's listing (``SqlJobs.queue`` with ``user``: every user who is not admin or finance
lists only their own jobs) is ordered by ``queued_at, id``. With only ``ix_jobs_user_name``
the database read every one of the user's jobs and sorted them for each page (110 ms for a
page of 50 out of 20,000 jobs); ``ix_jobs_user_queue`` hands them over in order, so a page
reads about its own rows.
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0009"
down_revision: str | Sequence[str] | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index("ix_jobs_user_queue", "jobs", ["user_name", "queued_at", "id"])


def downgrade() -> None:
    op.drop_index("ix_jobs_user_queue", table_name="jobs")
