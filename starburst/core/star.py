"""Star-Wait: scheduling without a runtime estimate.

On first arrival a job waits 0. If it bursts and is still running the threshold L after the
burst (0.25 h in the paper; a cloud start-up counts towards it), it is pulled back: treated as
having run that stint in the cloud (and charged for it), then re-queued at burst time + L with
budget r × max(0, c × gpus − time since the original submit). If it then fits on-prem it
restarts from scratch there, even with no budget left; otherwise it bursts again for its full
runtime (a job is pulled back at most once).
"""

from __future__ import annotations

from starburst.core.job import Job, QueuedJob
from starburst.core.policy import PolicyKind, WaitPolicy


def pull_back_at(policy: WaitPolicy, burst_at: float, pulled_back_before: bool) -> float | None:
    """When a burst job is pulled back if still running then, or None if it never is."""
    if policy.kind is not PolicyKind.STAR or pulled_back_before:
        return None
    return burst_at + policy.star_threshold


def requeue(job: Job, policy: WaitPolicy, now: float) -> QueuedJob:
    """The queue entry of a job pulled back at ``now``."""
    return QueuedJob(job, now, policy.star_requeue_budget(job, now))


def pull_back_reason(policy: WaitPolicy) -> str:
    minutes = policy.star_threshold / 60
    return f"still running after {minutes:.0f}m in the cloud: pulled back to wait on-prem"
