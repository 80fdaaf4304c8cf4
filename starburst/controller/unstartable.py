"""Jobs a backend cannot start: failed once, with the reason, so one bad job never jams a pass.

A mixin of ``SchedulingLoop`` (``scheduling.py``). A *permanent* refusal (a ``PermanentError``
from a port: no command, a NUL byte in the env, a command too large for the kernel) and any
*unexpected* exception from a port's ``start``/``quote``/``launch`` fail the job with the
reason; transient errors are not this module's (they are retried). ``failed_to_start`` lists
the jobs failed since the last report (the metric ``starburst_unstartable_jobs`` counts them).

Log lines name the job and the error — with the stack for an unexpected one — never the
job's command or environment.
"""

from __future__ import annotations

import logging

from starburst.core.errors import PermanentError
from starburst.core.lifecycle import JobState

log = logging.getLogger("starburst.controller")


class Unstartable:
    failed_to_start: list[str]

    def _move(
        self,
        job_id: str,
        state: JobState,
        reason: str,
        token: int | None,
        at: float,
        wait_budget: float | None = None,
    ) -> bool:
        raise NotImplementedError

    def _unstartable(
        self, job_id: str, where: str, exc: Exception, token: int | None, now: float
    ) -> None:
        """Fail ``job_id``, which could not start ``where``, once with the reason."""
        if isinstance(exc, PermanentError):
            reason = f"cannot start {where}: {exc}"
            log.warning("job %s cannot start %s: %s", job_id, where, exc)
        else:
            reason = f"cannot start {where}: internal error ({type(exc).__name__})"
            log.error(
                "starting job %s %s raised %s", job_id, where, type(exc).__name__, exc_info=exc
            )
        if self._move(job_id, JobState.FAILED, reason, token, now):
            self.failed_to_start.append(job_id)
