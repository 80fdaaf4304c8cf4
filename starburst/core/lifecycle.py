"""A job's lifecycle: its states and the only transitions allowed between them.

```
submitted → queued → running_onprem → succeeded | failed | cancelled
                  ↘ bursting → running_cloud → succeeded | failed | cancelled
                                running_cloud → queued        (Star-Wait pull-back)
                  bursting → queued                           (launch refused: wait on-prem)
         queued → submitted          (held or updated by its owner: admitted again later)
any non-terminal state → cancelled
```

Invariants: terminal states (succeeded, failed, cancelled) are final; every adapter and the
store enforce transitions through ``check_transition`` so there is exactly one table.
"""

from __future__ import annotations

from enum import StrEnum

from starburst.core.errors import StarburstError


class JobState(StrEnum):
    SUBMITTED = "submitted"
    QUEUED = "queued"
    RUNNING_ONPREM = "running_onprem"
    BURSTING = "bursting"
    RUNNING_CLOUD = "running_cloud"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def terminal(self) -> bool:
        return self in TERMINAL


TERMINAL = frozenset({JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED})

_ENDINGS = frozenset({JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED})

ALLOWED: dict[JobState, frozenset[JobState]] = {
    JobState.SUBMITTED: frozenset({JobState.QUEUED, JobState.CANCELLED, JobState.FAILED}),
    JobState.QUEUED: frozenset(
        {
            JobState.RUNNING_ONPREM,
            JobState.BURSTING,
            JobState.SUBMITTED,  # held or updated (``core.amendments``)
            JobState.CANCELLED,
            JobState.FAILED,
        }
    ),
    JobState.RUNNING_ONPREM: _ENDINGS,
    JobState.BURSTING: frozenset({JobState.RUNNING_CLOUD, JobState.QUEUED}) | _ENDINGS,
    JobState.RUNNING_CLOUD: frozenset({JobState.QUEUED}) | _ENDINGS,
    JobState.SUCCEEDED: frozenset(),
    JobState.FAILED: frozenset(),
    JobState.CANCELLED: frozenset(),
}


class IllegalTransition(StarburstError):
    """A state change the lifecycle does not allow (e.g. a finished job starting again)."""

    def __init__(self, job_id: str, current: JobState, wanted: JobState) -> None:
        super().__init__(f"job {job_id} cannot go from {current.value} to {wanted.value}")
        self.job_id, self.current, self.wanted = job_id, current, wanted


def check_transition(job_id: str, current: JobState, wanted: JobState) -> None:
    if wanted not in ALLOWED[current]:
        raise IllegalTransition(job_id, current, wanted)
