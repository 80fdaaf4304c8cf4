"""On-prem showback by the GPU type of the nodes a job ran on.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01

``placements.gpu_type``: the GPU type of the node each part of a placement is on, recorded
when the job is placed (NULL for placements made before: they fall back to the job's
requested type). ``cost_entries.part``: which GPU-type group of a run an entry meters (0
for a cloud launch and for a run on nodes of one type; an untyped job spread over nodes of
two types has one entry per type for each interval), so an interval is entered once per
``(job, source, period_start, part)``.

Downgrade folds the entries of other parts into part 0 of their interval (their GPU-hours
and money added; the GPU type of part 0 kept), since the older key has no room for them,
and recomputes the rollups of the jobs it folded (the grouping of migration 0006).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | Sequence[str] | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_OLD = ["job_id", "source", "period_start"]
_FOLDED = "SELECT DISTINCT job_id FROM cost_entries WHERE part > 0"
_DIMENSIONS = "job_id, source, user_name, team_name, project, cloud, region, gpu_type, currency"
_DAY = {
    "postgresql": "CAST(timezone('UTC', period_start) AS DATE)",
    "sqlite": "date(period_start)",
}


def upgrade() -> None:
    op.add_column("placements", sa.Column("gpu_type", sa.String(64), nullable=True))
    with op.batch_alter_table("cost_entries") as batch:
        batch.add_column(sa.Column("part", sa.Integer(), nullable=False, server_default="0"))
        batch.drop_constraint("uq_cost_entries_interval", type_="unique")
        batch.create_unique_constraint("uq_cost_entries_interval", [*_OLD, "part"])


def downgrade() -> None:
    day = _DAY[op.get_bind().dialect.name]
    op.execute(f"DELETE FROM cost_rollups WHERE job_id IN ({_FOLDED})")
    op.execute("CREATE TABLE folded_jobs AS " + _FOLDED)
    op.execute(
        "UPDATE cost_entries SET "
        "gpu_hours = gpu_hours + (SELECT COALESCE(SUM(o.gpu_hours), 0) FROM cost_entries o "
        "WHERE o.job_id = cost_entries.job_id AND o.source = cost_entries.source "
        "AND o.period_start = cost_entries.period_start AND o.part > 0), "
        "amount_micros = amount_micros + (SELECT COALESCE(SUM(o.amount_micros), 0) "
        "FROM cost_entries o WHERE o.job_id = cost_entries.job_id "
        "AND o.source = cost_entries.source AND o.period_start = cost_entries.period_start "
        "AND o.part > 0) WHERE part = 0"
    )
    op.execute("DELETE FROM cost_entries WHERE part > 0")
    op.execute(
        f"INSERT INTO cost_rollups (day, {_DIMENSIONS}, amount_micros, gpu_hours, entries) "
        f"SELECT {day}, {_DIMENSIONS}, sum(amount_micros), sum(gpu_hours), count(*) "
        "FROM cost_entries WHERE job_id IN (SELECT job_id FROM folded_jobs) "
        f"GROUP BY {day}, {_DIMENSIONS}"
    )
    op.execute("DROP TABLE folded_jobs")
    with op.batch_alter_table("cost_entries") as batch:
        batch.drop_constraint("uq_cost_entries_interval", type_="unique")
        batch.create_unique_constraint("uq_cost_entries_interval", _OLD)
        batch.drop_column("part")
    op.drop_column("placements", "gpu_type")
