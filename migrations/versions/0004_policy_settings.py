"""Policy settings applied at run time (their audit log) and the controller's observed state.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01

``policy_settings`` is append-only: each ``starburst tune --apply`` (CLI or REST) adds a row
saying who changed the policy, budget or mode, when, why and on what evidence; the newest
row is in force and the running controller picks it up without a restart.
``controller_state`` keeps, per name, the latest JSON the controller wrote: the cluster's
shape and the scheduler configuration it runs, so a history export can replay them.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | Sequence[str] | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
UtcTime = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "policy_settings",
        sa.Column("id", BigId, autoincrement=True, nullable=False),
        sa.Column("created_at", UtcTime, nullable=False),
        sa.Column("actor", sa.String(128), nullable=False),
        sa.Column("policy", sa.String(16), nullable=False),
        sa.Column("budget", sa.Float(), nullable=True),
        sa.Column("coefficient", sa.Float(), nullable=True),
        sa.Column("out_of_order", sa.Boolean(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("evidence", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_policy_settings")),
    )
    op.create_table(
        "controller_state",
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("value", sa.JSON(), nullable=False),
        sa.Column("updated_at", UtcTime, nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_controller_state")),
    )


def downgrade() -> None:
    op.drop_table("controller_state")
    op.drop_table("policy_settings")
