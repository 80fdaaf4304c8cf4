"""Starburst as Kueue's burst policy: Kueue admits on-prem, Starburst bursts what waited too long.

For the Workloads of the queues an admin opted in (``adapters.kubernetes.kueue``), each pass:
1. *record*: a pending Workload not yet in the store is submitted and queued at once with the
   wait budget of the policy in force (the same ``WaitPolicy.budget`` the scheduling pass and
   the simulator use: Compute-Wait = c × GPUs × predicted runtime). The runtime prediction
   is recorded as for any job (``starburst explain`` shows it). The budget counts from the
   Job's creation (its ``creationTimestamp`` is the job's submit time and queue time, as for
   Starburst's own Jobs), so neither a late first look nor a controller restart moves the
   moment it bursts; the budget goes on the Job (annotations) and in Events on the Workload
   and the Job;
2. *admitted by Kueue* before the budget ran out: the job runs on-prem (``running_onprem``,
   the reason names the ClusterQueue); its Job's end ends it (succeeded or failed);
3. *budget spent* while still pending, and neither its team's cloud budget, a degraded cloud
   side (``hold``) nor a $/h price ceiling (``ceiling``) holds it, as they would hold it in
   the scheduling pass (a held job stays in Kueue's queue, where Kueue may still admit it,
   and bursts at the first look after the hold lifts): the Workload is taken out of Kueue's
   queue (``spec.active: false`` with the resourceVersion it was read at: a Workload Kueue
   admitted meanwhile stays on-prem), then the job moves to ``bursting`` and is launched
   through the cloud port; from there the controller's cloud side follows, meters and ends
   it like any burst, so ``starburst jobs``/``explain``/``costs`` show it;
4. *say so*: Starburst's condition on the Workload (``starburst.io/Burst``: Waiting,
   AdmittedOnPrem, Burst, then CloudSucceeded/CloudFailed/CloudCancelled when the cloud run
   ends, or Cancelled: cancelled in Starburst while it waited) and its mirror on the Job
   are brought in line with the store's record whenever they differ (``_reflect``), so a
   crash between a move and its condition, or Kueue's webhooks refusing one write, is
   mended on a later pass.

A followed job whose Job or Workload disappears, or whose queue stops opting in, ends
``cancelled`` with that reason; an error reading Kueue skips this pass's look, never the
scheduling pass.

Restart safety: every step is recorded in the store before the next one, and each is
idempotent. A crash after the deactivation but before the store move is found from the
Workload (inactive, with Starburst's annotation) and the burst completes; a crash after the
move but before the launch is resumed by the next leader's reconcile (``SchedulingLoop``),
which launches the recorded burst. A Workload someone else deactivated is left alone.

Jobs followed here (``is_kueues``) never enter the scheduling pass's queue, and a new leader
never re-starts them on-prem: Kueue decides on-prem placement (``QueueView``, ``reconcile``).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping
from dataclasses import replace

from starburst.adapters.kubernetes.conversion import finished, rfc3339
from starburst.adapters.kubernetes.kueue import KueueWorkload, KueueWorkloads
from starburst.controller.loop.burst_ceiling import TeamCeiling
from starburst.controller.loop.cloudside import CloudFollower, cloud_job
from starburst.controller.loop.moves import ACTOR
from starburst.controller.loop.queue_view import read_all
from starburst.controller.loop.report import backend_job
from starburst.core.cycle import HOLD_ALL, NO_TEAM
from starburst.core.duration import human
from starburst.core.errors import StarburstError
from starburst.core.failure import cause_of
from starburst.core.job import Job
from starburst.core.kueue_jobs import is_kueues
from starburst.core.lifecycle import JobState
from starburst.core.policy import WaitPolicy
from starburst.core.ports import (
    JobReads,
    Ledger,
    Lifecycle,
    ModelRegistry,
    Quote,
    RuntimeEstimator,
    Submissions,
)
from starburst.core.records import JobNotFound, JobSpec, StoredJob

log = logging.getLogger("starburst.controller.kueue")
UNFOLLOWED = (
    "no longer followed for Kueue: its Job or Workload was deleted, or its queue no longer "
    "opts in to bursting (starburst.io/burst)"
)


class KueueBurst:
    """One pass over Kueue's opted-in Workloads (see the module)."""

    def __init__(
        self,
        *,
        submissions: Submissions,
        jobs: JobReads,
        lifecycle: Lifecycle,
        ledger: Ledger,
        models: ModelRegistry,
        workloads: KueueWorkloads,
        policy: Callable[[], WaitPolicy],
        follower: Callable[[], CloudFollower | None],
        estimator: Callable[[], RuntimeEstimator | None] = lambda: None,
        hold: Callable[[float], Mapping[str, str]] = lambda now: {},
        ceiling: TeamCeiling | None = None,
    ) -> None:
        """``submissions``, ``jobs``, ``lifecycle``, ``ledger`` and ``models``: the store's
        repositories it reads and writes; ``policy``, ``follower`` and ``estimator``: the
        scheduling pass's waiting policy, cloud side and runtime estimator in force (the
        controller refits them); ``hold``: who may not burst now (team or ``NO_TEAM`` or
        ``HOLD_ALL`` → why), read only when a budget ran out; ``ceiling``: the $/h price
        ceilings (a ``TeamCeiling`` of this pass's own, its rates read afresh each pass)."""
        self.submissions, self.jobs, self.lifecycle = submissions, jobs, lifecycle
        self.ledger, self.models, self.workloads = ledger, models, workloads
        self._policy, self._follower, self._estimator = policy, follower, estimator
        self._hold, self.ceiling = hold, ceiling
        self._left_alone: set[str] = set()
        self._held: set[str] = set()
        self._burst_now: list[str] = []  # the jobs burst by the pass under way

    def run_pass(self, now: float, token: int | None) -> list[str]:
        """Look at every opted-in Workload once; the ids of the jobs burst this pass."""
        try:
            found = self.workloads.workloads()
        except StarburstError as exc:  # Kueue's trouble never stops Starburst's own queue
            log.warning("could not read Kueue's Workloads, will retry: %s", exc)
            return []
        self._end_unfollowed({w.job_id for w in found if w.job is not None}, now, token)
        if self.ceiling is not None:
            self.ceiling.begin()  # the teams' cloud rates as they are now
        self._burst_now = []
        for workload in found:
            if workload.job is None:
                continue
            try:
                self._reflect(workload, self._step(workload, now, token))
            except StarburstError as exc:  # one Workload's trouble never stops the others
                log.warning("kueue workload %s: %s", workload.name, exc)
        return self._burst_now

    def _end_unfollowed(self, seen: set[str], now: float, token: int | None) -> None:
        """A job followed here whose Job or Workload is gone, or whose queue opted out, is
        no longer Starburst's to decide: its record ends (cancelled, with the reason)."""
        for state in (JobState.QUEUED, JobState.RUNNING_ONPREM):
            for stored in read_all(self.jobs, state):
                if is_kueues(stored.job) and stored.id not in seen:
                    self._move(stored.id, JobState.CANCELLED, UNFOLLOWED, token, now)

    def _step(self, workload: KueueWorkload, now: float, token: int | None) -> StoredJob | None:
        """One look at ``workload``: the job's record as it stands after (None: not ours)."""
        try:
            stored: StoredJob | None = self.jobs.get(workload.job_id)
        except JobNotFound:
            stored = None
        if stored is None:
            if workload.state != "pending":
                return None
            stored = self._record(workload, now)
        if stored.state is JobState.SUBMITTED:  # just recorded, or a crash before queueing
            stored = self._queue(stored, workload, now, token)
        if stored.state is JobState.QUEUED:
            return self._while_queued(stored, workload, now, token)
        if stored.state is JobState.RUNNING_ONPREM and workload.job is not None:
            return self._maybe_ended(stored, workload, now, token)
        return stored

    # -- 1. record -------------------------------------------------------------------------
    def _record(self, workload: KueueWorkload, now: float) -> StoredJob:
        """Submit the Workload's Job, dated from its creation (when its budget starts)."""
        job = self.workloads.job(workload)
        created = job.submit_time if 0 < job.submit_time <= now else now
        spec = JobSpec.from_job(job)
        self.submissions.submit(spec, idempotency_key=f"kueue:{job.id}", actor="kueue", at=created)
        return self.jobs.get(job.id)

    def _queue(
        self, stored: StoredJob, workload: KueueWorkload, now: float, token: int | None
    ) -> StoredJob:
        job = self._predicted(stored, now)
        policy = self._policy()
        budget = policy.budget(job)
        reason = (
            f"queued with a {_seconds(budget)} wait budget: {policy.formula(job)}, from the "
            f"Job's creation, in Kueue's queue {workload.local_queue} (ClusterQueue "
            f"{workload.cluster_queue})"
        )
        moved = self.lifecycle.transition(
            job.id, JobState.QUEUED, reason=reason, actor=ACTOR,
            fencing_token=token, at=now, wait_budget=budget,
        )  # fmt: skip
        notes = {"starburst.io/wait-budget": _annotation(budget)}
        if job.estimate is not None:
            notes["starburst.io/predicted-runtime"] = f"{job.estimate:.0f}"
        self.workloads.note(workload, "Waiting", reason, notes)
        return moved

    def _predicted(self, stored: StoredJob, now: float) -> Job:
        """The job with its predicted runtime, recorded as the scheduling pass records its
        jobs' (``explain`` shows it): the estimator's (the user's declaration is one of its
        inputs), else the declaration itself."""
        estimator = self._estimator()
        if estimator is not None:
            job = _with_declaration(stored)
            (estimate,) = estimator.estimate([job])
            from starburst.predictor.store import record_as_active  # (imports scikit-learn)

            record_as_active(self.models, [job], [estimate], now)
            return stored.job.with_estimate(estimate.value, estimate.low, estimate.high)
        if stored.declared_runtime is not None:
            self.lifecycle.set_estimates(stored.id, predicted_runtime=stored.declared_runtime)
            return stored.job.with_estimate(stored.declared_runtime)
        return stored.job

    # -- 2 and 3: on-prem by Kueue, or burst -----------------------------------------------
    def _while_queued(
        self, stored: StoredJob, workload: KueueWorkload, now: float, token: int | None
    ) -> StoredJob:
        waited = now - stored.queued_at  # from the Job's creation (see the module)
        budget = stored.wait_budget if stored.wait_budget is not None else math.inf
        if workload.state in ("admitted", "finished"):  # finished: between two looks
            reason = (
                f"admitted on-prem by Kueue (ClusterQueue {workload.cluster_queue}) after "
                f"{_seconds(max(waited, 0.0))} of its {_seconds(budget)} wait budget"
            )
            moved = self._move(stored.id, JobState.RUNNING_ONPREM, reason, token, now)
            self.workloads.note(workload, "OnPrem", reason, {})
            if moved is not None and workload.job is not None:
                return self._maybe_ended(moved, workload, now, token)
            return moved or stored
        if workload.state == "inactive":  # someone else took it out of Kueue's queue
            if stored.id not in self._left_alone:
                self._left_alone.add(stored.id)
                log.info("kueue workload %s was deactivated by someone else", workload.name)
            return stored
        if workload.state == "burst" or (workload.state == "pending" and waited >= budget):
            return self._burst(stored, workload, waited, budget, now, token) or stored
        return stored

    def _burst(
        self,
        stored: StoredJob,
        workload: KueueWorkload,
        waited: float,
        budget: float,
        now: float,
        token: int | None,
    ) -> StoredJob | None:
        follower = self._follower()
        if follower is None:
            return None  # no cloud: it waits for Kueue
        waited_text = (
            f"waited {_seconds(waited)} of a {_seconds(budget)} budget in Kueue's queue "
            f"{workload.local_queue} (ClusterQueue {workload.cluster_queue})"
        )
        job = backend_job(stored)
        quote = follower.cloud.quote(job)
        if workload.state == "pending" and self._held_back(job, workload, now, quote):
            return None  # it waits in Kueue's queue until the hold lifts
        if workload.state == "pending" and not self.workloads.deactivate(workload, waited_text):
            return None  # it changed since it was read: the next look decides again
        reason = (
            f"{waited_text}: taken out of Kueue (Workload spec.active=false), burst to "
            f"{quote.where} ({quote.accelerators}, ${quote.price_per_hour:.2f}/h)"
        )
        moved = self._move(stored.id, JobState.BURSTING, reason, token, now)
        if moved is None:
            return None
        attempt = len(self.ledger.launches(job.id)) + 1
        handle = follower.cloud.launch(cloud_job(job, attempt), reason)
        follower.record_launch(job, handle, now, token)
        follower.track(job.id, handle)
        if self.ceiling is not None:
            self.ceiling.charge(job, quote)  # the next burst of this pass counts this one
        self._burst_now.append(job.id)
        notes = {
            "starburst.io/burst-to": quote.where,
            "starburst.io/cloud-job": handle.name,
            "starburst.io/price-per-hour": f"{quote.price_per_hour:.2f}",
        }
        self.workloads.note(workload, "Burst", reason, notes)
        return moved

    def _held_back(self, job: Job, workload: KueueWorkload, now: float, quote: Quote) -> bool:
        """Whether a hold keeps the job from bursting now (said once per controller life)."""
        held = self._hold(now)
        why = held.get(HOLD_ALL) or held.get(NO_TEAM if job.team is None else job.team)
        if why is None and self.ceiling is not None:
            why = self.ceiling.check(job, quote)
        if why is None:
            self._held.discard(job.id)
            return False
        if job.id not in self._held:
            self._held.add(job.id)
            self.workloads.note(workload, "Held", f"wait budget spent, not burst: {why}", {})
        return True

    def _maybe_ended(
        self, stored: StoredJob, workload: KueueWorkload, now: float, token: int | None
    ) -> StoredJob:
        assert workload.job is not None
        ended = finished(workload.job)
        if ended is None:
            return stored
        succeeded, _, why = ended
        state = JobState.SUCCEEDED if succeeded else JobState.FAILED
        reason = "finished on-prem (admitted by Kueue)" if succeeded else f"failed on-prem: {why}"
        return self._move(stored.id, state, reason, token, now) or stored

    def _move(
        self, job_id: str, state: JobState, reason: str, token: int | None, now: float
    ) -> StoredJob | None:
        try:
            return self.lifecycle.transition(
                job_id, state, reason=reason, actor=ACTOR, fencing_token=token, at=now
            )
        except StarburstError as exc:
            log.info("kueue: %s not moved to %s: %s", job_id, state.value, exc)
            return None

    # -- 4. say so -------------------------------------------------------------------------
    def _reflect(self, workload: KueueWorkload, stored: StoredJob | None) -> None:
        """Bring Starburst's condition on the Workload (and its mirror on the Job) in line
        with the job's record, if they differ (one write per change of decision)."""
        if stored is None:
            return
        reason = condition_reason(stored)
        if reason is None or reason == workload.condition_reason:
            return
        if reason == "Waiting" and workload.state != "pending":
            return  # deactivated by someone else, or admitted: the next look says which
        if reason == "Waiting":
            budget = stored.wait_budget if stored.wait_budget is not None else math.inf
            deadline = stored.queued_at + budget
            then = rfc3339(deadline) if math.isfinite(deadline) else "never"
            message = (
                f"waiting for Kueue's quota in {workload.local_queue} (ClusterQueue "
                f"{workload.cluster_queue}) with a {_seconds(budget)} wait budget counted "
                f"from the Job's creation: a burst to the cloud at {then} if still pending"
            )
        else:
            events = self.jobs.events(stored.id)  # the cause, never an output tail
            message = cause_of(events[-1].reason) if events else stored.state.value
        self.workloads.set_condition(workload, reason, message)


def condition_reason(stored: StoredJob) -> str | None:
    """The reason of Starburst's condition on a followed job's Workload (``REASONS`` of
    ``adapters.kubernetes.kueue``) for its record as it stands; None: nothing to say."""
    state = stored.state
    if state is JobState.QUEUED:
        return "Waiting"
    if stored.ran_on == "cloud" or state in (JobState.BURSTING, JobState.RUNNING_CLOUD):
        ended = {
            JobState.SUCCEEDED: "CloudSucceeded",
            JobState.FAILED: "CloudFailed",
            JobState.CANCELLED: "CloudCancelled",
        }
        return ended.get(state, "Burst")
    if state is JobState.RUNNING_ONPREM or stored.ran_on == "onprem":
        return "AdmittedOnPrem"
    return "Cancelled" if state is JobState.CANCELLED else None


def _with_declaration(stored: StoredJob) -> Job:
    job = backend_job(stored)
    if stored.declared_runtime is not None:
        job = replace(job, extra={**job.extra, "declared_runtime": repr(stored.declared_runtime)})
    return job


def _seconds(value: float) -> str:
    return "unlimited" if not math.isfinite(value) else human(value)


def _annotation(budget: float) -> str:
    return f"{budget:.0f}" if math.isfinite(budget) else "never"
