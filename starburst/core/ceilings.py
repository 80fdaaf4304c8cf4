"""Ceilings on cloud spend rate ($/h): what a team runs in the cloud now, and the words for a
job that would take it above its ceiling.

Terms:
- *team rate*: the sum of the hourly prices of the active launches of the team's jobs now
  bursting or running in the cloud (the latest launch of each).
- *team ceiling*: ``max_team_cloud_price``. It is checked twice with the same rule: at
  submission (``starburst.api.ceilings``: a job whose own price would take the team above it
  is refused) and when a job bursts (``starburst.controller.ceiling``: jobs that passed at
  submission one by one, while the team ran little, may not burst together above it; a job
  that would waits on-prem instead, as a budget hold does).

Invariant: money is ``Decimal`` here, so rates add up exactly as the ledger does.
"""

from __future__ import annotations

from decimal import Decimal

from starburst.core.lifecycle import JobState
from starburst.core.ports import JobStore, Ledger

IN_CLOUD = (JobState.BURSTING, JobState.RUNNING_CLOUD)
_PAGE = 500


def team_cloud_rate(jobs: JobStore, ledger: Ledger, team: str) -> Decimal:
    """The team's rate now (see *team rate*) from its jobs and their launches: two reads,
    however many jobs it runs."""
    ids: set[str] = set()
    cursor: str | None = None
    while True:
        page = jobs.queue(limit=_PAGE, cursor=cursor, states=IN_CLOUD, team=team)
        ids.update(s.id for s in page.jobs)
        cursor = page.next_cursor
        if cursor is None:
            break
    if not ids:
        return Decimal(0)
    latest = {
        launch.job_id: launch for launch in ledger.launches(active=True) if launch.job_id in ids
    }
    return sum((launch.hourly_price for launch in latest.values()), Decimal(0))


def exceeds(rate: Decimal, price: float, ceiling: float) -> bool:
    """Whether a job of ``price`` $/h would take a team running ``rate`` above ``ceiling``."""
    return rate + Decimal(str(price)) > Decimal(str(ceiling))


def refused_reason(team: str, rate: Decimal, price: float, shape: str, ceiling: float) -> str:
    """Why a submission is refused (the API's 422)."""
    return (
        f"team {team} runs ${rate:,.2f}/h in the cloud now; this job (${price:,.2f}/h, "
        f"{shape}) would take it above its ceiling of ${ceiling:,.2f}/h"
    )


def held_reason(team: str, rate: Decimal, price: float, shape: str, ceiling: float) -> str:
    """Why a job whose budget is spent waits on-prem instead of bursting."""
    return (
        f"team {team} runs ${rate:,.2f}/h in the cloud; bursting this job (${price:,.2f}/h, "
        f"{shape}) would take it above its ceiling of ${ceiling:,.2f}/h, so it waits on-prem "
        "until the team's cloud jobs end or GPUs free up"
    )
