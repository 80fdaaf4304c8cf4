"""``/v1/queue``: the waiting line, redacted, for "why am I waiting" with context.

Invariants:
- Any authenticated caller may read it; a user's view ends at their own last waiting job
  (what is ahead of them), finance and admins see it whole; ``all`` shows anyone the whole
  line and the running jobs (Slurm's ``squeue``), so GPUs busy with others' work are never
  unexplained. Other users' entries are
  redacted (``starburst.api.schemas.queue``): ids, sizes and budgets, never commands or env.
- Positions count every job in the line, so a user's position is the same number an admin
  sees. A *held* job (waiting for a dependency or an array slot) is not in the line yet: it
  has no position and holds none, and comes after the line — the caller's own held jobs
  (all of them for finance and admins), so ``starburst queue`` and ``starburst jobs`` show
  the same jobs the same way.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Annotated

from fastapi import APIRouter, Query

from starburst.api.deps import CallerDep, ContextDep, is_privileged
from starburst.api.outlooks import Outlooks
from starburst.api.schemas.jobs import when
from starburst.api.schemas.queue import QueueEntry, QueueView, RunningEntry
from starburst.core.lifecycle import JobState
from starburst.core.outlook import Outlook
from starburst.core.ports import JobReads
from starburst.core.records import Principal, StoredJob

router = APIRouter(prefix="/v1/queue", tags=["jobs"])

WAITING = (JobState.SUBMITTED, JobState.QUEUED)
RUNNING = (JobState.RUNNING_ONPREM, JobState.BURSTING, JobState.RUNNING_CLOUD)
_PAGE = 1000


def seen_by(stored: StoredJob, caller: Principal) -> tuple[bool, str | None, str | None]:
    """(mine, user, name) of another user's job as ``caller`` may see it: owner and name
    only for its owner and the privileged roles; never its command."""
    mine = stored.job.user == caller.user
    shown = mine or is_privileged(caller)
    return mine, stored.job.user if shown else None, stored.job.name if shown else None


def entry(stored: StoredJob, position: int | None, caller: Principal, seen: Outlook) -> QueueEntry:
    mine, user, name = seen_by(stored, caller)
    budget = stored.wait_budget
    finite = budget is not None and math.isfinite(budget)
    return QueueEntry(
        position=position,
        id=stored.id,
        mine=mine,
        user=user,
        name=name,
        state=stored.state,
        gpus=stored.job.gpus,
        gpu_type=stored.job.gpu_type,
        queued_at=datetime.fromtimestamp(stored.queued_at, UTC),
        waited_s=seen.waited if seen.waited is not None else 0.0,
        wait_budget_s=budget if finite else None,
        never_bursts=budget is not None and not finite,
        budget_left_s=seen.budget_left,
        budget_expires_at=when(stored.queued_at + budget)
        if budget is not None and finite
        else None,
        plan=seen.plan,
        bursts_at=when(seen.bursts_at),
        held=stored.held,
    )


def _running(stored: StoredJob, caller: Principal, now: float) -> RunningEntry:
    mine, user, name = seen_by(stored, caller)
    started = stored.started_at
    return RunningEntry(
        id=stored.id,
        mine=mine,
        user=user,
        name=name,
        state=stored.state,
        gpus=stored.job.gpus,
        gpu_type=stored.job.gpu_type,
        started_at=when(started),
        elapsed_s=max(0.0, now - started) if started is not None else None,
    )


def read_jobs(
    store: JobReads,
    *,
    states: tuple[JobState, ...],
    limit: int | None,
    user: str | None = None,
    held: bool | None = None,
    through: str | None = None,
) -> list[StoredJob]:
    """Jobs in queue order, filtered in the store, at most ``limit`` (None: all), ending
    with job ``through`` when it is met."""
    jobs: list[StoredJob] = []
    cursor: str | None = None
    while limit is None or len(jobs) < limit:
        size = _PAGE if limit is None else min(_PAGE, limit - len(jobs))
        page = store.queue(limit=size, cursor=cursor, states=states, user=user, held=held)
        for stored in page.jobs:
            jobs.append(stored)
            if stored.id == through:
                return jobs
        cursor = page.next_cursor
        if cursor is None:
            break
    return jobs


@router.get("", response_model=QueueView)
def queue(
    caller: CallerDep,
    ctx: ContextDep,
    limit: Annotated[int, Query(ge=1, le=100_000)] = 10_000,
    all_: Annotated[
        bool,
        Query(
            alias="all",
            description="The whole line for everyone, and the running jobs (Slurm's squeue).",
        ),
    ] = False,
) -> QueueView:
    """Waiting jobs in queue order with their position, budget left and plan.

    Filtered in the store: a caller's answer costs what it shows (the line up to their own
    last job, at most ``limit`` entries, and their held jobs), never everyone's backlog —
    unless ``all`` asks for the whole line and what runs."""
    now = ctx.clock.now()
    jobs = ctx.store.jobs
    held_total = jobs.held_count()
    total = jobs.count(JobState.QUEUED) + jobs.count(JobState.SUBMITTED) - held_total
    running = None
    if all_:
        started = read_jobs(jobs, states=RUNNING, limit=limit)
        started.sort(key=lambda s: (s.started_at or s.queued_at, s.id))
        running = [_running(s, caller, now) for s in started]
    if is_privileged(caller) or all_:
        shown = read_jobs(jobs, states=WAITING, held=False, limit=limit)
        if is_privileged(caller):
            held = read_jobs(
                jobs, states=(JobState.SUBMITTED,), held=True, limit=limit - len(shown)
            )
            held_count = held_total
        else:
            held = read_jobs(
                jobs, states=(JobState.SUBMITTED,), held=True, user=caller.user, limit=None
            )
            held_count = len(held)
    else:
        own = read_jobs(jobs, states=WAITING, held=False, user=caller.user, limit=None)
        last = own[-1].id if own else None
        shown = (
            read_jobs(jobs, states=WAITING, held=False, limit=limit, through=last) if own else []
        )
        held = read_jobs(
            jobs, states=(JobState.SUBMITTED,), held=True, user=caller.user, limit=None
        )
        held_count = len(held)
    outlooks = Outlooks(ctx, now)
    entries = [entry(s, i + 1, caller, outlooks.of(s)) for i, s in enumerate(shown)]
    entries += [entry(s, None, caller, outlooks.of(s)) for s in held]
    return QueueView(total=total, held=held_count, jobs=entries[:limit], running=running)
