"""Decisions the scheduling pass returns, each with the reason a person will read.

The reason is what ``starburst explain`` prints and what the Kubernetes Event says. Decisions
are values: applying them is the job of the simulator or the controller, through the ports.

A pass makes a ``Start`` or a ``Burst`` per job it moves: their ``__init__`` stores each field
through its slot's setter (``slot_setters``), not the generated frozen ``__init__`` and a
``__post_init__``; they are as frozen, equal and hashed as before.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from starburst.core.capacity import Placement
from starburst.core.columns import slot_setters
from starburst.core.job import Job


@dataclass(frozen=True, slots=True, init=False)
class Start:
    """Start the job on-prem on these nodes (``job_id``: the job's, when not given)."""

    job: Job = field(compare=False)
    placement: Placement
    reason: str
    job_id: str = ""

    def __init__(self, job: Job, placement: Placement, reason: str, job_id: str = "") -> None:
        _set_start_job(self, job)
        _set_placement(self, placement)
        _set_start_reason(self, reason)
        _set_start_job_id(self, job_id or job.id)


_set_start_job, _set_placement, _set_start_reason, _set_start_job_id = slot_setters(
    Start, "job", "placement", "reason", "job_id"
)


@dataclass(frozen=True, slots=True, init=False)
class Burst:
    """Run the job in the cloud now (``job_id``: the job's, when not given)."""

    job: Job = field(compare=False)
    reason: str
    job_id: str = ""

    def __init__(self, job: Job, reason: str, job_id: str = "") -> None:
        _set_burst_job(self, job)
        _set_burst_reason(self, reason)
        _set_burst_job_id(self, job_id or job.id)


_set_burst_job, _set_burst_reason, _set_burst_job_id = slot_setters(
    Burst, "job", "reason", "job_id"
)


@dataclass(frozen=True, slots=True)
class Wait:
    """Keep the job queued; it bursts at ``until`` unless it starts on-prem first."""

    job_id: str
    until: float
    reason: str


Decision = Start | Burst | Wait
