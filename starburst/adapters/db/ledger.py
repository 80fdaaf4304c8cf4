"""Where jobs ran and what they cost: placements, cloud launches, cost entries and reports.

Invariants:
- A placement is recorded as one row per node part under a new ``attempt`` number; the
  current placement of a job is its highest attempt.
- Cost entries are idempotent per ``(job, source, period_start)``: a meter that re-sends an
  interval after a crash or a retry does not double-count it.
- Reports are aggregated by the database (``GROUP BY``), never by looping over rows in Python;
  an entry belongs to the period its ``period_start`` falls in (UTC days and months), and a
  range ``[since, until)`` selects entries by ``period_start``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from starburst.core.capacity import Part, Placement
from starburst.core.errors import ConfigError

from .base import StoreBase, T, chunks, in_chunks, new_id
from .convert import (
    from_micros,
    launch_columns,
    maybe_time,
    to_launch,
    to_micros,
    to_time,
)
from .engine import run
from .models import CloudLaunchRow, CostEntryRow, JobRow, PlacementRow, table
from .records import CloudLaunch, CostEntry, CostTotal, JobNotFound

PLACEMENTS = table(PlacementRow)
LAUNCHES = table(CloudLaunchRow)
COSTS = table(CostEntryRow)
JOBS = table(JobRow)

#: Grouping keys a cost report understands.
REPORT_KEYS = ("user", "team", "cloud", "day", "month")
_COLUMNS = {"user": COSTS.c.user_name, "team": COSTS.c.team_name, "cloud": COSTS.c.cloud}
_FORMATS = {"day": "%Y-%m-%d", "month": "%Y-%m"}


class LedgerStore(StoreBase):
    """Placements, launches and costs; mixed into ``SqlStore``."""

    # ---- on-prem placements -----------------------------------------------------------
    def record_placement(
        self, job_id: str, placement: Placement, *, fencing_token: int | None = None,
        at: float | None = None,
    ) -> int:
        """Record where a job starts on-prem; returns the attempt number (1, 2, ...)."""
        now = to_time(self._now(at))

        def write(conn: sa.Connection) -> int:
            self._check_fence(conn, fencing_token)
            last = conn.execute(
                sa.select(sa.func.max(PLACEMENTS.c.attempt)).where(PLACEMENTS.c.job_id == job_id)
            ).scalar()
            attempt = int(last or 0) + 1
            conn.execute(sa.insert(PLACEMENTS), [{
                "job_id": job_id, "attempt": attempt, "part": i, "node_index": p.node,
                "node_name": p.node_name, "gpus": p.gpus, "cpus": p.cpus,
                "memory_mb": p.memory_mb, "placed_at": now, "fencing_token": fencing_token,
            } for i, p in enumerate(placement)])
            return attempt

        return run(self._engine, self._fk_guard(job_id, write))

    def placement(self, job_id: str) -> Placement:
        """The job's latest placement (empty if it was never placed)."""
        latest = (
            sa.select(sa.func.max(PLACEMENTS.c.attempt))
            .where(PLACEMENTS.c.job_id == job_id).scalar_subquery()
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
        self, launch_id: int, *, status: str | None = None, request_id: str | None = None,
        cloud_job_id: str | None = None, started_at: float | None = None,
        ended_at: float | None = None,
    ) -> CloudLaunch:
        """Fill in what polling learned; fields left None keep their value."""
        values: dict[str, Any] = {
            k: v for k, v in {
                "status": status, "request_id": request_id, "cloud_job_id": cloud_job_id,
                "started_at": maybe_time(started_at), "ended_at": maybe_time(ended_at),
            }.items() if v is not None
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

    # ---- cost entries -----------------------------------------------------------------
    def record_costs(self, entries: Sequence[CostEntry]) -> None:
        """Record metered costs in one transaction; an interval already recorded (same job,
        source and start) is skipped, so retries never double-count."""

        def write(conn: sa.Connection) -> None:
            owners: dict[str, Any] = {}
            ids = {e.job_id for e in entries}
            for clause in in_chunks(JOBS.c.id, ids):
                query = sa.select(JOBS.c.id, JOBS.c.user_name, JOBS.c.team_name).where(clause)
                owners.update({r.id: r for r in conn.execute(query)})
            missing = ids - owners.keys()
            if missing:
                raise JobNotFound(sorted(missing)[0])
            statement = self._insert(COSTS).on_conflict_do_nothing(
                index_elements=["job_id", "source", "period_start"]
            )
            rows = [_cost_row(e, owners[e.job_id]) for e in entries]
            for part in chunks(rows):
                conn.execute(statement, list(part))

        run(self._engine, write)

    def cost_report(
        self, since: float, until: float, by: Sequence[str] = ("team",), *,
        team: str | None = None, user: str | None = None, cloud: str | None = None,
    ) -> list[CostTotal]:
        """Totals over ``[since, until)`` grouped by ``by`` (any of user, team, cloud, day,
        month) and currency, sorted by key."""
        unknown = [k for k in by if k not in REPORT_KEYS]
        if unknown:
            raise ConfigError(f"cannot group costs by {unknown[0]!r}; use {', '.join(REPORT_KEYS)}")
        keys = [self._group_expr(k).label(k) for k in by]
        query = (
            sa.select(
                *keys, COSTS.c.currency, sa.func.sum(COSTS.c.amount_micros).label("micros"),
                sa.func.sum(COSTS.c.gpu_hours).label("gpu_hours"),
                sa.func.count().label("entries"),
            )
            .where(COSTS.c.period_start >= to_time(since), COSTS.c.period_start < to_time(until))
            .group_by(*keys, COSTS.c.currency)
        )
        for column, value in ((COSTS.c.team_name, team), (COSTS.c.user_name, user),
                              (COSTS.c.cloud, cloud)):
            if value is not None:
                query = query.where(column == value)
        rows = run(self._engine, lambda c: c.execute(query).mappings().all())
        totals = [
            CostTotal(
                key={k: _period_text(r[k], k) for k in by}, currency=r["currency"],
                amount=from_micros(r["micros"]), gpu_hours=float(r["gpu_hours"] or 0.0),
                entries=int(r["entries"]),
            )
            for r in rows
        ]
        return sorted(totals, key=lambda t: (tuple(v or "" for v in t.key.values()), t.currency))

    def _group_expr(self, key: str) -> sa.ColumnElement[Any]:
        if key in _COLUMNS:
            return _COLUMNS[key]
        if self.is_postgres:
            utc = sa.func.timezone("UTC", COSTS.c.period_start)
            return sa.func.date_trunc(key, utc)
        return sa.func.strftime(_FORMATS[key], COSTS.c.period_start)

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


def _cost_row(entry: CostEntry, owner: Any) -> dict[str, Any]:
    if entry.end < entry.start:
        raise ConfigError(f"cost interval of job {entry.job_id} ends before it starts")
    return {
        "job_id": entry.job_id, "launch_id": entry.launch_id, "source": entry.source,
        "user_name": owner.user_name, "team_name": owner.team_name, "cloud": entry.cloud,
        "region": entry.region, "period_start": to_time(entry.start),
        "period_end": to_time(entry.end), "gpu_hours": entry.gpu_hours,
        "amount_micros": to_micros(entry.amount), "currency": entry.currency,
    }


def _period_text(value: Any, key: str) -> str | None:
    if isinstance(value, datetime):
        return value.strftime(_FORMATS[key])
    return None if value is None else str(value)
