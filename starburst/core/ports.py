"""Ports: the interfaces through which the decision core meets the world.

The simulator's in-memory implementations (``starburst.sim``) and the live adapters
(``starburst.adapters.*``) implement the same protocols, and one contract test suite runs
against both. Rules: nothing but the ``Clock`` reads time; no port call blocks the scheduling
loop (a cloud launch returns a handle at once and later passes poll it); adapters raise
``TransientError`` or ``PermanentError`` (``starburst.core.errors``), never SDK exceptions.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol, runtime_checkable

from starburst.core.capacity import CapacityIndex, Placement
from starburst.core.job import Job
from starburst.core.lifecycle import JobState


class Clock(Protocol):
    def now(self) -> float:
        """Seconds since the epoch (live) or since the trace started (simulated)."""
        ...


@dataclass(frozen=True, slots=True)
class RunningJob:
    job: Job
    placement: Placement
    started_at: float


@dataclass(frozen=True, slots=True)
class ClusterSnapshot:
    """Free capacity and what runs on-prem, as seen at ``taken_at``."""

    capacity: CapacityIndex
    running: Collection[RunningJob]
    taken_at: float


@dataclass(frozen=True, slots=True)
class JobEnded:
    """A job finished on-prem (``succeeded`` False: failed, with ``reason``)."""

    job_id: str
    at: float
    succeeded: bool
    reason: str = ""


class Cluster(Protocol):
    """The private cluster: Kubernetes, the local executor or the simulator's cluster."""

    def snapshot(self) -> ClusterSnapshot: ...

    def start(self, job: Job, placement: Placement, reason: str) -> None:
        """Start the job on these nodes. Idempotent: starting a started job does nothing."""
        ...

    def cancel(self, job_id: str) -> None: ...

    def ended(self) -> Sequence[JobEnded]:
        """Jobs that ended since the last call."""
        ...


@dataclass(frozen=True, slots=True)
class Quote:
    """What running a job in the cloud would cost per hour, and where."""

    price_per_hour: float
    where: str
    accelerators: str
    emulated: bool = False


class CloudStatus(StrEnum):
    PENDING = "pending"
    PROVISIONING = "provisioning"
    RUNNING = "running"
    RECOVERING = "recovering"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"
    # The cloud side (not the job) cannot launch, e.g. no cloud is enabled: nothing ran,
    # nothing is billed, and the job waits on-prem instead.
    REFUSED = "refused"


@runtime_checkable
class CloudHealth(Protocol):
    """A cloud that can say why it cannot burst right now (None: it can)."""

    def degraded(self) -> str | None: ...


@dataclass(frozen=True, slots=True)
class CloudHandle:
    """Enough to find a launch again after a restart (the name is derived from the job id)."""

    job_id: str
    name: str
    request_id: str | None = None
    cloud_job_id: str | None = None


class Cloud(Protocol):
    """Rented GPUs: SkyPilot, the emulated cloud or the simulator's cloud."""

    def quote(self, job: Job) -> Quote: ...

    def launch(self, job: Job, reason: str) -> CloudHandle:
        """Start a launch and return at once; ``poll`` follows it."""
        ...

    def poll(self, handle: CloudHandle) -> CloudStatus: ...

    def cancel(self, handle: CloudHandle) -> None: ...

    def logs(self, handle: CloudHandle) -> str: ...


@dataclass(frozen=True, slots=True)
class Estimate:
    """A runtime estimate in seconds with its band and where it came from."""

    value: float
    low: float
    high: float
    source: str


class RuntimeEstimator(Protocol):
    def estimate(self, jobs: Sequence[Job]) -> list[Estimate]: ...


@runtime_checkable
class Store(Protocol):
    """The durable record of decisions, in core terms (PostgreSQL/SQLite implement it).

    Submissions, the queue, launches and the cost ledger carry store-specific records and are
    part of the store's own typed API; what every scheduler needs is here: transitions through
    the one lifecycle table with the leader's fencing token, placements, and a change feed.
    """

    def transition(
        self,
        job_id: str,
        to_state: JobState,
        *,
        reason: str,
        actor: str,
        fencing_token: int | None = None,
        expected_version: int | None = None,
        at: float | None = None,
        wait_budget: float | None = None,
    ) -> object:
        """Move a job; raises ``IllegalTransition`` (and a stale-leader error) unchanged."""
        ...

    def record_placement(
        self,
        job_id: str,
        placement: Placement,
        *,
        fencing_token: int | None = None,
        at: float | None = None,
    ) -> int: ...

    def placement(self, job_id: str) -> Placement: ...

    def count(self, state: JobState) -> int: ...

    def last_event_id(self) -> int: ...

    def state_changes(
        self, after_id: int, limit: int = 10_000
    ) -> tuple[list[tuple[str, JobState]], int]: ...
