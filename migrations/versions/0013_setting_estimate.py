"""The runtime estimate an applied policy setting's budgets use.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-04

``starburst tune`` chooses the estimate a budget is computed from (p50, a higher quantile or
the mean; ``core.estimates``) together with the policy and the budget, and ``--apply`` hands
it to the controller. ``policy_settings.estimate`` records it; NULL, as on every row before
this revision, means the point estimate (p50), which is what those settings ran with.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | Sequence[str] | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("policy_settings") as batch:
        batch.add_column(sa.Column("estimate", sa.String(length=8), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("policy_settings") as batch:
        batch.drop_column("estimate")
