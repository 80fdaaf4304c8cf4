"""Daily rollups of the ledger, so cost reports over whole days skip the entries.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01

``cost_rollups`` holds, per UTC day of ``period_start``, job, source, user, team, project,
cloud, region, GPU type and currency, the sum of the entries' money and GPU-hours and their
number. The store adds each entry it writes to its rollup in the same transaction; this
migration backfills the rollups of the entries already there in one ``INSERT ... SELECT``
(the grouping ``starburst.adapters.db.rollups.rebuild`` also uses, copied here so this
revision stays what it was when the code moves on). Downgrade drops the table: the entries
are untouched, so nothing is lost.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | Sequence[str] | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

DIMENSIONS = "job_id, source, user_name, team_name, project, cloud, region, gpu_type, currency"
BACKFILL = f"""
INSERT INTO cost_rollups (day, {DIMENSIONS}, amount_micros, gpu_hours, entries)
SELECT {{day}}, {DIMENSIONS}, sum(amount_micros), sum(gpu_hours), count(*)
FROM cost_entries
GROUP BY {{day}}, {DIMENSIONS}
"""
DAY = {
    "postgresql": "CAST(timezone('UTC', period_start) AS DATE)",
    "sqlite": "date(period_start)",
}


def upgrade() -> None:
    op.create_table(
        "cost_rollups",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
                  autoincrement=True, nullable=False),
        sa.Column("day", sa.Date(), nullable=False),
        sa.Column("job_id", sa.String(64), nullable=False),
        sa.Column("source", sa.String(32), nullable=False),
        sa.Column("user_name", sa.String(128), nullable=True),
        sa.Column("team_name", sa.String(128), nullable=True),
        sa.Column("cloud", sa.String(64), nullable=False),
        sa.Column("region", sa.String(64), nullable=True),
        sa.Column("project", sa.String(128), nullable=True),
        sa.Column("gpu_type", sa.String(64), nullable=True),
        sa.Column("currency", sa.String(3), nullable=False),
        sa.Column("amount_micros", sa.BigInteger(), nullable=False),
        sa.Column("gpu_hours", sa.Float(), nullable=False),
        sa.Column("entries", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["job_id"], ["jobs.id"],
                                name=op.f("fk_cost_rollups_job_id_jobs")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_cost_rollups")),
    )
    op.create_index("ix_cost_rollups_key", "cost_rollups", ["day", "job_id", "source"])
    day = DAY[op.get_bind().dialect.name]
    op.execute(BACKFILL.format(day=day))


def downgrade() -> None:
    op.drop_index("ix_cost_rollups_key", table_name="cost_rollups")
    op.drop_table("cost_rollups")
