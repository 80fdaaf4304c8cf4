"""The host and state directory a leader's local backends keep their jobs in.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-03

The local cluster and the emulated cloud find their jobs only through the state directory of
the machine that started them. ``leader_terms.local_state`` records it (``host:directory``)
for the leader that runs such jobs, so a controller with another one refuses to lead while
those jobs are in flight instead of starting them a second time (``controller/locality.py``).
NULL for a leader without local backends, and for every term before this revision.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | Sequence[str] | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("leader_terms") as batch:
        batch.add_column(sa.Column("local_state", sa.String(length=1024), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("leader_terms") as batch:
        batch.drop_column("local_state")
