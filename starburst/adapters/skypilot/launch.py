"""One job's cloud run as the SkyPilot adapter tracks it: its phase, option and outcome.

Terms: *phase* is where the adapter is in the launch protocol (see ``cloud.py`` for the
diagram); *status* is what ``poll`` reports (the core's ``CloudStatus``); *option* indexes the
job's cheapest-first launch options; ``launched_at`` is when billing starts (the first launch
request) and ``ended_at`` when it stops.

Invariant: a ``Launch`` is only changed by ``SkyPilotCloud``; others read it (``launch_of``).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from starburst.adapters.skypilot.task import LaunchOption, launch_name
from starburst.core.job import Job
from starburst.core.ports import CloudStatus

TERMINAL = frozenset({CloudStatus.SUCCEEDED, CloudStatus.FAILED, CloudStatus.CANCELLED})


class Phase(StrEnum):
    LOOKUP = "lookup"
    LAUNCHING = "launching"
    TRACKING = "tracking"
    WAITING = "waiting"
    ENDED = "ended"


@dataclass(slots=True)
class Launch:
    """Everything the adapter knows about one job's cloud run (read it via ``launch_of``)."""

    job: Job
    options: list[LaunchOption]
    phase: Phase
    lookup_after: int
    option: int = 0
    status: CloudStatus = CloudStatus.PENDING
    reason: str = "looking for an earlier launch"
    request_id: str | None = None
    cloud_job_id: int | None = None
    tracked_after: int = 0
    failures: int = 0
    retry_at: float = 0.0
    cancel_wanted: bool = False
    cancel_request: str | None = None
    recovery_count: int = 0
    launched_at: float | None = None
    ended_at: float | None = None

    @property
    def name(self) -> str:
        return launch_name(self.job.id, self.option)

    @property
    def current(self) -> LaunchOption:
        return self.options[min(self.option, len(self.options) - 1)]
