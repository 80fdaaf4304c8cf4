"""Jobs record how many pods they run as, so a multi-node split keeps each pod whole.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30

A Kubernetes Job of 4 pods × 3 GPUs cannot run as 8 GPUs on one node and 4 on another: the
placement must give each node whole pods. NULL (every existing job) means "not made of pods:
any split" (``Job.pods``). The CHECK is part of the column definition, which both PostgreSQL
and SQLite accept in ``ALTER TABLE ... ADD COLUMN`` (no table copy on SQLite).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | Sequence[str] | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    pods = sa.Column(
        "pods", sa.Integer(), sa.CheckConstraint("pods >= 1", name=op.f("ck_jobs_pods")),
        nullable=True,
    )
    op.add_column("jobs", pods)


def downgrade() -> None:
    op.drop_column("jobs", "pods")
