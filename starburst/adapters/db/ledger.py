"""Where jobs ran: on-prem placements and cloud launches (their cost is in ``costs``).

Invariants:
- A placement is recorded as one row per node part under a new ``attempt`` number; the
  current placement of a job is its highest attempt.
- A cloud launch is recorded when the burst is decided (``launched_at``, billed from then on)
  and updated as polling learns more; ``ended_at`` set means it bills no more.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import sqlalchemy as sa

from starburst.core.capacity import Part, Placement
from starburst.core.errors import ConfigError
from starburst.core.records import CloudLaunch, JobNotFound

from .base import StoreBase, T, new_id
from .convert import launch_columns, maybe_time, to_launch, to_time
from .engine import run
from .models import CloudLaunchRow, JobRow, PlacementRow, table

PLACEMENTS = table(PlacementRow)
LAUNCHES = table(CloudLaunchRow)
JOBS = table(JobRow)


class LedgerStore(StoreBase):
    """Placements and launches; mixed into ``SqlStore``."""

    # ---- on-prem placements -----------------------------------------------------------
    def record_placement(
        self,
        job_id: str,
        placement: Placement,
        *,
        fencing_token: int | None = None,
        at: float | None = None,
        gpu_types: Sequence[str | None] | None = None,
    ) -> int:
        """Record where a job starts on-prem; returns the attempt number (1, 2, ...).
        ``gpu_types``: each part's node GPU type (on-prem use is priced by it)."""
        now = to_time(self._now(at))
        kinds = list(gpu_types or ())
        kinds += [None] * (len(placement) - len(kinds))

        def write(conn: sa.Connection) -> int:
            self._check_fence(conn, fencing_token)
            last = conn.execute(
                sa.select(sa.func.max(PLACEMENTS.c.attempt)).where(PLACEMENTS.c.job_id == job_id)
            ).scalar()
            attempt = int(last or 0) + 1
            conn.execute(
                sa.insert(PLACEMENTS),
                [
                    {
                        "job_id": job_id,
                        "attempt": attempt,
                        "part": i,
                        "node_index": p.node,
                        "node_name": p.node_name,
                        "gpus": p.gpus,
                        "cpus": p.cpus,
                        "memory_mb": p.memory_mb,
                        "gpu_type": kinds[i],
                        "placed_at": now,
                        "fencing_token": fencing_token,
                    }
                    for i, p in enumerate(placement)
                ],
            )
            return attempt

        return run(self._engine, self._fk_guard(job_id, write))

    def placement(self, job_id: str) -> Placement:
        """The job's latest placement (empty if it was never placed)."""
        latest = (
            sa.select(sa.func.max(PLACEMENTS.c.attempt))
            .where(PLACEMENTS.c.job_id == job_id)
            .scalar_subquery()
        )
        query = (
            sa.select(PLACEMENTS)
            .where(PLACEMENTS.c.job_id == job_id, PLACEMENTS.c.attempt == latest)
            .order_by(PLACEMENTS.c.part)
        )
        rows = run(self._engine, lambda c: c.execute(query).mappings().all())
        return tuple(
            Part(r["node_index"], r["node_name"], r["gpus"], r["cpus"], r["memory_mb"])
            for r in rows
        )

    # ---- cloud launches ---------------------------------------------------------------
    def record_launch(
        self, launch: CloudLaunch, *, fencing_token: int | None = None
    ) -> CloudLaunch:
        """Store a cloud launch (its ``id`` is assigned here)."""

        def write(conn: sa.Connection) -> CloudLaunch:
            self._check_fence(conn, fencing_token)
            values = {**launch_columns(launch), "fencing_token": fencing_token}
            launch_id = new_id(conn.execute(sa.insert(LAUNCHES).values(**values)))
            row = conn.execute(sa.select(LAUNCHES).where(LAUNCHES.c.id == launch_id))
            return to_launch(row.mappings().one())

        return run(self._engine, self._fk_guard(launch.job_id, write))

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

    def _fk_guard(
        self, job_id: str, work: Callable[[sa.Connection], T]
    ) -> Callable[[sa.Connection], T]:
        """Check the job exists first, so a missing one is ``JobNotFound``, not a
        foreign-key error."""

        def guarded(conn: sa.Connection) -> T:
            exists = conn.execute(sa.select(JOBS.c.id).where(JOBS.c.id == job_id)).first()
            if exists is None:
                raise JobNotFound(job_id)
            return work(conn)

        return guarded
