"""The database schema as SQLAlchemy 2 typed models: the only place ORM rows exist.

Tables and their invariants:
- ``jobs``: one row per job: its spec, owner (user and team, by name), lifecycle ``state``,
  ``version`` (optimistic concurrency: every state change bumps it, and an update only applies
  if the version it read is still current), times, predicted runtime, wait budget. ``queued_at``
  is the queue's FIFO key (the submit time, or the re-arrival time of a job pulled back from
  the cloud); ties end in ``id``. ``idempotency_key`` is unique: a repeated submission returns
  the job the first one created. ``depends_on`` lists the jobs it waits for (``ID`` or
  ``ID:ok``), ``array_id``/``array_limit`` its array and how many of its elements may be
  queued or running at once; ``held_reason`` says why a ``submitted`` job is held out of
  the queue (``core.dependencies``), NULL when it is not.
- ``waiting_counts``: how many jobs (``submitted`` or ``queued``) each user and each team
  has waiting, as the submission limits read them; kept by triggers on ``jobs`` (migration
  0015) in the transaction of every change, so they are exact whatever writes the jobs.
- ``job_events``: append-only history of every state change (from → to, when, why, by whom,
  and the leader's fencing token). The store never updates or deletes an event.
- ``placements``: the on-prem nodes a job was started on, one row per node part, grouped by
  ``attempt`` (a job re-queued by Star-Wait may be placed again).
- ``cloud_launches``: cloud runs of a job (provider, region, instance, accelerators, hourly
  price, SkyPilot request and job ids, launch/start/end times).
- ``cost_entries``: the ledger: metered money and GPU-hours over an interval ``[period_start,
  period_end)``, in integer micro-units of ``currency`` (exact sums in SQL); ``source`` is
  ``cloud`` (a launch's chunk) or ``onprem`` (a run on the private cluster: GPU-hours, no
  money). ``user_name``/``team_name``/``project``/``gpu_type``/``cloud`` are copied from the
  job and launch when metered: a cost is a fact of its time. ``(job_id, source,
  period_start)`` is unique, so metering the same interval twice cannot double-count.
- ``cost_rollups``: the ledger summed per UTC ``day``, job and everything a report groups or
  filters by (source, owner, project, cloud, region, GPU type, currency), written in the
  transaction that enters the entries, so reports over whole days read these instead of
  every entry. A key may have more than one row (two writers that both found none): the
  sum of its rows is the truth.
- ``predictions`` and ``model_versions``: runtime estimates (value, band, quantiles) and the
  model that made them.
- ``users``, ``teams``, ``api_tokens`` (SHA-256 of the secret only; a role each),
  ``team_budgets`` (monthly cloud budget per team), ``budget_alerts`` (the alert thresholds
  each team crossed per month: an alert fires once).
- ``leader_terms``: per lock name, the last fencing token handed out (monotonic).

Times are timezone-aware UTC ``DateTime`` columns (stored naive-UTC on SQLite).
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Any, cast

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    CheckConstraint,
    Date,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from starburst.core.lifecycle import JobState

#: Constraint names are stable so Alembic migrations can refer to them on every dialect.
NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

#: A 64-bit id that is still SQLite's auto-incrementing rowid alias.
BigId = BigInteger().with_variant(Integer(), "sqlite")
UtcTime = DateTime(timezone=True)

_STATES = ", ".join(f"'{s.value}'" for s in JobState)
_IN_ARRAY = text("array_id IS NOT NULL")
_HELD = text("held_reason IS NOT NULL")
_ACTIVE = text("state IN (" + ", ".join(f"'{s.value}'" for s in JobState if not s.terminal) + ")")


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)


def table(model: type[Base]) -> Table:
    """The Core table of a model, for bulk statements that bypass the ORM unit of work."""
    return cast(Table, model.__table__)


class TeamRow(Base):
    __tablename__ = "teams"

    name: Mapped[str] = mapped_column(String(128), primary_key=True)
    created_at: Mapped[datetime] = mapped_column(UtcTime)


class UserRow(Base):
    __tablename__ = "users"

    name: Mapped[str] = mapped_column(String(128), primary_key=True)
    team_name: Mapped[str | None] = mapped_column(ForeignKey("teams.name"))
    email: Mapped[str | None] = mapped_column(String(256))
    created_at: Mapped[datetime] = mapped_column(UtcTime)


class ApiTokenRow(Base):
    __tablename__ = "api_tokens"
    __table_args__ = (CheckConstraint("role IN ('admin', 'user', 'finance')", name="role"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    user_name: Mapped[str] = mapped_column(ForeignKey("users.name"), index=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    prefix: Mapped[str] = mapped_column(String(16))
    role: Mapped[str] = mapped_column(String(16))
    label: Mapped[str | None] = mapped_column(String(128))
    created_at: Mapped[datetime] = mapped_column(UtcTime)
    expires_at: Mapped[datetime | None] = mapped_column(UtcTime)
    revoked_at: Mapped[datetime | None] = mapped_column(UtcTime)
    last_used_at: Mapped[datetime | None] = mapped_column(UtcTime)


class TeamBudgetRow(Base):
    __tablename__ = "team_budgets"
    __table_args__ = (CheckConstraint("monthly_limit_micros >= 0", name="non_negative"),)

    team_name: Mapped[str] = mapped_column(ForeignKey("teams.name"), primary_key=True)
    monthly_limit_micros: Mapped[int] = mapped_column(BigInteger)
    currency: Mapped[str] = mapped_column(String(3))
    updated_at: Mapped[datetime] = mapped_column(UtcTime)


class BudgetAlertRow(Base):
    """A budget alert that fired: one per team, month and threshold (‰ of the limit)."""

    __tablename__ = "budget_alerts"

    team_name: Mapped[str] = mapped_column(String(128), primary_key=True)
    month: Mapped[str] = mapped_column(String(7), primary_key=True)
    threshold_permille: Mapped[int] = mapped_column(Integer, primary_key=True)
    spent_micros: Mapped[int] = mapped_column(BigInteger)
    fired_at: Mapped[datetime] = mapped_column(UtcTime)


class JobRow(Base):
    __tablename__ = "jobs"
    __table_args__ = (
        CheckConstraint(f"state IN ({_STATES})", name="state"),
        CheckConstraint("gpus >= 0", name="gpus"),
        CheckConstraint("pods >= 1", name="pods"),
        Index("ix_jobs_queue", "state", "queued_at", "id"),
        Index("ix_jobs_user_queue", "user_name", "queued_at", "id"),  # a user's listing
        # the active jobs' listing (migration 0010)
        Index(
            "ix_jobs_active_queue",
            "queued_at",
            "id",
            postgresql_where=_ACTIVE,
            sqlite_where=_ACTIVE,
        ),
        # a user's active jobs' listing (migration 0011)
        Index(
            "ix_jobs_active_user_queue",
            "user_name",
            "queued_at",
            "id",
            postgresql_where=_ACTIVE,
            sqlite_where=_ACTIVE,
        ),
        # the held jobs in queue order, which every pass reads (migration 0017)
        Index(
            "ix_jobs_held_queue",
            "queued_at",
            "id",
            postgresql_where=_HELD,
            sqlite_where=_HELD,
        ),
        # the jobs of arrays only: every query asks for given arrays (migration 0016)
        Index(
            "ix_jobs_array_id",
            "array_id",
            postgresql_where=_IN_ARRAY,
            sqlite_where=_IN_ARRAY,
        ),
    )

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    idempotency_key: Mapped[str | None] = mapped_column(String(200), unique=True)
    name: Mapped[str | None] = mapped_column(String(256))
    # found by ix_jobs_user_queue, whose first column it is (migration 0016)
    user_name: Mapped[str | None] = mapped_column(ForeignKey("users.name"))
    team_name: Mapped[str | None] = mapped_column(ForeignKey("teams.name"), index=True)
    image: Mapped[str | None] = mapped_column(String(512))
    command: Mapped[str | None] = mapped_column(Text)
    gpus: Mapped[int] = mapped_column(Integer)
    pods: Mapped[int | None] = mapped_column(Integer)
    cpus: Mapped[float] = mapped_column(Float)
    memory_mb: Mapped[float] = mapped_column(Float)
    gpu_type: Mapped[str | None] = mapped_column(String(64))
    declared_runtime: Mapped[float | None] = mapped_column(Float)
    deadline: Mapped[datetime | None] = mapped_column(UtcTime)
    extra: Mapped[dict[str, Any]] = mapped_column(JSON)
    state: Mapped[str] = mapped_column(String(16))
    version: Mapped[int] = mapped_column(Integer)
    submitted_at: Mapped[datetime] = mapped_column(UtcTime)
    queued_at: Mapped[datetime] = mapped_column(UtcTime)
    started_at: Mapped[datetime | None] = mapped_column(UtcTime)
    ended_at: Mapped[datetime | None] = mapped_column(UtcTime)
    runtime: Mapped[float | None] = mapped_column(Float)
    predicted_runtime: Mapped[float | None] = mapped_column(Float)
    wait_budget: Mapped[float | None] = mapped_column(Float)
    ran_on: Mapped[str | None] = mapped_column(String(16))
    depends_on: Mapped[list[str] | None] = mapped_column(JSON)
    array_id: Mapped[str | None] = mapped_column(String(256))
    array_limit: Mapped[int | None] = mapped_column(Integer)
    held_reason: Mapped[str | None] = mapped_column(Text)


class WaitingCountRow(Base):
    """The waiting jobs of one user (``kind`` 'user') or team ('team'); migration 0015."""

    __tablename__ = "waiting_counts"

    kind: Mapped[str] = mapped_column(String(8), primary_key=True)
    name: Mapped[str] = mapped_column(String(128), primary_key=True)
    jobs: Mapped[int] = mapped_column(BigInteger)


class JobEventRow(Base):
    __tablename__ = "job_events"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    job_id: Mapped[str] = mapped_column(ForeignKey("jobs.id"), index=True)
    at: Mapped[datetime] = mapped_column(UtcTime)
    from_state: Mapped[str | None] = mapped_column(String(16))
    to_state: Mapped[str] = mapped_column(String(16))
    reason: Mapped[str] = mapped_column(Text)
    actor: Mapped[str] = mapped_column(String(128))
    fencing_token: Mapped[int | None] = mapped_column(BigInteger)


class PlacementRow(Base):
    __tablename__ = "placements"
    __table_args__ = (UniqueConstraint("job_id", "attempt", "part", name="uq_placements_part"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    job_id: Mapped[str] = mapped_column(ForeignKey("jobs.id"), index=True)
    attempt: Mapped[int] = mapped_column(Integer)
    part: Mapped[int] = mapped_column(Integer)
    node_index: Mapped[int] = mapped_column(Integer)
    node_name: Mapped[str] = mapped_column(String(256))
    gpus: Mapped[int] = mapped_column(Integer)
    cpus: Mapped[float] = mapped_column(Float)
    memory_mb: Mapped[float] = mapped_column(Float)
    gpu_type: Mapped[str | None] = mapped_column(String(64))
    placed_at: Mapped[datetime] = mapped_column(UtcTime)
    fencing_token: Mapped[int | None] = mapped_column(BigInteger)


class CloudLaunchRow(Base):
    __tablename__ = "cloud_launches"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    job_id: Mapped[str] = mapped_column(ForeignKey("jobs.id"), index=True)
    name: Mapped[str] = mapped_column(String(256))
    provider: Mapped[str] = mapped_column(String(64))
    region: Mapped[str | None] = mapped_column(String(64))
    instance_type: Mapped[str | None] = mapped_column(String(128))
    accelerators: Mapped[str] = mapped_column(String(128))
    hourly_price_micros: Mapped[int] = mapped_column(BigInteger)
    currency: Mapped[str] = mapped_column(String(3))
    spot: Mapped[bool] = mapped_column(Boolean)
    request_id: Mapped[str | None] = mapped_column(String(128))
    cloud_job_id: Mapped[str | None] = mapped_column(String(128))
    status: Mapped[str] = mapped_column(String(16))
    launched_at: Mapped[datetime] = mapped_column(UtcTime)
    started_at: Mapped[datetime | None] = mapped_column(UtcTime)
    ended_at: Mapped[datetime | None] = mapped_column(UtcTime)
    fencing_token: Mapped[int | None] = mapped_column(BigInteger)


class CostEntryRow(Base):
    __tablename__ = "cost_entries"
    __table_args__ = (
        UniqueConstraint(
            "job_id", "source", "period_start", "part", name="uq_cost_entries_interval"
        ),
        CheckConstraint("period_end >= period_start", name="interval"),
        Index("ix_cost_entries_period", "period_start"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    job_id: Mapped[str] = mapped_column(ForeignKey("jobs.id"))
    launch_id: Mapped[int | None] = mapped_column(ForeignKey("cloud_launches.id"))
    source: Mapped[str] = mapped_column(String(32))
    user_name: Mapped[str | None] = mapped_column(String(128))
    team_name: Mapped[str | None] = mapped_column(String(128))
    cloud: Mapped[str] = mapped_column(String(64))
    region: Mapped[str | None] = mapped_column(String(64))
    project: Mapped[str | None] = mapped_column(String(128))
    gpu_type: Mapped[str | None] = mapped_column(String(64))
    period_start: Mapped[datetime] = mapped_column(UtcTime)
    period_end: Mapped[datetime] = mapped_column(UtcTime)
    gpu_hours: Mapped[float] = mapped_column(Float)
    amount_micros: Mapped[int] = mapped_column(BigInteger)
    currency: Mapped[str] = mapped_column(String(3))
    #: Which GPU-type group of a run the entry meters (migration 0008).
    part: Mapped[int] = mapped_column(Integer, server_default="0")


class CostRollupRow(Base):
    __tablename__ = "cost_rollups"
    __table_args__ = (Index("ix_cost_rollups_key", "day", "job_id", "source"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    day: Mapped[date] = mapped_column(Date)
    job_id: Mapped[str] = mapped_column(ForeignKey("jobs.id"))
    source: Mapped[str] = mapped_column(String(32))
    user_name: Mapped[str | None] = mapped_column(String(128))
    team_name: Mapped[str | None] = mapped_column(String(128))
    cloud: Mapped[str] = mapped_column(String(64))
    region: Mapped[str | None] = mapped_column(String(64))
    project: Mapped[str | None] = mapped_column(String(128))
    gpu_type: Mapped[str | None] = mapped_column(String(64))
    currency: Mapped[str] = mapped_column(String(3))
    amount_micros: Mapped[int] = mapped_column(BigInteger)
    gpu_hours: Mapped[float] = mapped_column(Float)
    entries: Mapped[int] = mapped_column(Integer)


class ModelVersionRow(Base):
    __tablename__ = "model_versions"
    __table_args__ = (UniqueConstraint("name", "version", name="uq_model_versions_name"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(String(128))
    version: Mapped[str] = mapped_column(String(64))
    artifact_uri: Mapped[str | None] = mapped_column(String(1024))
    metrics: Mapped[dict[str, Any]] = mapped_column(JSON)
    trained_on: Mapped[int] = mapped_column(Integer)
    active: Mapped[bool] = mapped_column(Boolean)
    created_at: Mapped[datetime] = mapped_column(UtcTime)


class PredictionRow(Base):
    __tablename__ = "predictions"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    job_id: Mapped[str] = mapped_column(ForeignKey("jobs.id"), index=True)
    model_version_id: Mapped[int | None] = mapped_column(ForeignKey("model_versions.id"))
    source: Mapped[str] = mapped_column(String(32))
    value: Mapped[float] = mapped_column(Float)
    low: Mapped[float] = mapped_column(Float)
    high: Mapped[float] = mapped_column(Float)
    quantiles: Mapped[dict[str, float]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(UtcTime)


class LeaderTermRow(Base):
    __tablename__ = "leader_terms"

    name: Mapped[str] = mapped_column(String(128), primary_key=True)
    token: Mapped[int] = mapped_column(BigInteger)
    holder: Mapped[str] = mapped_column(String(256))
    acquired_at: Mapped[datetime] = mapped_column(UtcTime)
    #: ``host:state directory`` of the local backends the term's leader runs jobs in
    #: (migration 0012; NULL: none, see ``controller/locality.py``)
    local_state: Mapped[str | None] = mapped_column(String(1024))


class PolicySettingRow(Base):
    """Policy settings applied at run time (``starburst tune --apply``): append-only, so the
    table is also the audit log; the newest row is in force."""

    __tablename__ = "policy_settings"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    created_at: Mapped[datetime] = mapped_column(UtcTime)
    actor: Mapped[str] = mapped_column(String(128))
    policy: Mapped[str] = mapped_column(String(16))
    budget: Mapped[float | None] = mapped_column(Float)
    coefficient: Mapped[float | None] = mapped_column(Float)
    out_of_order: Mapped[bool] = mapped_column(Boolean)
    #: the runtime estimate budgets use (``core.estimates``); NULL before revision 0013: p50
    estimate: Mapped[str | None] = mapped_column(String(8))
    reason: Mapped[str] = mapped_column(Text)
    evidence: Mapped[dict[str, Any]] = mapped_column(JSON)


class ControllerStateRow(Base):
    """What the controller last saw and ran, for tools that replay its history: the
    cluster's shape (``cluster_shape``) and its scheduler configuration (``scheduler``)."""

    __tablename__ = "controller_state"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[dict[str, Any]] = mapped_column(JSON)
    updated_at: Mapped[datetime] = mapped_column(UtcTime)
