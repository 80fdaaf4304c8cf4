"""The ledger (``SqlLedger``, the ``Ledger`` port): metered cost entries and every report
read from them, and the cloud launches the entries point at.

Terms:
- *entry*: one row of ``cost_entries``. ``source = "cloud"``: a chunk of a cloud launch's
  billed time (money and GPU-hours); ``source = "onprem"``: an interval of a run on the
  private cluster (GPU-hours, no money) for one GPU type of its nodes (``part``), entered
  while it runs (``meter_onprem``) and, for the rest, in the same transaction as the state
  change that ends the run (``onprem_rows``), so a run is entered once and never lost.
- *report*: totals over ``[since, until)`` grouped by any of ``reports.REPORT_KEYS`` (the
  query: ``reports``). An entry belongs to the period its ``period_start`` falls in (UTC days, ISO
  weeks starting Monday — named by that Monday's date — and months).
- *location*: ``cloud:region`` (or just ``cloud``); on-prem usage is located at ``onprem``.

Invariants:
- A cloud launch is recorded when the burst is decided (``launched_at``, billed from then on)
  and updated as polling learns more; ``ended_at`` set means it bills no more.
- Entries are idempotent per ``(job, source, period_start, part)``: a meter that re-sends an
  interval after a crash or a retry does not double-count it.
- Entries are written only through ``rollups.enter``, which keeps the daily rollups that
  reports over whole days read (one row per job and day instead of one per entry).
- Reports are aggregated by the database (``GROUP BY`` the keys and currency, one row per
  group, showback priced in the same pass), never by looping over entries in Python.
- Every cost view (job detail, reports, budgets, savings) reads these entries; nothing else
  computes what a job cost.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal
from typing import Any

import sqlalchemy as sa

from starburst.core.billing import (
    Usage,
    from_micros,
    gpu_groups,
    onprem_usage,
    report_keys,
    to_micros,
)
from starburst.core.errors import ConfigError
from starburst.core.lifecycle import TERMINAL, JobState
from starburst.core.ports import IdRange, JobCostKey, LedgerRead
from starburst.core.records import CloudLaunch, CostEntry, CostTotal, JobNotFound, StoredJob

from . import reports
from .base import Database, fk_guard, in_chunks, new_id
from .convert import launch_columns, maybe_time, to_epoch, to_launch, to_stored_job, to_time
from .engine import run, translate_errors
from .models import CloudLaunchRow, CostEntryRow, JobRow, PlacementRow, table
from .reports import ONPREM, Report, aggregate, totals
from .rollups import enter
from .rollups import rebuild as rollups_rebuild

COSTS = table(CostEntryRow)
LAUNCHES = table(CloudLaunchRow)
JOBS = table(JobRow)
PLACEMENTS = table(PlacementRow)


class SqlLedger:
    """The ledger's writes and reads, cloud launches and cost entries, over the shared
    ``Database``."""

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

    def record_costs(self, entries: Sequence[CostEntry]) -> None:
        """Record metered entries in one transaction; an interval already recorded (same job,
        source and start) is skipped, so retries never double-count."""

        def write(conn: sa.Connection) -> None:
            owners: dict[str, Any] = {}
            ids = {e.job_id for e in entries}
            for clause in in_chunks(JOBS.c.id, ids):
                query = sa.select(
                    JOBS.c.id, JOBS.c.user_name, JOBS.c.team_name, JOBS.c.gpu_type, JOBS.c.extra
                ).where(clause)
                owners.update({r.id: r for r in conn.execute(query)})
            missing = ids - owners.keys()
            if missing:
                raise JobNotFound(sorted(missing)[0])
            self._check_launches(conn, {e.launch_id for e in entries} - {None})
            enter(conn, [_cost_row(e, owners[e.job_id]) for e in entries], self._db.is_postgres)

        run(self._engine, write)

    @staticmethod
    def _check_launches(conn: sa.Connection, launch_ids: set[int | None]) -> None:
        """A ``ConfigError`` for an entry of a launch never recorded (not a foreign-key
        error from the database)."""
        found: set[int] = set()
        for clause in in_chunks(LAUNCHES.c.id, launch_ids):
            found.update(conn.execute(sa.select(LAUNCHES.c.id).where(clause)).scalars())
        unknown = sorted(i for i in launch_ids if i is not None and i not in found)
        if unknown:
            raise ConfigError(f"no cloud launch {unknown[0]}")

    def cost_report(
        self,
        since: float,
        until: float,
        by: Sequence[str] = ("team",),
        *,
        team: str | None = None,
        user: str | None = None,
        cloud: str | None = None,
        project: str | None = None,
        job: str | None = None,
        source: str | None = None,
        rates: Mapping[str, float] | None = None,
        top: int | None = None,
    ) -> list[CostTotal]:
        """Totals over ``[since, until)`` grouped by ``by`` (see ``REPORT_KEYS``) and
        currency, sorted by key; filters narrow the entries first. On-prem GPU-hours are
        priced at ``rates`` ($/GPU-hour per GPU type, case-insensitive; ``*``: any other).
        ``top``: only the N rows of highest cloud spend per currency, ranked in SQL.
        Whole UTC days are read from the daily rollups, the rest from the entries."""
        filters = {"team_name": team, "user_name": user, "cloud": cloud, "project": project}
        filters.update(job_id=job, source=source)
        keys = report_keys(by)
        postgres = self._db.is_postgres
        report = Report(postgres, keys, rates or {}, filters)
        query = report.query(to_time(since), to_time(until), rollups=True, top=top)
        if query is None:
            return []
        rows = run(self._engine, lambda conn: aggregate(conn, query, postgres=postgres))
        return totals(keys, rows)

    def rebuild_cost_rollups(self) -> None:
        """Recompute the daily rollups from the entries: for entries written around the
        store (a bulk load); the store's own writes keep them current."""
        run(self._engine, lambda conn: rollups_rebuild(conn, self._db.is_postgres))

    def job_costs(self, job_ids: Iterable[str]) -> dict[str, dict[JobCostKey, Decimal]]:
        """Money metered for each job, per launch id (``None``: entries of no launch) and
        currency, over all time; jobs without entries are absent."""
        c = COSTS.c
        out: dict[str, dict[JobCostKey, Decimal]] = {}

        def read(conn: sa.Connection) -> None:
            for clause in in_chunks(c.job_id, set(job_ids)):
                query = (
                    sa.select(c.job_id, c.launch_id, c.currency, sa.func.sum(c.amount_micros))
                    .where(clause, c.source != ONPREM)
                    .group_by(c.job_id, c.launch_id, c.currency)
                )
                for job_id, launch_id, currency, micros in conn.execute(query):
                    out.setdefault(job_id, {})[(launch_id, currency)] = from_micros(micros)

        run(self._engine, read)
        return out

    def meter_onprem(self, until: float, *, chunk: float) -> int:
        """Enter the complete intervals of every run still on-prem up to ``until`` (each
        from its last entry); how many entries were written. On PostgreSQL the running jobs
        are locked first, so a state change ending one of them (which enters the rest of its
        run) waits for this, or this for it: an interval is never entered by both."""

        def write(conn: sa.Connection) -> int:
            query = sa.select(JOBS).where(JOBS.c.state == JobState.RUNNING_ONPREM.value)
            if self._db.is_postgres:  # locked in one fixed order (by id)
                query = query.order_by(JOBS.c.id).with_for_update()
            running = conn.execute(query).mappings().all()
            rows = onprem_rows(conn, running, until, chunk=chunk)
            return enter(conn, rows, self._db.is_postgres) if rows else 0

        return run(self._engine, write)

    def ledger_totals_after(self, after_id: int, missing: Sequence[IdRange] = ()) -> LedgerRead:
        """Entries with an id above ``after_id`` or in ``missing`` summed by team, location,
        source and currency, with the ids up to the highest that are not there (yet): on
        PostgreSQL an id is taken before its transaction commits, so a lower id may commit
        after a higher one was read; the caller asks for those again. One snapshot
        (REPEATABLE READ), so the sums and the missing ids agree."""
        c = COSTS.c
        location = reports.location(COSTS)

        def read(conn: sa.Connection) -> LedgerRead:
            top = max(int(conn.execute(sa.select(sa.func.max(c.id))).scalar() or 0), after_id)
            ranges = [*missing, *([(after_id + 1, top)] if top > after_id else [])]
            if not ranges:
                return LedgerRead(after_id, [])
            wanted = sa.or_(*(c.id.between(a, b) for a, b in ranges))
            query = (
                sa.select(
                    c.team_name,
                    location,
                    c.source,
                    c.currency,
                    sa.func.sum(c.amount_micros),
                    sa.func.sum(c.gpu_hours),
                )
                .where(wanted)
                .group_by(c.team_name, location, c.source, c.currency)
            )
            rows = [
                (team, where, source, currency, int(micros or 0), float(hours or 0.0))
                for team, where, source, currency, micros, hours in conn.execute(query)
            ]
            holes = tuple(h for a, b in ranges for h in _holes(conn, a, b))
            return LedgerRead(top, rows, holes)

        with translate_errors(self._engine), self._engine.connect() as conn:
            if self._db.is_postgres:
                conn = conn.execution_options(isolation_level="REPEATABLE READ")
            with conn.begin():
                return read(conn)

    def ended_jobs(self, since: float, until: float) -> list[StoredJob]:
        """Jobs that ended in ``[since, until)`` (any final state), oldest end first."""
        query = (
            sa.select(JOBS)
            .where(
                JOBS.c.ended_at >= to_time(since),
                JOBS.c.ended_at < to_time(until),
                JOBS.c.state.in_([s.value for s in TERMINAL]),
            )
            .order_by(JOBS.c.ended_at, JOBS.c.id)
        )
        return run(
            self._engine, lambda conn: [to_stored_job(r) for r in conn.execute(query).mappings()]
        )


def _holes(conn: sa.Connection, first: int, last: int) -> list[IdRange]:
    """The ids in ``first..last`` with no entry, as ranges (none, usually: one count)."""
    c = COSTS.c
    inside = c.id.between(first, last)
    count, low, high = conn.execute(
        sa.select(sa.func.count(), sa.func.min(c.id), sa.func.max(c.id)).where(inside)
    ).one()
    if count == last - first + 1:
        return []
    if not count:
        return [(first, last)]
    following = sa.func.lead(c.id).over(order_by=c.id).label("following")
    steps = sa.select(c.id, following).where(inside).subquery()
    gaps = sa.select(steps.c.id, steps.c.following).where(steps.c.following > steps.c.id + 1)
    found = [(int(i) + 1, int(n) - 1) for i, n in conn.execute(gaps.order_by(steps.c.id))]
    edges = [(first, int(low) - 1)] if low > first else []
    return [*edges, *found, *([(int(high) + 1, last)] if high < last else [])]


def onprem_rows(
    conn: sa.Connection, jobs: Sequence[Any], until: float, *, chunk: float | None
) -> list[dict[str, Any]]:
    """The ledger rows still to enter of the on-prem runs of ``jobs`` (``jobs`` rows running
    on-prem) up to ``until`` (``core.billing.onprem_usage``): each continues from its run's
    last entry, at the GPU types of its placement's nodes. ``chunk=None``: the runs end at
    ``until`` (the partial last interval too, no chunk limit)."""
    jobs = [j for j in jobs if j["started_at"] is not None and j["gpus"] > 0]
    if not jobs:
        return []
    ids = {j["id"] for j in jobs}
    c, p = COSTS.c, PLACEMENTS.c
    last: dict[str, Any] = {}
    parts: dict[str, tuple[int, list[tuple[int, str | None]]]] = {}
    for clause in in_chunks(c.job_id, ids):
        query = (
            sa.select(c.job_id, sa.func.max(c.period_end))
            .join(JOBS, JOBS.c.id == c.job_id)
            .where(clause, c.source == ONPREM, c.period_start >= JOBS.c.started_at)
            .group_by(c.job_id)
        )
        last.update((job_id, end) for job_id, end in conn.execute(query))
    for clause in in_chunks(p.job_id, ids):
        query = sa.select(p.job_id, p.attempt, p.gpus, p.gpu_type).where(clause)
        for row in conn.execute(query.order_by(p.attempt, p.part)):
            if row.job_id not in parts or parts[row.job_id][0] < row.attempt:
                parts[row.job_id] = (row.attempt, [])
            parts[row.job_id][1].append((row.gpus, row.gpu_type))
    rows = []
    for job in jobs:
        groups = gpu_groups(parts.get(job["id"], (0, []))[1], job["gpus"], job["gpu_type"])
        resume = last.get(job["id"])
        usage = onprem_usage(
            to_epoch(job["started_at"]),
            None if resume is None else to_epoch(resume),
            until,
            groups,
            chunk=chunk,
            final=chunk is None,
        )
        rows += [_usage_row(job, u) for u in usage]
    return rows


def _usage_row(job: Mapping[str, Any], usage: Usage) -> dict[str, Any]:
    return {
        "job_id": job["id"],
        "launch_id": None,
        "source": ONPREM,
        "user_name": job["user_name"],
        "team_name": job["team_name"],
        "project": _project(job["extra"]),
        "cloud": ONPREM,
        "region": None,
        "gpu_type": usage.gpu_type,
        "period_start": to_time(usage.start),
        "period_end": to_time(usage.end),
        "gpu_hours": usage.gpu_hours,
        "amount_micros": 0,
        "currency": "USD",
        "part": usage.part,
    }


def _project(extra: Any) -> str | None:
    value = (extra or {}).get("project") if isinstance(extra, dict) else None
    return str(value) if value else None


def _cost_row(entry: CostEntry, owner: Any) -> dict[str, Any]:
    if entry.end < entry.start:
        raise ConfigError(f"cost interval of job {entry.job_id} ends before it starts")
    return {
        "job_id": entry.job_id,
        "launch_id": entry.launch_id,
        "source": entry.source,
        "user_name": owner.user_name,
        "team_name": owner.team_name,
        "project": _project(owner.extra),
        "cloud": entry.cloud,
        "region": entry.region,
        "gpu_type": entry.gpu_type or owner.gpu_type,
        "period_start": to_time(entry.start),
        "period_end": to_time(entry.end),
        "gpu_hours": entry.gpu_hours,
        "amount_micros": to_micros(entry.amount),
        "currency": entry.currency,
    }
