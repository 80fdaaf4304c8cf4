"""A job's hard time limit: ``--time-limit``, unlike ``--runtime`` (an estimate the policy
plans with), ends the job when it has run that long.

Terms: the limit is seconds of running, counted from the start on-prem (the local cluster
kills the process group; Kubernetes ends the Job through ``activeDeadlineSeconds``); in the
cloud from the launch (the emulated cloud kills it) or from the run's start (a SkyPilot task
runs its command under ``timeout``, exit code 124). It
travels in ``Job.extra[TIME_LIMIT]`` as text, as every backend's extras do.
"""

from __future__ import annotations

import math

from starburst.core.duration import precise
from starburst.core.job import Job

TIME_LIMIT = "time_limit_s"


def time_limit_of(job: Job) -> float | None:
    """The job's limit in seconds (None: no limit, or a value that is not a positive
    finite number)."""
    text = job.extra.get(TIME_LIMIT)
    try:
        limit = float(text) if text is not None else None
    except ValueError:
        return None
    return limit if limit is not None and math.isfinite(limit) and limit > 0 else None


def expired(job: Job, started_at: float, now: float) -> bool:
    limit = time_limit_of(job)
    return limit is not None and now - started_at >= limit


def reason(job: Job) -> str:
    return killed_after(time_limit_of(job) or 0.0)


def killed_after(limit: float) -> str:
    """The cause of a job ended at its limit."""
    return f"time limit {precise(limit)} reached: killed"
