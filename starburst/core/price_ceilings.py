"""Ceilings on cloud spend rate ($/h): one job's price, what a team runs in the cloud now, and
the words for a job that would go above either.

Terms:
- *job ceiling*: the most one job may cost per hour in the cloud. On by default: the team's
  ``team_job_cloud_price``, else ``max_job_cloud_price``, else one full node of the dearest
  GPU type in the price table (any one instance the table sells fits under it; a typo asking
  for hundreds of nodes does not). Checked at submission (``starburst.api.submit_ceilings``: refused
  with the price, the reason and the setting that allows it) and when a job bursts
  (``starburst.controller.loop.burst_ceiling``: a Kubernetes Job, which never passed the API, waits
  on-prem instead).
- *team rate*: the sum of the hourly prices of the active launches of the team's jobs now
  bursting or running in the cloud (the latest launch of each).
- *team ceiling*: ``max_team_cloud_price``. It is checked twice with the same rule: at
  submission (``starburst.api.submit_ceilings``: a job whose own price would take the team
  above it is refused) and when a job bursts (``starburst.controller.loop.burst_ceiling``:
  jobs that passed at submission one by one, while the team ran little, may not burst
  together above it; a job that would waits on-prem instead, as a budget hold does).

Invariant: money is ``Decimal`` here, so rates add up exactly as the ledger does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal

from starburst.core.lifecycle import JobState
from starburst.core.ports import JobReads, Ledger

IN_CLOUD = (JobState.BURSTING, JobState.RUNNING_CLOUD)
PER_JOB = "max_job_cloud_price"
PER_TEAM_JOB = "team_job_cloud_price"


@dataclass(frozen=True, slots=True)
class JobCeiling:
    """The job ceiling in force for one team: $/h, and the setting it comes from."""

    price: float
    source: str  # "max_job_cloud_price", "team_job_cloud_price[ml]", or the default's origin


@dataclass(frozen=True, slots=True)
class JobCeilings:
    """The job ceiling of every team (see *job ceiling*); ``default`` None: no ceiling."""

    default: JobCeiling | None
    per_team: Mapping[str, float] = field(default_factory=dict)

    def of(self, team: str | None) -> JobCeiling | None:
        if team is not None and team in self.per_team:
            return JobCeiling(self.per_team[team], f"{PER_TEAM_JOB}[{team}]")
        return self.default


def job_ceilings(
    *, setting: float | None, per_team: Mapping[str, float], dearest: tuple[float, str] | None
) -> JobCeilings:
    """The job ceilings from the settings and ``dearest`` (the price and shape of the
    dearest full node in the price table, the default when ``setting`` is unset)."""
    if setting is not None:
        default: JobCeiling | None = JobCeiling(setting, PER_JOB)
    elif dearest is not None:
        price, shape = dearest
        default = JobCeiling(price, f"{PER_JOB} unset: one {shape} node, the dearest offered")
    else:
        default = None
    return JobCeilings(default, dict(per_team))


def over_job_ceiling(team: str | None, price: float, shape: str, ceiling: JobCeiling) -> str:
    """Why a job of ``price`` $/h may not burst: the price, the ceiling and the setting that
    would allow it (one line)."""
    allow = f"{PER_TEAM_JOB}: {{{team}: {price:.2f}}}" if team is not None else PER_JOB
    return (
        f"this job would cost ${price:,.2f}/h in the cloud ({shape}), above the per-job "
        f"ceiling of ${ceiling.price:,.2f}/h ({ceiling.source}); an admin allows it with "
        f"{allow}"
    )


_PAGE = 500


def team_cloud_rate(jobs: JobReads, ledger: Ledger, team: str) -> Decimal:
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
