"""Jobs a backend cannot start: failed once, with the reason, so one bad job never jams a pass.

``Unstartable`` is built by ``SchedulingLoop`` (``scheduling.py``) over its job moves. A
*permanent* refusal (a ``PermanentError``
from a port: no command, a NUL byte in the env, a command too large for the kernel) and any
*unexpected* exception from a port's ``start``/``quote``/``launch`` fail the job with the
reason; transient errors are not this module's (they are retried). ``take`` hands over the
jobs failed since the last report (the metric ``starburst_unstartable_jobs`` counts them).

Log lines name the job and the error — with the stack for an unexpected one — never the
job's command or environment.
"""

from __future__ import annotations

import logging

from starburst.controller.loop.moves import Moves
from starburst.core.errors import PermanentError
from starburst.core.lifecycle import JobState

log = logging.getLogger("starburst.controller")


class Unstartable:
    """Fails jobs a backend cannot start, and remembers them until the next report."""

    def __init__(self, moves: Moves) -> None:
        self._moves = moves
        self._failed: list[str] = []  # since the last ``take`` (reconcile included)

    def take(self) -> list[str]:
        """The jobs failed since the last call."""
        failed, self._failed = self._failed, []
        return failed

    def fail(self, job_id: str, where: str, exc: Exception, token: int | None, now: float) -> None:
        """Fail ``job_id``, which could not start ``where``, once with the reason."""
        if isinstance(exc, PermanentError):
            reason = f"cannot start {where}: {exc}"
            log.warning("job %s cannot start %s: %s", job_id, where, exc)
        else:
            reason = f"cannot start {where}: internal error ({type(exc).__name__})"
            log.error(
                "starting job %s %s raised %s", job_id, where, type(exc).__name__, exc_info=exc
            )
        if self._moves.move(job_id, JobState.FAILED, reason, token, now):
            self._failed.append(job_id)
