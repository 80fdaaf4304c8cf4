"""A job's *outlook*: where it goes next and when, the one story every view tells.

``jobs``, ``queue``, ``status``, ``explain`` and the dashboard all show what ``outlook``
returns (through the API's ``starburst.api.outlooks``), so no two views can disagree about a
job. It reads the stored job and the facts the scheduling pass itself acts on:

- *held* (``StoredJob.held``): a dependency or an array limit keeps the job out of the queue;
  its wait budget starts when it enters it.
- *cloud hold*: nothing may burst now (no cloud configured, the cloud side down);
- *team hold*: the team's monthly cloud budget is spent (``core.holds``);
- *ceiling hold*: bursting now would take the team above its $/h ceiling (``core.price_ceilings``),
  asked only of a job that would burst now;
- *shortfall*: why the private cluster, even empty, could never hold the job
  (``CapacityIndex.shortfall``); None when it could, or when its shape is unknown.

The rules are the pass's (``core.cycle``): a job that never fits bursts at once, unless a
hold keeps it, and then bursts on the first pass after the hold lifts; a job past its wait
budget bursts on the next pass unless a hold keeps it, and then waits on-prem; a job within
its budget starts on-prem when GPUs free up, else bursts when its budget runs out — unless a
hold keeps it then. A held job never shows a time at which it goes to the cloud. A job
Starburst follows for Kueue (``core.kueue_jobs``) starts on-prem when Kueue admits it: Kueue's
quota, not the nodes, decides that, so its outlook says so and has no shortfall.

Invariant: ``plan`` is the same words in every view; ``summary`` (``explain``, ``status``)
is the time waited followed by the plan.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from .duration import precise
from .job import cloud_blocker
from .kueue_jobs import is_kueues
from .lifecycle import JobState
from .records import StoredJob

_WHERE = {
    JobState.RUNNING_ONPREM: "running on-prem",
    JobState.BURSTING: "launching in the cloud",
    JobState.RUNNING_CLOUD: "running in the cloud",
}
NEXT_PASS = "the cloud on the next pass"
ONPREM = "on-prem when GPUs free"
ONPREM_KUEUE = "on-prem when Kueue admits it"


@dataclass(frozen=True, slots=True)
class Outlook:
    """Where a job goes next (``plan``), the sentence ``explain`` shows (``summary``), the
    seconds left of its wait budget (None without a finite budget) and when it goes to the
    cloud (``bursts_at``, epoch seconds; None when nothing sends it there)."""

    plan: str
    summary: str
    budget_left: float | None = None
    bursts_at: float | None = None
    waited: float | None = None


@dataclass(frozen=True, slots=True)
class Holds:
    """What keeps a job from the cloud now (see the module docstring); ``ceiling`` is
    asked only of a job that would burst now."""

    cloud: str | None = None
    team: str | None = None
    ceiling: Callable[[], str | None] = lambda: None
    shortfall: str | None = None


def outlook(stored: StoredJob, now: float, holds: Holds) -> Outlook:
    """The job's outlook at ``now`` (see the module docstring)."""
    state = stored.state
    if state in _WHERE:
        return Outlook(_WHERE[state], _WHERE[state])
    if state.terminal:
        words = f"{state.value} ({stored.ran_on or 'never started'})"
        return Outlook(words, words)
    waited = max(0.0, now - stored.queued_at)
    if stored.held is not None:  # not in the queue yet: no budget runs
        plan = f"held: {stored.held}"
        return Outlook(plan, f"{plan}; its wait budget starts when it enters the queue")
    budget = stored.wait_budget
    if budget is None:
        plan = "admitted on the next pass (its wait budget is set then)"
        return Outlook(plan, f"waiting {precise(waited)}; {plan}", waited=waited)
    onprem = ONPREM_KUEUE if is_kueues(stored.job) else ONPREM
    spent = f"waiting {precise(waited)} of a {precise(budget)} budget"
    if math.isinf(budget):
        spent = f"waiting {precise(waited)}"
        blocker = cloud_blocker(stored.job)
        if holds.shortfall is not None and blocker is not None:
            never = f"it never fits on-prem ({holds.shortfall})"
            plan = f"fails on the next pass: {never} and {blocker}"
            return Outlook(plan, f"{spent}; {plan}", waited=waited)
        if holds.shortfall is None:
            plan = f"{onprem}; never bursts ({blocker or 'cluster-only policy'})"
            return Outlook(plan, f"{spent}; {plan}", waited=waited)
    left = stored.queued_at + budget - now if math.isfinite(budget) else math.inf
    shown_left = max(0.0, left) if math.isfinite(left) else None
    hold = holds.cloud or holds.team
    if holds.shortfall is not None:
        hold = hold or holds.ceiling()
        if hold is not None:
            plan = (
                f"the cloud once a hold lifts ({hold}); it never fits on-prem ({holds.shortfall})"
            )
            return Outlook(plan, f"{spent}; {plan}", shown_left, waited=waited)
        plan = f"{NEXT_PASS}: it never fits on-prem ({holds.shortfall})"
        return Outlook(plan, f"{spent}; {plan}", shown_left, now, waited)
    if left <= 0:
        hold = hold or holds.ceiling()
    if hold is not None:
        plan = f"{onprem}; held from the cloud ({hold})"
        return Outlook(plan, f"{spent}; {plan}", shown_left, waited=waited)
    if left <= 0:
        plan = f"{NEXT_PASS} (its wait budget is spent)"
        return Outlook(plan, f"{spent}; {plan}", 0.0, now, waited)
    plan = f"{onprem}, else the cloud in {precise(left)}"
    return Outlook(plan, f"{spent}; {plan}", left, stored.queued_at + budget, waited)
