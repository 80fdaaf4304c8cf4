"""Finance: ledger entries carry the job's project and the GPU type billed (reports group by
them), and budget alerts are remembered so each fires once per team, month and threshold.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01

Both columns are copied when an entry is metered (a cost is a fact of its time), as user,
team and cloud already are. Existing entries keep NULL: "unknown", reported as such. On-prem
usage entries (``source = 'onprem'``) use the same table with no money and the GPU-hours.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | Sequence[str] | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("cost_entries", sa.Column("project", sa.String(128), nullable=True))
    op.add_column("cost_entries", sa.Column("gpu_type", sa.String(64), nullable=True))
    op.create_table(
        "budget_alerts",
        sa.Column("team_name", sa.String(128), nullable=False),
        sa.Column("month", sa.String(7), nullable=False),
        sa.Column("threshold_permille", sa.Integer(), nullable=False),
        sa.Column("spent_micros", sa.BigInteger(), nullable=False),
        sa.Column("fired_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("team_name", "month", "threshold_permille",
                                name=op.f("pk_budget_alerts")),
    )


def downgrade() -> None:
    op.drop_table("budget_alerts")
    with op.batch_alter_table("cost_entries") as batch:
        batch.drop_column("gpu_type")
        batch.drop_column("project")
