"""The ceilings on cloud $/h, checked again when a job bursts (``core.price_ceilings``): the job
ceiling (a Kubernetes Job never passed the API's check) and the team ceiling.

At submission each job is checked alone against what its team runs in the cloud then; many
queued jobs pass that way while the team runs little, and their budgets may expire
together. So each burst is checked once more, against the team's rate now plus what this
pass has already sent: a burst that would take the team above ``max_team_cloud_price`` is
*held* — the job stays queued on-prem with the reason (``explain``, the log, a Kubernetes
Event), as a job of a team over its monthly budget does.

A held job is handed to the next passes as a single-job hold (``schedule_pass``'s
``held_jobs``), so it is scheduled like any waiting job and starts on-prem if GPUs free up.
Each pass first looks at the held jobs again (``begin``): one the team's rate now leaves
room for (its cloud jobs ended), or that is no longer queued, is let go, and bursts in that
pass if it still has to.

Terms: ``check`` says why a burst must wait, or None; ``charge`` adds a launched burst's
price to its team's rate for the rest of the pass; rates are read at most once per team per
pass.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal

from starburst.controller.loop.report import backend_job
from starburst.core.errors import StarburstError
from starburst.core.job import Job
from starburst.core.lifecycle import JobState
from starburst.core.ports import JobReads, Ledger, Quote
from starburst.core.price_ceilings import (
    JobCeilings,
    exceeds,
    held_reason,
    over_job_ceiling,
    team_cloud_rate,
)
from starburst.core.records import JobNotFound


class TeamCeiling:
    def __init__(
        self,
        jobs: JobReads,
        ledger: Ledger,
        ceiling: float | None,
        quote: Callable[[Job], Quote] | None,
        job_ceilings: JobCeilings | None = None,
    ) -> None:
        self.jobs, self.ledger, self.ceiling, self._quote = jobs, ledger, ceiling, quote
        self.job_ceilings = job_ceilings
        self._rates: dict[str, Decimal] = {}
        #: jobs held by the ceiling: job id → reason
        self.held: dict[str, str] = {}

    def begin(self) -> dict[str, str]:
        """Start a pass: look at the held jobs again; those still held, with the reason."""
        self._rates = {}
        for job_id in sorted(self.held):
            found = self._queued(job_id)
            why = self.check(*found) if found is not None else None
            if why is None:
                del self.held[job_id]
            else:
                self.held[job_id] = why
        return dict(self.held)

    def check(self, job: Job, quote: Quote) -> str | None:
        """Why ``job`` may not burst at ``quote`` now (None: it may)."""
        per_job = self.job_ceilings.of(job.team) if self.job_ceilings is not None else None
        if per_job is not None and quote.price_per_hour > per_job.price:
            shape = f"{quote.accelerators} at {quote.where}"
            return over_job_ceiling(job.team, quote.price_per_hour, shape, per_job)
        if self.ceiling is None or job.team is None:
            return None
        rate = self._rate(job.team)
        if not exceeds(rate, quote.price_per_hour, self.ceiling):
            return None
        shape = f"{quote.accelerators} at {quote.where}"
        return held_reason(job.team, rate, quote.price_per_hour, shape, self.ceiling)

    def hold(self, job_id: str, reason: str) -> None:
        self.held[job_id] = reason

    def charge(self, job: Job, quote: Quote) -> None:
        if self.ceiling is not None and job.team is not None:
            self._rates[job.team] = self._rate(job.team) + Decimal(str(quote.price_per_hour))

    def _queued(self, job_id: str) -> tuple[Job, Quote] | None:
        """A held job and its quote now; None once it is not queued, or cannot be priced."""
        if self._quote is None:
            return None
        try:
            stored = self.jobs.get(job_id)
            if stored.state is not JobState.QUEUED:
                return None
            job = backend_job(stored)
            return job, self._quote(job)
        except (JobNotFound, StarburstError):
            return None

    def _rate(self, team: str) -> Decimal:
        if team not in self._rates:
            self._rates[team] = team_cloud_rate(self.jobs, self.ledger, team)
        return self._rates[team]
