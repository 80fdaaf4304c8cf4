"""``/v1/queue``: the waiting line, redacted, for "why am I waiting" with context.

Invariants:
- Any authenticated caller may read it; a user's view ends at their own last waiting job
  (what is ahead of them), finance and admins see it whole. Other users' entries are
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
from starburst.api.schemas.queue import QueueEntry, QueueView
from starburst.core.lifecycle import JobState
from starburst.core.outlook import Outlook
from starburst.core.ports import JobStore
from starburst.core.records import Principal, StoredJob

router = APIRouter(prefix="/v1/queue", tags=["jobs"])

WAITING = (JobState.SUBMITTED, JobState.QUEUED)
_PAGE = 1000


def entry(stored: StoredJob, position: int | None, caller: Principal, seen: Outlook) -> QueueEntry:
    mine = stored.job.user == caller.user
    shown = mine or is_privileged(caller)
    budget = stored.wait_budget
    finite = budget is not None and math.isfinite(budget)
    return QueueEntry(
        position=position,
        id=stored.id,
        mine=mine,
        user=stored.job.user if shown else None,
        name=stored.job.name if shown else None,
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


def waiting_jobs(store: JobStore) -> list[StoredJob]:
    """Every waiting job in queue order."""
    jobs: list[StoredJob] = []
    cursor: str | None = None
    while True:
        page = store.queue(limit=_PAGE, cursor=cursor, states=WAITING)
        jobs += page.jobs
        cursor = page.next_cursor
        if cursor is None:
            return jobs


@router.get("", response_model=QueueView)
def queue(
    caller: CallerDep,
    ctx: ContextDep,
    limit: Annotated[int, Query(ge=1, le=100_000)] = 10_000,
) -> QueueView:
    """Waiting jobs in queue order with their position, budget left and plan."""
    now = ctx.clock.now()
    waiting = waiting_jobs(ctx.store.jobs)
    line = [s for s in waiting if s.held is None]
    held = [s for s in waiting if s.held is not None]
    shown = line
    if not is_privileged(caller):
        own = [i for i, s in enumerate(line) if s.job.user == caller.user]
        shown = line[: own[-1] + 1] if own else []
        held = [s for s in held if s.job.user == caller.user]
    outlooks = Outlooks(ctx, now)
    entries = [entry(s, i + 1, caller, outlooks.of(s)) for i, s in enumerate(shown)]
    entries += [entry(s, None, caller, outlooks.of(s)) for s in held]
    return QueueView(total=len(line), held=len(held), jobs=entries[:limit])
