"""What a pass reports, and how a stored job is handed to the backends."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from starburst.core.job import Job
from starburst.core.records import StoredJob


@dataclass(slots=True)
class PassReport:
    """What one pass did, for logs, metrics and tests."""

    at: float
    admitted: int = 0
    started: list[str] = field(default_factory=list)
    burst: list[str] = field(default_factory=list)
    finished: list[str] = field(default_factory=list)
    pulled_back: list[str] = field(default_factory=list)
    #: jobs failed because their backend could not start them (with the reason)
    unstartable: list[str] = field(default_factory=list)
    held: list[tuple[str, str]] = field(default_factory=list)
    queue_length: int = 0
    budgets: list[float] = field(default_factory=list)  # wait budgets given at admission
    utilization: float = 0.0  # busy share of on-prem GPUs after the pass
    spend_rate: float = 0.0  # $/h of the cloud launches still running
    #: the next instant a pass must run even if nothing happens: a budget expiry or a
    #: Star-Wait pull-back
    next_wakeup: float = math.inf


def backend_job(stored: StoredJob) -> Job:
    """The job as the backends need it: command and image travel in ``extra``."""
    extra = dict(stored.job.extra)
    if stored.command is not None:
        extra.setdefault("command", stored.command)
    if stored.image is not None:
        extra.setdefault("image", stored.image)
    return replace(stored.job, extra=extra)
