"""Cloud launches: where a burst job went, the part of the ledger (``costs.SqlLedger``)
that its metered cost entries point at.

Invariants:
- A cloud launch is recorded when the burst is decided (``launched_at``, billed from then on)
  and updated as polling learns more; ``ended_at`` set means it bills no more.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from starburst.core.errors import ConfigError
from starburst.core.records import CloudLaunch

from .base import Database, fk_guard, new_id
from .convert import launch_columns, maybe_time, to_launch
from .engine import run
from .models import CloudLaunchRow, table

LAUNCHES = table(CloudLaunchRow)


class SqlLaunches:
    """The launches of ``SqlLedger``, over the shared ``Database``."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._engine = db.engine

    # ---- cloud launches ---------------------------------------------------------------
    def record_launch(
        self, launch: CloudLaunch, *, fencing_token: int | None = None
    ) -> CloudLaunch:
        """Store a cloud launch (its ``id`` is assigned here)."""

        def write(conn: sa.Connection) -> CloudLaunch:
            self._db.check_fence(conn, fencing_token)
            values = {**launch_columns(launch), "fencing_token": fencing_token}
            launch_id = new_id(conn.execute(sa.insert(LAUNCHES).values(**values)))
            row = conn.execute(sa.select(LAUNCHES).where(LAUNCHES.c.id == launch_id))
            return to_launch(row.mappings().one())

        return run(self._engine, fk_guard(launch.job_id, write))

    def update_launch(
        self,
        launch_id: int,
        *,
        status: str | None = None,
        request_id: str | None = None,
        cloud_job_id: str | None = None,
        started_at: float | None = None,
        ended_at: float | None = None,
    ) -> CloudLaunch:
        """Fill in what polling learned; fields left None keep their value."""
        values: dict[str, Any] = {
            k: v
            for k, v in {
                "status": status,
                "request_id": request_id,
                "cloud_job_id": cloud_job_id,
                "started_at": maybe_time(started_at),
                "ended_at": maybe_time(ended_at),
            }.items()
            if v is not None
        }

        def write(conn: sa.Connection) -> CloudLaunch:
            if values:
                conn.execute(sa.update(LAUNCHES).where(LAUNCHES.c.id == launch_id).values(values))
            row = conn.execute(sa.select(LAUNCHES).where(LAUNCHES.c.id == launch_id))
            found = row.mappings().first()
            if found is None:
                raise ConfigError(f"no cloud launch {launch_id}")
            return to_launch(found)

        return run(self._engine, write)

    def launches(self, job_id: str | None = None, *, active: bool = False) -> list[CloudLaunch]:
        """Launches of one job (or all); ``active``: only those not yet ended (to resume
        polling after a restart)."""
        query = sa.select(LAUNCHES).order_by(LAUNCHES.c.id)
        if job_id is not None:
            query = query.where(LAUNCHES.c.job_id == job_id)
        if active:
            query = query.where(LAUNCHES.c.ended_at.is_(None))
        return run(self._engine, lambda c: [to_launch(r) for r in c.execute(query).mappings()])
