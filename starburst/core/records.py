"""The vocabulary every layer shares: the values a store takes and returns (frozen
dataclasses, never ORM rows) and the store's errors. They live in the core so the API, CLI,
controller and predictor name them without reaching into an adapter.

Jobs leave the store as ``StoredJob`` (a core ``Job`` plus its lifecycle state and
bookkeeping); everything else has its own small record. Times are seconds since the epoch
(floats, like the core's ``Clock``); money is ``Decimal`` (stored as integer micro-units).

Errors (all ``StarburstError``, so the CLI prints one line): ``JobNotFound``, ``StaleVersion``
(another writer moved the job first; re-read and decide again), ``StaleLeader`` (a fencing
token older than the current leader's), ``DuplicateJob`` (a job id that already exists).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from enum import StrEnum
from typing import Any, NamedTuple

from starburst.core.capacity import Node
from starburst.core.dependencies import Dependency
from starburst.core.errors import PermanentError, StarburstError, TransientError
from starburst.core.job import Job
from starburst.core.lifecycle import JobState
from starburst.core.setting import PolicySetting


class JobNotFound(PermanentError):
    def __init__(self, job_id: str) -> None:
        super().__init__(f"no job {job_id}")
        self.job_id = job_id


class DuplicateJob(PermanentError):
    def __init__(self, job_id: str) -> None:
        super().__init__(f"a job with id {job_id} already exists")
        self.job_id = job_id


class InvalidPage(StarburstError, ValueError):
    """A page cursor the store did not hand out (mistyped, cut short, or from another
    listing): the caller asks again from the first page or with the last ``next_cursor``."""

    def __init__(self, cursor: str) -> None:
        shown = cursor if len(cursor) <= 40 else cursor[:40] + "…"
        super().__init__(
            f"invalid page cursor {shown!r}: pass the next_cursor of the previous page, "
            "or no cursor for the first page"
        )
        self.cursor = cursor


class StaleVersion(TransientError):
    """Another writer changed the job between our read and our write."""

    def __init__(self, job_id: str, expected: int, actual: int | None) -> None:
        super().__init__(
            f"job {job_id} changed concurrently (expected version {expected}, found {actual})"
        )
        self.job_id, self.expected, self.actual = job_id, expected, actual


class StaleLeader(StarburstError):
    """A write carried a fencing token older than the current leader's: this replica lost
    leadership and must stop deciding."""

    def __init__(self, name: str, token: int, current: int) -> None:
        super().__init__(f"fencing token {token} for {name!r} is stale (current leader: {current})")
        self.token, self.current = token, current


class Role(StrEnum):
    ADMIN = "admin"
    USER = "user"
    FINANCE = "finance"


@dataclass(frozen=True, slots=True)
class JobSpec:
    """What a submission asks for. ``id`` is generated when None; ``gpus`` is the total over
    ``pods`` equal pods (``PermanentError`` if it does not divide evenly; None: not made of
    pods, any split allowed, see ``Job.pods``)."""

    gpus: int
    id: str | None = None
    name: str | None = None
    user: str | None = None
    team: str | None = None
    image: str | None = None
    command: str | None = None
    cpus: float = 0.0
    memory_mb: float = 0.0
    gpu_type: str | None = None
    declared_runtime: float | None = None
    deadline: float | None = None
    pods: int | None = None
    extra: Mapping[str, str] = field(default_factory=dict)
    #: jobs it waits for (resolved ids), and its array with the array's limit
    #: (``core.dependencies``)
    after: tuple[Dependency, ...] = ()
    array: str | None = None
    array_limit: int | None = None

    def __post_init__(self) -> None:
        if self.gpus < 0:
            raise PermanentError(f"a job cannot ask for {self.gpus} GPUs")
        if self.pods is not None and (self.pods < 1 or self.gpus % self.pods):
            raise PermanentError(
                f"a job of {self.pods} pods cannot share {self.gpus} GPUs equally between them"
            )

    @classmethod
    def from_job(cls, job: Job) -> JobSpec:
        return cls(
            id=job.id,
            gpus=job.gpus,
            pods=job.pods,
            cpus=job.cpus,
            memory_mb=job.memory_mb,
            gpu_type=job.gpu_type,
            user=job.user,
            team=job.team,
            name=job.name,
            declared_runtime=job.estimate,
            deadline=job.deadline,
            extra=dict(job.extra),
            after=job.after,
            array=job.array,
            array_limit=job.array_limit,
        )


@dataclass(frozen=True, slots=True)
class Move:
    """One job of a batch transition: why it moves, and its wait budget and predicted
    runtime if it gets them (written with the move: the admission's estimate costs no
    write of its own)."""

    job_id: str
    reason: str
    wait_budget: float | None = None
    predicted_runtime: float | None = None


@dataclass(frozen=True, slots=True)
class Amendment:
    """What ``Lifecycle.amend`` changes on one job besides its event and version (None or
    False: unchanged). ``to_state`` is checked by ``core.lifecycle``; ``hold`` sets the held
    reason (after the state change, which clears it); ``release`` clears it and restarts the
    queue time; ``extra`` replaces the job's extras; ``rebudget`` forgets the wait budget so
    the controller sets it again at admission (``core.amendments``)."""

    to_state: JobState | None = None
    hold: str | None = None
    release: bool = False
    gpus: int | None = None
    name: str | None = None
    extra: Mapping[str, str] | None = None
    rebudget: bool = False


@dataclass(frozen=True, slots=True)
class Moved:
    """What a batch transition did: the jobs as they are now, and those it could not move
    (unknown, or their state no longer allows it)."""

    moved: list[StoredJob]
    skipped: list[str]


@dataclass(frozen=True, slots=True)
class Admitted:
    """What an admission did (``Lifecycle.admit``): the ids of the jobs it queued, in the
    order given, and those it could not (unknown, named twice, or no longer submitted)."""

    admitted: list[str]
    skipped: list[str]


#: a stored job's ``version`` when created; every state change or amendment adds one
FIRST_VERSION = 1


@dataclass(frozen=True, slots=True)
class StoredJob:
    """A job as the database knows it. ``version`` starts at ``FIRST_VERSION`` and increases
    with every state change and amendment."""

    job: Job
    state: JobState
    version: int
    queued_at: float
    idempotency_key: str | None = None
    image: str | None = None
    command: str | None = None
    started_at: float | None = None
    ended_at: float | None = None
    predicted_runtime: float | None = None
    declared_runtime: float | None = None
    wait_budget: float | None = None
    ran_on: str | None = None
    #: why a submitted job is held out of the queue (``core.dependencies``), None otherwise
    held: str | None = None

    @property
    def id(self) -> str:
        return self.job.id


@dataclass(frozen=True, slots=True)
class Submission:
    """The result of ``submit``: ``created`` is False when the idempotency key was known."""

    job: StoredJob
    created: bool


#: One keyed item of a batch submission: the spec, its idempotency key and its actor.
Keyed = tuple[JobSpec, str | None, str | None]


def keyed(items: Sequence[JobSpec | Keyed], actor: str | None) -> list[Keyed]:
    """A batch's items as ``(spec, key, actor)``: a bare spec has no key; ``actor`` is the
    actor of the items that name none."""
    out: list[Keyed] = []
    for item in items:
        spec, key, who = item if isinstance(item, tuple) else (item, None, None)
        out.append((spec, key, who if who is not None else actor))
    return out


@dataclass(frozen=True, slots=True)
class QueuePage:
    """One page of the queue; ``next_cursor`` is None on the last page."""

    jobs: list[StoredJob]
    next_cursor: str | None


@dataclass(frozen=True, slots=True)
class JobEvent:
    job_id: str
    at: float
    from_state: JobState | None
    to_state: JobState
    reason: str
    actor: str
    fencing_token: int | None


@dataclass(frozen=True, slots=True)
class CloudLaunch:
    job_id: str
    name: str
    provider: str
    accelerators: str
    hourly_price: Decimal
    currency: str = "USD"
    region: str | None = None
    instance_type: str | None = None
    spot: bool = False
    request_id: str | None = None
    cloud_job_id: str | None = None
    status: str = "pending"
    launched_at: float = 0.0
    started_at: float | None = None
    ended_at: float | None = None
    id: int | None = None


@dataclass(frozen=True, slots=True)
class CostEntry:
    """Money spent on ``job_id`` over ``[start, end)``. ``source`` names the meter
    (e.g. ``"cloud"``, ``"onprem"``); the same (job, source, start) is recorded once."""

    job_id: str
    start: float
    end: float
    amount: Decimal
    cloud: str
    gpu_hours: float = 0.0
    currency: str = "USD"
    region: str | None = None
    source: str = "cloud"
    launch_id: int | None = None
    gpu_type: str | None = None  # None: the job's own GPU type


class CostTotal(NamedTuple):
    """One row of a cost report: the group's key values (e.g. ``{"team": "ml",
    "month": "2026-11"}``) and its totals in ``currency``: cloud money and cloud GPU-hours,
    the GPU-hours used on-prem, and those priced at the internal rates (showback).
    Immutable; a named tuple rather than a dataclass because a report by job builds one per
    job (100,000 of them in ``bench/store_bench.py``) and a tuple is built several times
    faster."""

    key: Mapping[str, str | None]
    currency: str
    amount: Decimal
    gpu_hours: float
    entries: int
    onprem_gpu_hours: float = 0.0
    onprem_amount: Decimal = Decimal(0)


@dataclass(frozen=True, slots=True)
class ModelVersion:
    id: int
    name: str
    version: str
    active: bool
    trained_on: int
    created_at: float
    metrics: Mapping[str, float] = field(default_factory=dict)
    artifact_uri: str | None = None


@dataclass(frozen=True, slots=True)
class Prediction:
    job_id: str
    value: float
    low: float
    high: float
    source: str
    created_at: float
    model_version_id: int | None = None
    quantiles: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class HistoryJob:
    """A finished job for training and budget calibration: the core job with its true
    ``runtime`` filled in, where it ran, its final state, and what was known of it at submit
    time beyond the core job (image, command, the user's declared runtime)."""

    job: Job
    state: JobState
    ran_on: str | None
    started_at: float
    ended_at: float
    image: str | None = None
    command: str | None = None
    declared_runtime: float | None = None


@dataclass(frozen=True, slots=True)
class User:
    name: str
    team: str | None
    email: str | None = None


@dataclass(frozen=True, slots=True)
class IssuedToken:
    """A freshly issued API token: ``secret`` is shown once and never stored."""

    id: int
    secret: str
    user: str
    role: Role


@dataclass(frozen=True, slots=True)
class TokenInfo:
    """What may be shown of an API token: never its secret (only a hash is stored). Times
    are epoch seconds; ``revoked_at`` and ``expires_at`` say whether it still works."""

    id: int
    user: str
    role: Role
    label: str | None
    created_at: float
    expires_at: float | None
    revoked_at: float | None
    last_used_at: float | None


@dataclass(frozen=True, slots=True)
class Principal:
    """Who an API token belongs to."""

    token_id: int
    user: str
    team: str | None
    role: Role


@dataclass(frozen=True, slots=True)
class TeamBudget:
    team: str
    monthly_limit: Decimal
    currency: str


# ---- what ``starburst tune`` reads and writes ------------------------------------------------
#: Names of the controller's observed state (``TuningLog.record_state``): the nodes it could
#: schedule on, and the scheduler configuration it runs.
CLUSTER_SHAPE = "cluster_shape"
SCHEDULER = "scheduler"


@dataclass(frozen=True, slots=True)
class AppliedSetting:
    """One row of the policy settings' audit log."""

    id: int
    at: float
    actor: str
    setting: PolicySetting
    reason: str
    evidence: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class CloudSpend:
    """Metered cloud money and GPU-hours of a set of jobs (one currency assumed)."""

    amount: float
    gpu_hours: float


def node_json(node: Node) -> dict[str, Any]:
    """A node as the controller's recorded cluster shape keeps it (JSON)."""
    return {
        "name": node.name,
        "gpus": node.gpus,
        "cpus": node.cpus,
        "memory_mb": node.memory_mb,
        "gpu_type": node.gpu_type,
    }


def node_from_json(value: Mapping[str, Any]) -> Node:
    return Node(
        str(value["name"]),
        int(value["gpus"]),
        float(value.get("cpus", 0.0)),
        float(value.get("memory_mb", 0.0)),
        str(value.get("gpu_type", "gpu")),
    )
