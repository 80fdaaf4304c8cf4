"""Decisions the scheduling pass returns, each with the reason a person will read.

The reason is what ``starburst explain`` prints and what the Kubernetes Event says. Decisions
are values: applying them is the job of the simulator or the controller, through the ports.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from starburst.core.capacity import Placement
from starburst.core.job import Job


@dataclass(frozen=True, slots=True)
class Start:
    """Start the job on-prem on these nodes."""

    job: Job = field(compare=False)
    placement: Placement
    reason: str
    job_id: str = ""

    def __post_init__(self) -> None:
        if not self.job_id:
            object.__setattr__(self, "job_id", self.job.id)


@dataclass(frozen=True, slots=True)
class Burst:
    """Run the job in the cloud now."""

    job: Job = field(compare=False)
    reason: str
    job_id: str = ""

    def __post_init__(self) -> None:
        if not self.job_id:
            object.__setattr__(self, "job_id", self.job.id)


@dataclass(frozen=True, slots=True)
class Wait:
    """Keep the job queued; it bursts at ``until`` unless it starts on-prem first."""

    job_id: str
    until: float
    reason: str


Decision = Start | Burst | Wait
