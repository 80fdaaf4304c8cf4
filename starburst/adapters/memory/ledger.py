"""Where money went, in memory: cloud launches, metered cost entries and their reports
(the ``Ledger`` port). Terms and rules are the SQL ledger's (``adapters/db/costs.py``):
entries are idempotent per (job, source, start); a report groups the entries whose start is
in ``[since, until)`` by the chosen keys and currency; on-prem entries carry GPU-hours only.

Money is summed in integer micro-units, so totals are exact and equal the SQL store's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any, TypeVar

from starburst.core.billing import (
    MICRO,
    Usage,
    from_micros,
    gpu_groups,
    onprem_usage,
    report_keys,
    to_micros,
    top_per_currency,
)
from starburst.core.errors import ConfigError
from starburst.core.lifecycle import JobState
from starburst.core.ports import IdRange, JobCostKey, LedgerRead
from starburst.core.records import CloudLaunch, CostEntry, CostTotal, JobNotFound, StoredJob

from .tables import CostRow, JobRow, MemoryDatabase, Tables

ONPREM = "onprem"
T = TypeVar("T")


class MemoryLedger:
    """The ``Ledger`` port: launches and the cost ledger over the shared ``MemoryDatabase``."""

    def __init__(self, db: MemoryDatabase) -> None:
        self._db = db
        self._t = db.tables
        self._lock = db.lock

    # ---- cloud launches ---------------------------------------------------------------
    def record_launch(
        self, launch: CloudLaunch, *, fencing_token: int | None = None
    ) -> CloudLaunch:
        with self._lock:
            self._t.row(launch.job_id)
            self._db.check_fence(fencing_token)
            launch_id = len(self._t.launches) + 1
            stored = replace(launch, id=launch_id, hourly_price=_exact(launch.hourly_price))
            self._t.launches[launch_id] = stored
            return stored

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
        with self._lock:
            found = self._t.launches.get(launch_id)
            if found is None:
                raise ConfigError(f"no cloud launch {launch_id}")
            updated = replace(
                found,
                status=_keep(status, found.status),
                request_id=_keep(request_id, found.request_id),
                cloud_job_id=_keep(cloud_job_id, found.cloud_job_id),
                started_at=_keep(started_at, found.started_at),
                ended_at=_keep(ended_at, found.ended_at),
            )
            self._t.launches[launch_id] = updated
            return updated

    def launches(self, job_id: str | None = None, *, active: bool = False) -> list[CloudLaunch]:
        with self._lock:
            return [
                launch
                for launch in self._t.launches.values()
                if (job_id is None or launch.job_id == job_id)
                and not (active and launch.ended_at is not None)
            ]

    # ---- cost entries -----------------------------------------------------------------
    def record_costs(self, entries: Sequence[CostEntry]) -> None:
        with self._lock:
            missing = {e.job_id for e in entries} - self._t.jobs.keys()
            if missing:
                raise JobNotFound(sorted(missing)[0])
            named = {e.launch_id for e in entries if e.launch_id is not None}
            unknown = sorted(named - self._t.launches.keys())
            if unknown:
                raise ConfigError(f"no cloud launch {unknown[0]}")
            rows = [_cost_row(e, self._t.jobs[e.job_id]) for e in entries]
            for row in rows:
                self._t.add_cost(row)

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
        keys = report_keys(by)
        wanted = {
            "team": team,
            "user": user,
            "cloud": cloud,
            "project": project,
            "job": job,
            "source": source,
        }
        filters = {k: v for k, v in wanted.items() if v is not None}
        rate = _rate(rates or {})
        groups: dict[tuple[tuple[str | None, ...], str], _Sums] = {}
        with self._lock:
            for row in self._t.costs:
                if not since <= row.start < until:
                    continue
                if any(_value(row, k) != v for k, v in filters.items()):
                    continue
                group = (tuple(_value(row, k) for k in keys), row.currency)
                groups.setdefault(group, _Sums()).add(row, rate)
        totals = [
            sums.total(dict(zip(keys, values, strict=True)), currency)
            for (values, currency), sums in groups.items()
        ]
        ordered = sorted(totals, key=lambda t: (tuple(v or "" for v in t.key.values()), t.currency))
        return ordered if top is None else top_per_currency(ordered, top)

    def job_costs(self, job_ids: Iterable[str]) -> dict[str, dict[JobCostKey, Decimal]]:
        wanted = set(job_ids)
        micros: dict[str, dict[JobCostKey, int]] = {}
        with self._lock:
            for row in self._t.costs:
                if row.job_id in wanted and row.source != ONPREM:
                    per_launch = micros.setdefault(row.job_id, {})
                    key = (row.launch_id, row.currency)
                    per_launch[key] = per_launch.get(key, 0) + row.micros
        return {j: {k: from_micros(v) for k, v in m.items()} for j, m in micros.items()}

    def meter_onprem(self, until: float, *, chunk: float) -> int:
        with self._lock:
            running = [self._t.jobs[j] for _, j in self._t.fifo.get(JobState.RUNNING_ONPREM, [])]
            before = len(self._t.costs)
            for row in onprem_rows(self._t, running, until, chunk=chunk):
                self._t.add_cost(row)
            return len(self._t.costs) - before

    def ledger_totals_after(self, after_id: int, missing: Sequence[IdRange] = ()) -> LedgerRead:
        """Entries get ids in the order they are entered here, so none is ever missing."""
        sums: dict[tuple[str | None, str, str, str], tuple[int, float]] = {}
        with self._lock:
            rows = self._t.costs[max(after_id, 0) :]
            top = len(self._t.costs)
        if not rows:
            return LedgerRead(after_id, [])
        for row in rows:
            key = (row.team, _value(row, "location") or "", row.source, row.currency)
            micros, hours = sums.get(key, (0, 0.0))
            sums[key] = (micros + row.micros, hours + row.gpu_hours)
        return LedgerRead(top, [(*key, micros, hours) for key, (micros, hours) in sums.items()])

    def ended_jobs(self, since: float, until: float) -> list[StoredJob]:
        with self._lock:
            ended = [
                r
                for r in self._t.jobs.values()
                if r.state.terminal and r.ended_at is not None and since <= r.ended_at < until
            ]
            ended.sort(key=lambda r: (r.ended_at or 0.0, r.id))
            return [r.stored() for r in ended]


class _Sums:
    """The running totals of one report group."""

    __slots__ = ("cloud_hours", "entries", "micros", "onprem_hours", "onprem_value")

    def __init__(self) -> None:
        self.micros, self.entries = 0, 0
        self.cloud_hours, self.onprem_hours, self.onprem_value = 0.0, 0.0, 0.0

    def add(self, row: CostRow, rate: Callable[[str | None], float]) -> None:
        self.micros += row.micros
        self.entries += 1
        if row.source == ONPREM:
            self.onprem_hours += row.gpu_hours
            self.onprem_value += row.gpu_hours * rate(row.gpu_type)
        else:
            self.cloud_hours += row.gpu_hours

    def total(self, key: dict[str, str | None], currency: str) -> CostTotal:
        return CostTotal(
            key=key,
            currency=currency,
            amount=from_micros(self.micros),
            gpu_hours=self.cloud_hours,
            entries=self.entries,
            onprem_gpu_hours=self.onprem_hours,
            onprem_amount=Decimal(str(self.onprem_value)).quantize(MICRO),
        )


def onprem_rows(
    tables: Tables, jobs: Sequence[JobRow], until: float, *, chunk: float | None
) -> list[CostRow]:
    """The entries still to enter of the on-prem runs of ``jobs`` up to ``until`` (the SQL
    ledger's ``onprem_rows``): from each run's last entry, at its nodes' GPU types;
    ``chunk=None``: the runs end at ``until``."""
    rows = []
    for job in jobs:
        started = job.started_at
        if started is None or job.gpus <= 0:
            continue
        attempts = tables.placements.get(job.id) or [()]
        kinds = tables.placement_types.get(job.id, ())
        parts = [(p.gpus, kinds[i] if i < len(kinds) else None) for i, p in enumerate(attempts[-1])]
        last = tables.onprem_last.get(job.id)
        resume = last[1] if last is not None and last[0] >= started else None
        groups = gpu_groups(parts, job.gpus, job.gpu_type)
        usage = onprem_usage(started, resume, until, groups, chunk=chunk, final=chunk is None)
        rows += [_usage_row(job, u) for u in usage]
    return rows


def _usage_row(job: JobRow, usage: Usage) -> CostRow:
    return CostRow(
        id=0,
        job_id=job.id,
        source=ONPREM,
        start=usage.start,
        end=usage.end,
        micros=0,
        gpu_hours=usage.gpu_hours,
        currency="USD",
        cloud=ONPREM,
        region=None,
        gpu_type=usage.gpu_type,
        user=job.user,
        team=job.team,
        project=_project(job.extra),
        launch_id=None,
        part=usage.part,
    )


def _cost_row(entry: CostEntry, job: JobRow) -> CostRow:
    if entry.end < entry.start:
        raise ConfigError(f"cost interval of job {entry.job_id} ends before it starts")
    return CostRow(
        id=0,
        job_id=entry.job_id,
        source=entry.source,
        start=entry.start,
        end=entry.end,
        micros=to_micros(entry.amount),
        gpu_hours=entry.gpu_hours,
        currency=entry.currency,
        cloud=entry.cloud,
        region=entry.region,
        gpu_type=entry.gpu_type or job.gpu_type,
        user=job.user,
        team=job.team,
        project=_project(job.extra),
        launch_id=entry.launch_id,
    )


def _project(extra: Mapping[str, Any]) -> str | None:
    value = extra.get("project")
    return str(value) if value else None


def _value(row: CostRow, key: str) -> str | None:
    """The value of report key ``key`` for ``row`` (periods are UTC, weeks from Monday)."""
    if key in ("day", "week", "month"):
        moment = datetime.fromtimestamp(row.start, UTC)
        if key == "week":
            return (moment - timedelta(days=moment.weekday())).strftime("%Y-%m-%d")
        return moment.strftime("%Y-%m-%d" if key == "day" else "%Y-%m")
    if key == "location":
        return row.cloud if row.region is None else f"{row.cloud}:{row.region}"
    column = {"job": "job_id", "label": "project"}.get(key, key)
    value = getattr(row, column)
    return None if value is None else str(value)


def _rate(rates: Mapping[str, float]) -> Callable[[str | None], float]:
    """The internal $/GPU-hour of a GPU type (case-insensitive; ``*``: any other)."""
    lowered = {k.lower(): float(v) for k, v in rates.items()}
    default = lowered.pop("*", 0.0)
    return lambda gpu_type: lowered.get((gpu_type or "").lower(), default)


def _keep(new: T | None, old: T) -> T:
    return old if new is None else new


def _exact(amount: Decimal) -> Decimal:
    """``amount`` as the ledger keeps it: to the micro-unit."""
    return from_micros(to_micros(amount))
