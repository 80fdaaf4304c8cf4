"""The controller's side of dependencies and array throttles (``core.dependencies``).

Before admission, each pass sends the *gated* submitted jobs (with dependencies, or in an
array with a limit) through ``core.dependencies.gate`` — the function the simulator calls
too — with what the store says: the states of the jobs they wait for, and the slots their
arrays have taken (elements queued, bursting or running). Then:
- *eligible*: admitted in this pass like any submission; a job let in after a hold enters
  the queue now (the store re-stamps its ``queued_at``), so its wait budget starts now;
- *never satisfied*: cancelled, with the reason;
- *held*: stays ``submitted`` with the reason stored for ``status``, ``explain`` and
  ``jobs`` (shown as ``held``), and is looked at again on the next pass.

A job its owner held (``core.amendments``) is left alone until released. Held jobs are
re-read every pass, at most ``limit`` of them, oldest first (an array's
elements wait in submit order, so the oldest are the ones a freed slot goes to). A pass runs
when a job ends, so a dependency's end releases its dependents on that pass.
"""

from __future__ import annotations

import logging

from starburst.core.amendments import is_user_hold
from starburst.core.dependencies import gate, is_gated
from starburst.core.lifecycle import JobState
from starburst.core.ports import JobReads, Lifecycle
from starburst.core.records import Move, StoredJob

log = logging.getLogger("starburst.controller")


class DependencyGate:
    """Lets gated submissions into the queue when ``core.dependencies.gate`` says so."""

    def __init__(self, jobs: JobReads, lifecycle: Lifecycle, actor: str, limit: int = 500) -> None:
        self.jobs, self.lifecycle, self.actor, self.limit = jobs, lifecycle, actor, limit

    def admissible(
        self, submitted: list[StoredJob], now: float, token: int | None
    ) -> list[StoredJob]:
        """Of ``submitted`` (jobs not held) and the jobs already held, those to admit now."""
        held = [  # a user's hold keeps the job out whatever its dependencies say
            s
            for s in self.jobs.queue(limit=self.limit, states=(JobState.SUBMITTED,), held=True).jobs
            if not is_user_hold(s.held)
        ]
        gated = [s for s in submitted if is_gated(s.job)] + held
        if not gated:
            return submitted
        stored = {s.id: s for s in gated}
        jobs = [s.job for s in gated]
        states = self.jobs.states_of({d.job_id for j in jobs for d in j.after})
        arrays = {j.array for j in jobs if j.array is not None and j.array_limit is not None}
        result = gate(jobs, states, self.jobs.array_in_flight(arrays))
        if result.cancelled:
            moves = [Move(job.id, reason) for job, reason in result.cancelled]
            self.lifecycle.transition_many(
                moves, JobState.CANCELLED, actor=self.actor, fencing_token=token, at=now
            )
            for job, reason in result.cancelled:
                log.info("cancelled: %s", reason, extra={"job": job.id})
        self.lifecycle.hold(
            {job.id: reason for job, reason in result.held if stored[job.id].held != reason}
        )
        let_in = {job.id for job in result.eligible}
        return [s for s in submitted if not is_gated(s.job)] + [
            stored[job_id] for job_id in stored if job_id in let_in
        ]
