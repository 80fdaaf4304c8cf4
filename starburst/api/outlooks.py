"""Outlooks for one request: the facts ``core.outlook`` needs, read once and only if needed.

Every view of a job (``/v1/jobs``, ``/v1/jobs/{id}``, ``/v1/jobs/{id}/explain``,
``/v1/queue``, and so ``jobs``, ``queue``, ``status``, ``explain`` and the dashboard) takes
its "where it goes next and when" from ``Outlooks.of``, which hands ``core.outlook`` the
facts the controller's pass acts on:

- *cloud hold*: no cloud configured (``cloud: none``), or the cloud side degraded (the
  controller's readiness says why);
- *team hold*: the team's budgets this month, or the no-team budget for a job with no team
  (``core.holds.holds``, the controller's own, one read for all teams);
- *ceiling hold*: the team's $/h ceiling (``api.submit_ceilings.burst_hold``), for a job that would
  burst now;
- *shortfall*: the cluster's shape as the controller last recorded it
  (``TuningLog.cluster_shape``); unknown until a controller has recorded one.

A job that is not waiting, is held by a dependency or an array limit, or has no budget yet,
needs none of them: listing running jobs reads nothing more.
"""

from __future__ import annotations

from decimal import Decimal
from functools import cached_property

from starburst.api import submit_ceilings
from starburst.api.context import ApiContext
from starburst.controller.loop.cloudgate import held_reason
from starburst.core.capacity import CapacityIndex
from starburst.core.cycle import NO_CLOUD, NO_TEAM
from starburst.core.holds import holds as budget_holds
from starburst.core.kueue_jobs import is_kueues
from starburst.core.lifecycle import JobState
from starburst.core.outlook import Holds, Outlook, outlook
from starburst.core.records import StoredJob

_WAITING = (JobState.SUBMITTED, JobState.QUEUED)


class Outlooks:
    """The outlook of each job a request shows, at one ``now``."""

    def __init__(self, ctx: ApiContext, now: float | None = None) -> None:
        self.ctx = ctx
        self.now = ctx.clock.now() if now is None else now

    def of(self, stored: StoredJob) -> Outlook:
        if stored.state not in _WAITING or stored.held is not None or stored.wait_budget is None:
            return outlook(stored, self.now, Holds())
        team = stored.job.team
        holds = Holds(
            cloud=self._cloud,
            team=self._teams.get(NO_TEAM if team is None else team),
            ceiling=lambda: submit_ceilings.burst_hold(self.ctx, stored),
            # Kueue's quota, not our nodes, decides whether a Kueue job fits on-prem
            shortfall=(
                self._capacity.shortfall(stored.job)
                if self._capacity and not is_kueues(stored.job)
                else None
            ),
        )
        return outlook(stored, self.now, holds)

    @cached_property
    def _cloud(self) -> str | None:
        if self.ctx.settings.cloud == "none":
            return NO_CLOUD
        degraded = self.ctx.degraded() if self.ctx.degraded is not None else None
        return held_reason(degraded) if degraded else None

    @cached_property
    def _teams(self) -> dict[str, str]:
        limit = Decimal(str(self.ctx.settings.no_team_cloud_budget))
        return budget_holds(self.ctx.store.accounts, self.ctx.store.ledger, self.now, limit)

    @cached_property
    def _capacity(self) -> CapacityIndex | None:
        nodes = self.ctx.store.tuning.cluster_shape()
        return CapacityIndex(nodes) if nodes else None
