"""Changing jobs in the in-memory store (``MemoryTransitions``, the ``Lifecycle`` port): state
changes, holds, estimates and placements.

Invariants, as in the SQL store: every change goes through ``core.lifecycle``'s one table,
bumps the version by one and appends one event; a job leaving ``running_onprem`` has its run
entered in the ledger in the same step; a stale fencing token changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from starburst.core.capacity import Placement
from starburst.core.lifecycle import ALLOWED, JobState, check_transition
from starburst.core.records import (
    Admitted,
    Amendment,
    JobEvent,
    Move,
    Moved,
    StaleVersion,
    StoredJob,
)

from .ledger import onprem_rows
from .tables import JobRow, MemoryDatabase

_STARTED = {JobState.RUNNING_ONPREM: "onprem", JobState.RUNNING_CLOUD: "cloud"}


class MemoryTransitions:
    """State changes, holds, estimates and placements over the shared ``MemoryDatabase``."""

    def __init__(self, db: MemoryDatabase) -> None:
        self._db = db
        self._t = db.tables
        self._lock = db.lock

    def transition(
        self,
        job_id: str,
        to_state: JobState,
        *,
        reason: str,
        actor: str,
        fencing_token: int | None = None,
        expected_version: int | None = None,
        at: float | None = None,
        wait_budget: float | None = None,
    ) -> StoredJob:
        with self._lock:
            now = self._db.now(at)
            self._db.check_fence(fencing_token)
            row = self._t.row(job_id)
            if expected_version is not None and row.version != expected_version:
                raise StaleVersion(job_id, expected_version, row.version)
            check_transition(job_id, row.state, to_state)
            self._move(row, to_state, now, reason, actor, fencing_token, wait_budget)
            return row.stored()

    def amend(
        self,
        job_id: str,
        change: Amendment,
        *,
        reason: str,
        actor: str,
        expected_version: int | None = None,
        at: float | None = None,
    ) -> StoredJob:
        with self._lock:
            now = self._db.now(at)
            row = self._t.row(job_id)
            if expected_version is not None and row.version != expected_version:
                raise StaleVersion(job_id, expected_version, row.version)
            before = row.state
            if change.to_state is not None:
                check_transition(job_id, before, change.to_state)
            self._t.unindex(row)
            if change.to_state is not None:
                _enter(row, change.to_state, now)
            else:
                row.version += 1
            if change.hold is not None:
                row.held = change.hold
            if change.release:
                row.held, row.queued_at = None, now
            if change.gpus is not None:
                row.gpus = change.gpus
            if change.name is not None:
                row.name = change.name
            if change.extra is not None:
                row.extra = dict(change.extra)
            if change.rebudget:
                row.wait_budget = None
            self._t.index(row)
            self._t.add_event(JobEvent(row.id, now, before, row.state, reason, actor, None))
            return row.stored()

    def transition_many(
        self,
        moves: Sequence[Move],
        to_state: JobState,
        *,
        actor: str,
        fencing_token: int | None = None,
        at: float | None = None,
    ) -> Moved:
        with self._lock:
            moved, skipped = self._move_each(
                moves, to_state, lambda state: to_state in ALLOWED[state], actor, fencing_token, at
            )
            return Moved([row.stored() for row in moved], skipped)

    def admit(
        self,
        moves: Sequence[Move],
        *,
        actor: str,
        fencing_token: int | None = None,
        at: float | None = None,
    ) -> Admitted:
        with self._lock:
            moved, skipped = self._move_each(
                moves,
                JobState.QUEUED,
                lambda state: state is JobState.SUBMITTED,
                actor,
                fencing_token,
                at,
            )
            return Admitted([row.id for row in moved], skipped)

    def _move_each(
        self,
        moves: Sequence[Move],
        to_state: JobState,
        may_move: Callable[[JobState], bool],
        actor: str,
        fencing_token: int | None,
        at: float | None,
    ) -> tuple[list[JobRow], list[str]]:
        """``transition_many``'s and ``admit``'s moves (under the lock): each job whose state
        ``may_move`` moves to ``to_state``; an unknown job, or one named again, is skipped."""
        now = self._db.now(at)
        self._db.check_fence(fencing_token)
        seen: set[str] = set()
        moved: list[JobRow] = []
        skipped: list[str] = []
        for m in moves:
            row = self._t.jobs.get(m.job_id) if m.job_id not in seen else None
            seen.add(m.job_id)  # a job named twice moves once
            if row is None or not may_move(row.state):
                skipped.append(m.job_id)
                continue
            self._move(row, to_state, now, m.reason, actor, fencing_token, m.wait_budget)
            if m.predicted_runtime is not None:
                row.predicted_runtime = m.predicted_runtime
            moved.append(row)
        return moved, skipped

    def claim(
        self,
        to_state: JobState,
        *,
        limit: int,
        reason: str,
        actor: str,
        from_state: JobState = JobState.QUEUED,
        fencing_token: int | None = None,
        at: float | None = None,
    ) -> list[StoredJob]:
        check_transition("(claim)", from_state, to_state)
        with self._lock:
            now = self._db.now(at)
            self._db.check_fence(fencing_token)
            head = self._t.fifo.get(from_state, [])[: max(limit, 0)]
            rows = [self._t.jobs[job_id] for _, job_id in head]
            for row in rows:
                self._move(row, to_state, now, reason, actor, fencing_token, None)
            return [row.stored() for row in rows]

    def _move(
        self,
        row: JobRow,
        to_state: JobState,
        now: float,
        reason: str,
        actor: str,
        fencing_token: int | None,
        wait_budget: float | None,
    ) -> None:
        """Apply a checked state change to ``row``: fields, FIFO index, event, ledger."""
        before = row.state
        if before is JobState.RUNNING_ONPREM and to_state is not before:
            for usage in onprem_rows(self._t, [row], now, chunk=None):  # before the change
                self._t.add_cost(usage)  # clears started_at
        self._t.unindex(row)
        _enter(row, to_state, now)
        if wait_budget is not None:
            row.wait_budget = wait_budget
        self._t.index(row)
        self._t.add_event(JobEvent(row.id, now, before, to_state, reason, actor, fencing_token))

    def hold(self, reasons: Mapping[str, str]) -> None:
        with self._lock:
            for job_id, reason in reasons.items():
                row = self._t.jobs.get(job_id)
                if row is not None and row.state is JobState.SUBMITTED:
                    row.held = reason

    def set_estimates(
        self,
        job_id: str,
        *,
        predicted_runtime: float | None = None,
        wait_budget: float | None = None,
    ) -> None:
        if predicted_runtime is None and wait_budget is None:
            return
        with self._lock:
            row = self._t.row(job_id)
            if predicted_runtime is not None:
                row.predicted_runtime = predicted_runtime
            if wait_budget is not None:
                row.wait_budget = wait_budget

    def record_placement(
        self,
        job_id: str,
        placement: Placement,
        *,
        fencing_token: int | None = None,
        at: float | None = None,
        gpu_types: Sequence[str | None] | None = None,
    ) -> int:
        with self._lock:
            self._t.row(job_id)
            self._db.check_fence(fencing_token)
            attempts = self._t.placements.setdefault(job_id, [])
            attempts.append(tuple(placement))
            kinds = list(gpu_types or ())
            self._t.placement_types[job_id] = (*kinds, *[None] * (len(placement) - len(kinds)))
            return len(attempts)


def _enter(row: JobRow, to_state: JobState, now: float) -> None:
    """The fields that change with entering ``to_state`` at ``now`` (and the version)."""
    was = row.state
    row.state, row.version = to_state, row.version + 1
    held, row.held = row.held, None  # only a submitted job is held
    if to_state in _STARTED:
        row.started_at, row.ran_on = now, _STARTED[to_state]
    elif to_state is JobState.BURSTING:
        row.ran_on = "cloud"
    elif to_state is JobState.QUEUED and was is not JobState.SUBMITTED:
        row.queued_at, row.started_at, row.ran_on = now, None, None  # Star-Wait re-arrival
    elif to_state is JobState.QUEUED and held is not None:
        row.queued_at = now  # let in after a hold: its wait budget starts now
    elif to_state.terminal:
        row.ended_at = now
        if row.started_at is not None:
            row.runtime = now - row.started_at
