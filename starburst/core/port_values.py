"""The values the cluster and cloud ports carry (``core.ports``): what runs on-prem, what
ended, a snapshot of free capacity, a cloud quote, a launch's handle and status.

Kept apart from the ports' protocols so that the simulator, which builds these values but
needs none of the store's ports, imports them alone; ``core.ports`` names them too.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from enum import StrEnum

from starburst.core.capacity import CapacityIndex, Placement
from starburst.core.columns import slot_setters
from starburst.core.job import Job


@dataclass(frozen=True, slots=True, init=False)
class RunningJob:
    """A job running on-prem, where and since when (one per start: ``__init__`` stores the
    fields through their slots' setters, ``slot_setters``)."""

    job: Job
    placement: Placement
    started_at: float

    def __init__(self, job: Job, placement: Placement, started_at: float) -> None:
        _set_job(self, job)
        _set_placement(self, placement)
        _set_started_at(self, started_at)


_set_job, _set_placement, _set_started_at = slot_setters(
    RunningJob, "job", "placement", "started_at"
)


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


@dataclass(frozen=True, slots=True)
class CloudHandle:
    """Enough to find a launch again after a restart (the name is derived from the job id)."""

    job_id: str
    name: str
    request_id: str | None = None
    cloud_job_id: str | None = None
