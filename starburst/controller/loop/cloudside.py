"""The cloud side of a pass: following launches, Star-Wait pull-backs and cost metering.

``CloudFollower`` is built by ``SchedulingLoop`` (``scheduling.py``) when a cloud is
configured, over the same store, queue view and job moves; the pass hands it the fencing
token of each call. It owns what only the cloud side needs: the handles of this term's
launches, the cancelled launches still draining, and the jobs already pulled back.

Invariants: a job's state moves before the launch is stopped, so a controller that dies in
between leaves a launch whose job is no longer bursting — which the next pass stops (the
general rule in ``_follow``); cost entries are fixed chunks from the launch time, so metering
again after a restart writes the same rows, which the store ignores; a launch's end — its
job's ``ended_at``, the launch's and its last cost entry's — is when the backend says it
ended, else when its end was first seen (the clock read after the poll, never the pass's
start: a pass takes time, and a run that ended during it was billed short), so the billed
time is never shorter than the run.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from decimal import Decimal

from starburst.controller.loop.capabilities import Capabilities
from starburst.controller.loop.moves import Moves
from starburst.controller.loop.queue_view import QueueView
from starburst.controller.loop.report import PassReport
from starburst.core.billing import charges
from starburst.core.errors import PermanentError, TransientError
from starburst.core.failure import OUTPUT_MARK, with_output
from starburst.core.job import Job, QueuedJob
from starburst.core.lifecycle import JobState
from starburst.core.policy import WaitPolicy
from starburst.core.ports import Clock, Cloud, CloudHandle, CloudStatus, JobReads, Ledger
from starburst.core.records import CloudLaunch, CostEntry, StoredJob
from starburst.core.star import pull_back_at, pull_back_reason
from starburst.pricing import gpu_type_in, gpus_in

log = logging.getLogger("starburst.controller")

_ENDED = {
    CloudStatus.SUCCEEDED: JobState.SUCCEEDED,
    CloudStatus.FAILED: JobState.FAILED,
    CloudStatus.CANCELLED: JobState.CANCELLED,
}


class CloudFollower:
    """Follows the cloud launches of one leader term (see the module docstring)."""

    def __init__(
        self,
        jobs: JobReads,
        ledger: Ledger,
        cloud: Cloud,
        capabilities: Capabilities,
        view: QueueView,
        moves: Moves,
        policy: Callable[[], WaitPolicy],
        *,
        clock: Clock,
        metering_chunk_s: float = 60.0,
    ) -> None:
        """``jobs`` and ``ledger``: what the follower reads and writes, the jobs and the ledger
        of their launches; ``policy``: the waiting policy in force (the controller refits it
        between passes); ``clock``: when an end is seen, for a backend that cannot date it."""
        self.jobs, self.ledger, self.cloud, self.view = jobs, ledger, cloud, view
        self._clock = clock
        self._move = moves.move
        self._policy = policy
        self._reasons, self._billing, self._ends = (
            capabilities.reasons,
            capabilities.billing,
            capabilities.ends,
        )
        self._chunk = metering_chunk_s
        self._handles: dict[str, CloudHandle] = {}
        self._draining: dict[str, CloudHandle] = {}
        self._pulled_back: set[str] = set()
        #: launch id -> the end of the last chunk this term wrote (a new term meters from the
        #: launch again: the store ignores the chunks it already has)
        self._metered: dict[int, float] = {}

    def track(self, job_id: str, handle: CloudHandle) -> None:
        """Follow ``handle`` as the job's launch of this term (it has the newest ids)."""
        self._handles[job_id] = handle

    def pull_backs_due(self) -> list[float]:
        """When the active launches are due to be pulled back (Star-Wait only)."""
        policy = self._policy()
        if policy.kind.value != "star":
            return []
        due = []
        for launch in self.ledger.launches(active=True):
            earlier = launch.job_id in self._pulled_back
            at = pull_back_at(policy, launch.launched_at, earlier)
            if at is not None:
                due.append(at)
        return due

    # -- 2. follow the cloud ---------------------------------------------------------------
    def follow(self, now: float, report: PassReport, token: int | None) -> None:
        """Poll every active launch: ends, starts, refusals, metering and pull-backs."""
        for launch in self.ledger.launches(active=True):
            self._follow(launch, now, report, token)
            report.spend_rate += float(launch.hourly_price)
        self._drain()

    def _drain(self) -> None:
        """Keep polling launches we cancelled until the backend says they are gone, so it can
        escalate a kill and reap what it ran."""
        for name, handle in list(self._draining.items()):
            try:
                done = self.cloud.poll(handle) in (*_ENDED, CloudStatus.REFUSED)
            except (TransientError, PermanentError):
                done = True
            if done:
                del self._draining[name]

    def _follow(
        self, launch: CloudLaunch, now: float, report: PassReport, token: int | None
    ) -> None:
        handle = self._handles.get(launch.job_id) or CloudHandle(
            cloud_id(launch.job_id, self._attempt_of(launch)),
            launch.name,
            launch.request_id,
            launch.cloud_job_id,
        )
        job = self.jobs.get(launch.job_id)
        if job.state not in (JobState.BURSTING, JobState.RUNNING_CLOUD):
            # cancelled by a user, pulled back, or ended before a crash cut this short
            self._stop_cloud(launch, handle, self._end_of(handle), job.state.value)
            return
        try:
            status = self.cloud.poll(handle)
        except TransientError as exc:
            log.warning("polling %s: %s (will retry)", launch.name, exc)
            return
        except PermanentError as exc:
            status = CloudStatus.FAILED
            log.warning("polling %s: %s", launch.name, exc)
        if status is CloudStatus.REFUSED:
            self._refused(job, launch, handle, now, token)
            return
        if status not in _ENDED and self._launched(handle):
            # whole chunks up to now; an ended launch is metered once, to its real end, by
            # ``_stop_cloud`` (a restarted controller learns of the end late: chunks up to its
            # own now would bill time after the end, which no later entry takes back)
            self._meter(launch, now, final=False)
        if status in _ENDED:
            end = self._end_of(handle)
            reason = (
                "finished in the cloud"
                if status is CloudStatus.SUCCEEDED
                else self._failure(handle, status)
            )
            # not before the job was seen running (a backend's end may predate that sighting)
            at = max(end, job.started_at or end)
            if self._move(launch.job_id, _ENDED[status], reason, token, at):  # state first:
                report.finished.append(launch.job_id)  # a crash next is mended by _follow
            self._stop_cloud(launch, handle, end, status.value, cancel=False)
            return
        if status is CloudStatus.RUNNING and job.state is JobState.BURSTING:
            self._move(
                launch.job_id, JobState.RUNNING_CLOUD, f"running at {launch.provider}", token, now
            )
            self.ledger.update_launch(launch.id or 0, status="running", started_at=now)
        self._maybe_pull_back(job, launch, handle, now, report, token)

    def _failure(self, handle: CloudHandle, status: CloudStatus) -> str:
        """Why a cloud run did not succeed: the backend's reason (its exit code) and, for a
        failure, the last lines of output (``starburst.core.failure``)."""
        cause = f"cloud run {status.value}"
        if self._reasons is not None:
            cause += f": {self._reasons.reason(handle)}"
        if status is not CloudStatus.FAILED or OUTPUT_MARK in cause:
            return cause
        try:
            return with_output(cause, self.cloud.logs(handle))
        except (TransientError, PermanentError) as exc:
            log.warning("reading the output of %s: %s", handle.name, exc)
            return cause

    def _refused(
        self,
        job: StoredJob,
        launch: CloudLaunch,
        handle: CloudHandle,
        now: float,
        token: int | None,
    ) -> None:
        """The cloud side could not launch (no cloud enabled, …): nothing ran, nothing is
        billed; the job waits on-prem again, its budget spent, held there while the cloud
        side says it is degraded (``CloudGate``), so it is not burst again in a loop."""
        reasons = self._reasons
        why = reasons.reason(handle) if reasons is not None else "the cloud refused the launch"
        if self._move(
            job.id,
            JobState.QUEUED,
            f"cloud launch refused: {why}; waiting on-prem",
            token,
            now,
            wait_budget=0.0,
        ):
            self.view.add(QueuedJob(job.job, now, 0.0))
        self._stop_cloud(launch, handle, launch.launched_at, "refused", cancel=False)

    def _launched(self, handle: CloudHandle) -> bool:
        """Whether the backend launched anything to bill yet (one that cannot say: yes)."""
        billing = self._billing
        try:
            return billing is None or billing.billed_launch(handle) is not None
        except (TransientError, PermanentError):
            return True

    def _attempt_of(self, launch: CloudLaunch) -> int:
        """1 for a job's first launch, 2 for the one after a Star-Wait pull-back, …"""
        ids = sorted(x.id or 0 for x in self.ledger.launches(launch.job_id))
        return ids.index(launch.id or 0) + 1 if (launch.id or 0) in ids else 1

    def _end_of(self, handle: CloudHandle) -> float:
        """When a launch ended as its backend dates it (a restarted controller learns of it
        late), else now — read after the poll that saw the end, not the pass's start."""
        ends = self._ends
        try:
            end = ends.ended_at(handle) if ends is not None else None
        except (TransientError, PermanentError):
            end = None
        return end if end is not None else self._clock.now()

    def _maybe_pull_back(
        self,
        job: StoredJob,
        launch: CloudLaunch,
        handle: CloudHandle,
        now: float,
        report: PassReport,
        token: int | None,
    ) -> None:
        policy = self._policy()
        earlier = job.id in self._pulled_back or len(self.ledger.launches(job.id)) > 1
        due = pull_back_at(policy, launch.launched_at, earlier)
        if due is None or now < due:
            return
        budget = policy.star_requeue_budget(job.job, now)
        if self.jobs.get(job.id).state is JobState.BURSTING:
            self._move(job.id, JobState.RUNNING_CLOUD, "running in the cloud", token, now)
        # state first: if the controller dies before the cancel, the next pass sees a queued
        # job with a live launch and stops it (``_follow``)
        if self._move(
            job.id, JobState.QUEUED, pull_back_reason(policy), token, now, wait_budget=budget
        ):
            self._pulled_back.add(job.id)
            report.pulled_back.append(job.id)
            self.view.add(QueuedJob(job.job, now, budget))
        self._stop_cloud(launch, handle, self._clock.now(), "pulled back")  # runs till now

    def _stop_cloud(
        self, launch: CloudLaunch, handle: CloudHandle, now: float, status: str, cancel: bool = True
    ) -> None:
        if cancel:
            try:
                self.cloud.cancel(handle)
                self._draining[handle.name] = handle
            except (TransientError, PermanentError) as exc:
                log.warning("cancelling %s: %s", launch.name, exc)
        self._meter(launch, now, final=True)
        self.ledger.update_launch(launch.id or 0, status=status, ended_at=now)
        self._handles.pop(launch.job_id, None)

    # -- cost metering -----------------------------------------------------------------------
    def _meter(self, launch: CloudLaunch, now: float, final: bool) -> None:
        """Ledger entries of a launch by the one billing rule (``core.billing.charges``):
        fixed chunks from the launch (provisioning included), one entry per chunk, so
        re-metering writes the same (job, source, start) rows, which the store ignores. Within
        a term only the chunks after the last one written are new: chunks end where the next
        begins, so metering from that end continues the launch's own sequence."""
        key = launch.id or 0
        since = self._metered.get(key, launch.launched_at)
        gpus = gpus_in(launch.accelerators)
        gpu_type = gpu_type_in(launch.accelerators)  # "2xA100:8" rents A100s
        entries = [
            CostEntry(
                launch.job_id,
                c.start,
                c.end,
                c.amount,
                launch.provider,
                gpu_hours=c.gpu_hours,
                region=launch.region,
                source="cloud",
                launch_id=launch.id,
                currency=launch.currency,
                gpu_type=gpu_type,
            )
            for c in charges(since, now, launch.hourly_price, gpus, chunk=self._chunk, final=final)
        ]
        if entries:
            self.ledger.record_costs(entries)
            self._metered[key] = entries[-1].end
        if final:
            self._metered.pop(key, None)

    def record_launch(self, job: Job, handle: CloudHandle, now: float, token: int | None) -> None:
        """Record the job's launch in the ledger: what and where it bills, from when."""
        quote = self.cloud.quote(job)
        provider, _, region = quote.where.partition(":")
        spot = quote.where.endswith(" (spot)")
        provider, region = provider.removesuffix(" (spot)"), region.removesuffix(" (spot)")
        launched_at = now
        billing = self._billing
        known = billing.billed_launch(handle) if billing is not None else None
        if known is not None:  # the backend knows when it really launched (a restart)
            launched_at = known.launched_at
        self.ledger.record_launch(
            CloudLaunch(
                job_id=job.id,
                name=handle.name,
                provider=provider,
                accelerators=quote.accelerators,
                hourly_price=Decimal(str(round(quote.price_per_hour, 6))),
                region=region or None,
                request_id=handle.request_id,
                cloud_job_id=handle.cloud_job_id,
                launched_at=launched_at,
                spot=spot,
            ),
            fencing_token=token,
        )


def cloud_id(job_id: str, attempt: int) -> str:
    """The identity a launch has in the cloud backend. Backends name launches after the job id
    (so a retry finds an earlier launch instead of launching twice); a job's later attempt
    (after a Star-Wait pull-back) must not find its own earlier, cancelled launch, so it
    carries the attempt number."""
    return job_id if attempt <= 1 else f"{job_id}~{attempt}"


def cloud_job(job: Job, attempt: int) -> Job:
    return job if attempt <= 1 else replace(job, id=cloud_id(job.id, attempt))
