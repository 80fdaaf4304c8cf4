"""One scheduling pass of the live controller: the store's queue through the shared core.

A pass, in the order of work of docs/scheduling.md:
1. *finish*: on-prem jobs the cluster reports ended → succeeded/failed; cloud launches that
   ended → succeeded/failed (and their final cost entries);
2. *follow the cloud*: launches that came up → running_cloud; Star-Wait jobs still running
   after the threshold are pulled back and re-queued;
3. *cancel*: work still running for jobs a user cancelled is stopped;
4. *admit*: submitted jobs get a runtime estimate and a wait budget → queued; jobs with
   dependencies or an array limit only once ``controller.loop.gating`` lets them in;
5. *decide*: ``starburst.core.cycle.schedule_pass`` — the very function the simulator calls —
   on the queue, the arrivals and the cluster snapshot;
6. *apply*: every decision is written to the store first (with the leader's fencing token),
   then carried out through the cluster or cloud port. Both ports are idempotent by job id
   (a restart re-issues the recorded intent instead of deciding again).

Invariants: a job changes state only through the store (one transition table); a deposed
leader's writes are refused by the store (``StaleLeader``) before any side effect; no port
call blocks (a cloud launch returns a handle, later passes poll it); a job a backend cannot
start (a permanent error, or any unexpected exception from the port) fails once with the
reason and the pass goes on — one bad job never jams the queue or a new leader's reconcile.

Composition: ``SchedulingLoop`` runs the pass and owns the on-prem side; it is given the
repositories it uses (``PassRecords``: a ``Store`` has them) and builds, over them and one
queue view, one ``Moves`` (every state change), one ``Unstartable`` (jobs a
backend cannot start) and, when a cloud is configured, one ``CloudFollower`` (launches,
pull-backs, metering), and hands each the fencing token of the call.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Container, Mapping, Sequence
from dataclasses import replace
from operator import attrgetter
from typing import Protocol

from starburst.controller.loop.burst_ceiling import TeamCeiling
from starburst.controller.loop.capabilities import Capabilities
from starburst.controller.loop.cloudside import CloudFollower, cloud_job
from starburst.controller.loop.gating import DependencyGate
from starburst.controller.loop.moves import ACTOR, Moves
from starburst.controller.loop.onprem_meter import OnpremMeter
from starburst.controller.loop.queue_view import QueueView, entry, read_all
from starburst.controller.loop.report import PassReport, backend_job
from starburst.controller.loop.unstartable import Unstartable
from starburst.controller.structured_logs import ids_sample
from starburst.core.capacity import Node, Placement
from starburst.core.cycle import (
    HOLD_ALL,
    NO_CLOUD,
    NO_TEAM,
    PassResult,
    SchedulerConfig,
    schedule_pass,
)
from starburst.core.decisions import Burst, Start
from starburst.core.errors import PermanentError, TransientError
from starburst.core.job import Job, QueuedJob, cloud_blocker
from starburst.core.kueue_jobs import is_kueues
from starburst.core.lifecycle import JobState
from starburst.core.ports import (
    Clock,
    Cloud,
    CloudHandle,
    Cluster,
    Estimate,
    JobReads,
    Ledger,
    Lifecycle,
    ModelRegistry,
    RuntimeEstimator,
)
from starburst.core.price_ceilings import JobCeilings
from starburst.core.queue_facts import QueueFacts
from starburst.core.records import CloudLaunch, Move, StoredJob

log = logging.getLogger("starburst.controller")


class PassRecords(Protocol):
    """The repositories a pass reads and writes (a ``Store`` has them, and more): the jobs,
    their changes, the ledger of cloud launches and costs, and the runtime models."""

    @property
    def jobs(self) -> JobReads: ...

    @property
    def lifecycle(self) -> Lifecycle: ...

    @property
    def ledger(self) -> Ledger: ...

    @property
    def models(self) -> ModelRegistry: ...


class SchedulingLoop:
    """The controller's pass over store, cluster and cloud. One instance per leader term."""

    def __init__(
        self,
        store: PassRecords,
        cluster: Cluster,
        cloud: Cloud | None,
        clock: Clock,
        config: SchedulerConfig,
        *,
        estimator: RuntimeEstimator | None = None,
        fencing_token: Callable[[], int | None] = lambda: None,
        hold: Callable[[float], dict[str, str]] = lambda now: {},
        metering_chunk_s: float = 60.0,
        admissions_per_pass: int = 500,
        capabilities: Capabilities | None = None,
        team_ceiling: float | None = None,
        job_ceilings: JobCeilings | None = None,
    ) -> None:
        self.store, self.cluster, self.clock = store, cluster, clock
        caps = capabilities or Capabilities.of(cluster, cloud)
        self._annotator, self._deleted = caps.annotator, caps.deleted
        self.config = config
        self.estimator = estimator
        self._token = fencing_token
        self._hold = hold
        self.ceiling = TeamCeiling(
            store.jobs, store.ledger, team_ceiling, cloud.quote if cloud else None, job_ceilings
        )
        self._announced: set[str] = set()
        self._pending_starts: dict[str, tuple[Placement, str]] = {}
        self._pending_resumes: set[str] = set()  # bursts a reconcile could not re-issue yet
        self.view = QueueView(store.jobs)
        self.gate = DependencyGate(store.jobs, store.lifecycle, ACTOR, admissions_per_pass)
        self.admissions_per_pass = admissions_per_pass
        moves = Moves(store.lifecycle)
        self._move = moves.move
        self.unstartable = Unstartable(moves)
        self.onprem_meter = OnpremMeter(store.ledger, metering_chunk_s)
        self.cloud_side = (
            None
            if cloud is None
            else CloudFollower(
                store.jobs,
                store.ledger,
                cloud,
                caps,
                self.view,
                moves,
                lambda: self.config.policy,
                clock=clock,
                metering_chunk_s=metering_chunk_s,
            )
        )

    # -- the pass ------------------------------------------------------------------------------
    def run_pass(self) -> PassReport:
        now = self.clock.now()
        report = PassReport(now)
        token = self._token()
        self._finish_onprem(report, token)
        self.onprem_meter.meter(now)
        self._retry_starts(token, now)
        if self.cloud_side is not None:
            self.cloud_side.follow(now, report, token)
            self._retry_resumes(now)
        queue: Sequence[QueuedJob] = self.view.ordered(now, self.config.policy, self.config.order)
        facts = self.view.facts  # (before admission adds to the view)
        self._stop_cancelled_onprem(self.view.take_cancelled(), full=self.view.reloaded)
        # a job pulled back this pass re-arrives (as in ``sim.engine``): with no budget left it
        # still starts if it fits, and bursts again only if it does not
        pulled = set(report.pulled_back)
        arrivals = self._admit(now, token, report)
        if pulled:  # (each scan below is the whole queue: skipped when it finds nothing)
            arrivals += [q for q in queue if q.id in pulled]
        if arrivals:
            arrival_ids = {a.id for a in arrivals}
            queue = [q for q in queue if q.id not in arrival_ids]
        snapshot = self.cluster.snapshot()
        capacity = snapshot.capacity
        hold = self._hold(now)
        if self.cloud_side is None:  # nothing can burst: every job waits on-prem
            hold = {**hold, HOLD_ALL: NO_CLOUD}
        over_ceiling = self.ceiling.begin()
        result = schedule_pass(
            now,
            queue,  # in order (the view's)
            arrivals,
            snapshot.capacity,
            self.config,
            hold,
            over_ceiling,
            facts,
        )
        # before the starts are carried out: a backend's snapshot may be live
        total, free = capacity.total_gpus, capacity.free_gpus
        started = sum(p.gpus for st in result.starts for p in st.placement)
        report.utilization = (total - free + started) / total if total else 0.0
        self._apply(now, result, token, report, capacity.nodes)
        report.queue_length = len(result.waiting)
        report.unstartable = self.unstartable.take()
        report.held = result.held
        self._announce_held(result.held)
        # everyone still waits (none left): the queue's kept facts tell its earliest deadline
        whole = len(result.waiting) == len(queue) + len(arrivals)
        kept = facts if whole and facts is not None and facts.queue is queue else None
        deadline = _earliest_deadline(result.waiting, hold, self.ceiling.held, kept, arrivals)
        pull_backs = self.cloud_side.pull_backs_due() if self.cloud_side is not None else []
        report.next_wakeup = min([deadline, *pull_backs])
        if report.admitted >= self.admissions_per_pass:
            report.next_wakeup = now  # more submissions wait: come back at once
        return report

    def _announce_held(self, held: list[tuple[str, str]]) -> None:
        """Say once per job why it waits past its budget: one log line per reason (a count
        and a few ids, however many jobs), and a Kubernetes Event on each Job where the
        cluster can carry one."""
        annotator = self._annotator
        fresh: dict[str, list[str]] = {}
        for job_id, reason in held:
            if job_id in self._announced:
                continue
            self._announced.add(job_id)
            fresh.setdefault(reason, []).append(job_id)
            if annotator is not None:
                stored = self.store.jobs.get(job_id)
                budget, runtime = stored.wait_budget or 0.0, stored.predicted_runtime
                self._quietly(annotator.note_waiting, job_id, budget, runtime, reason)
        for reason, ids in fresh.items():
            extra = (
                {"job": ids[0]} if len(ids) == 1 else {"jobs": len(ids), "job_ids": ids_sample(ids)}
            )
            log.info("held on-prem: %s", reason, extra=extra)
        if not held:
            self._announced.clear()

    # -- reconciliation (a new leader term) --------------------------------------------------
    def reconcile(self) -> int:
        """Re-issue every recorded intent the backends may not know about; return how many.

        Both ports are idempotent by job id: a job already running is adopted, a job whose
        start or launch was recorded but never carried out (the previous leader died in
        between) is started now — so a restart neither loses nor doubles a job.
        """
        now = self.clock.now()
        self.view.invalidate()  # a new term trusts nothing it remembered
        self._end_vanished(now)
        running = {r.job.id for r in self.cluster.snapshot().running}
        resumed = 0
        for stored in self._all(JobState.RUNNING_ONPREM):
            if stored.id not in running and not is_kueues(stored.job):  # Kueue places those
                placement = self.store.jobs.placement(stored.id)
                if self._carry_out_start(
                    stored.id, placement, "resumed by a new controller leader", self._token(), now
                ):
                    resumed += 1
        if self.cloud_side is None:
            return resumed
        for state in (JobState.BURSTING, JobState.RUNNING_CLOUD):
            for stored in self._all(state):
                resumed += self._resume_launch(stored.id, now)
        return resumed

    def _resume_launch(self, job_id: str, now: float) -> bool:
        """Re-issue a recorded burst through the cloud port (idempotent: a launch that runs
        is found, not made again). A transient refusal (the cloud side busy; every job uid
        held, until this term sees ends) is retried after the next passes' ends: failing
        the reconcile on it would let no pass ever see the ends that free it."""
        job = backend_job(self.store.jobs.get(job_id))
        launches = self.store.ledger.launches(job.id)
        active = [i for i, launch in enumerate(launches) if launch.ended_at is None]
        # the active launch's attempt; none recorded: the leader died between the launch and
        # its record, so this is the attempt after the recorded ones
        attempt = active[-1] + 1 if active else len(launches) + 1
        reason = "resumed by a new controller leader"
        try:
            handle = self._launch(job, attempt, reason, self._token(), now, recorded=launches)
        except TransientError as exc:
            log.warning("resuming %s in the cloud failed, will retry: %s", job.id, exc)
            self._pending_resumes.add(job.id)
            return False
        self._pending_resumes.discard(job.id)
        return handle is not None

    def _retry_resumes(self, now: float) -> None:
        cloud_states = (JobState.BURSTING, JobState.RUNNING_CLOUD)
        for job_id in sorted(self._pending_resumes):
            if self.store.jobs.get(job_id).state in cloud_states:
                self._resume_launch(job_id, now)
            else:
                self._pending_resumes.discard(job_id)

    def _end_vanished(self, now: float) -> None:
        """Jobs whose object in the cluster was deleted while no leader watched (a Kubernetes
        Job deleted with kubectl) end with that reason instead of starting or bursting."""
        deleted = self._deleted
        if deleted is None:
            return
        states = (JobState.SUBMITTED, JobState.QUEUED, JobState.BURSTING, JobState.RUNNING_CLOUD)
        for job_id in deleted.vanished(
            [backend_job(s) for state in states for s in self._all(state)]
        ):
            self._move(
                job_id, JobState.FAILED, "its Kubernetes Job was deleted", self._token(), now
            )

    def _all(self, state: JobState) -> list[StoredJob]:
        return read_all(self.store.jobs, state)

    # -- 1. finish -------------------------------------------------------------------------
    def _finish_onprem(self, report: PassReport, token: int | None) -> None:
        ends = list(self.cluster.ended())
        if not ends:
            return
        # a job that was not running on-prem (waiting, or burst: a deleted Kubernetes Job)
        # did not fail on-prem: its reason is the cluster's own
        onprem = {
            job_id
            for job_id, state in self.store.jobs.states_of(e.job_id for e in ends).items()
            if state is JobState.RUNNING_ONPREM
        }
        for ended in ends:
            state = JobState.SUCCEEDED if ended.succeeded else JobState.FAILED
            if ended.succeeded:
                reason = "finished on-prem"
            elif ended.job_id in onprem:
                reason = f"failed on-prem: {ended.reason}"
            else:
                reason = ended.reason
            if self._move(ended.job_id, state, reason, token, ended.at):
                report.finished.append(ended.job_id)

    # -- 3. cancel ----------------------------------------------------------------------------
    def _stop_cancelled_onprem(self, cancelled: set[str], full: bool) -> None:
        """Work still running on-prem for a job the store no longer has running is stopped:
        the jobs the change feed saw cancelled, and on a full re-read every mismatch."""
        if not cancelled and not full:
            return
        running = {r.job.id for r in self.cluster.snapshot().running}
        if not running:
            return
        if full:
            suspects = running - {s.id for s in self._all(JobState.RUNNING_ONPREM)}
        else:
            suspects = running & cancelled
        # one read for all; a job the store does not know is not Starburst's: never ours to stop
        for job_id, state in sorted(self.store.jobs.states_of(suspects).items()):
            log.info("stopping %s: it is %s", job_id, state.value)
            self.cluster.cancel(job_id)

    # -- 4. admit ------------------------------------------------------------------------------
    def _admit(self, now: float, token: int | None, report: PassReport) -> list[QueuedJob]:
        page = self.store.jobs.queue(
            limit=self.admissions_per_pass, states=(JobState.SUBMITTED,), held=False
        )
        submitted = self.gate.admissible(page.jobs, now, token)
        if not submitted:
            return []
        jobs = [_with_declaration(s) for s in submitted]
        estimates = self.estimator.estimate(jobs) if self.estimator is not None else None
        if estimates is not None:  # (each job's predicted runtime is written as it is queued)
            self._record_predictions(jobs, estimates, now)
        admitted: dict[str, tuple[QueuedJob, Move, float | None]] = {}
        for i, stored in enumerate(submitted):
            job = stored.job
            estimate = estimates[i].value if estimates is not None else None
            if estimates is not None:  # the band too: compute-expected budgets from it
                job = job.with_estimate(estimates[i].value, estimates[i].low, estimates[i].high)
            budget = self.config.policy.budget(job)
            formula = self.config.policy.formula(job)
            reason = f"queued with a {_budget_text(budget)} wait budget: {formula}"
            if (blocker := cloud_blocker(job)) is not None:
                budget, reason = math.inf, f"queued to run on-prem only: {blocker}"
            move = Move(job.id, reason, wait_budget=budget, predicted_runtime=estimate)
            # a job let in after a hold is queued now (the store re-stamps it too)
            queued_at = now if stored.held is not None else stored.queued_at
            admitted[job.id] = (QueuedJob(job, queued_at, budget), move, estimate)
        # one transaction for the whole page, which reads none of it again; a job cancelled
        # meanwhile is skipped
        result = self.store.lifecycle.admit(
            [m for _, m, _ in admitted.values()], actor=ACTOR, fencing_token=token, at=now
        )
        for job_id in result.skipped:
            log.info("skipped admitting %s: it is no longer submitted", job_id)
        annotator = self._annotator
        arrivals = []
        for job_id in result.admitted:
            queued, move, estimate = admitted[job_id]
            arrivals.append(queued)
            report.budgets.append(queued.budget)
            if annotator is not None:  # the budget and the estimate, on the Kubernetes Job
                note = annotator.note_waiting
                self._quietly(note, queued.id, queued.budget, estimate, move.reason)
            self.view.add(queued)
        report.admitted = len(arrivals)
        return arrivals

    # -- 6. apply ------------------------------------------------------------------------------
    def _apply(
        self,
        now: float,
        result: PassResult,
        token: int | None,
        report: PassReport,
        nodes: Sequence[Node],
    ) -> None:
        for start in result.starts:
            self.view.drop(start.job_id)  # started, or refused: either way not queued now
            if self._start(start, now, token, nodes):
                report.started.append(start.job_id)
        for burst in result.bursts:
            self.view.drop(burst.job_id)
            if self._burst(burst, now, token, result.held):
                report.burst.append(burst.job_id)

    def _start(self, start: Start, now: float, token: int | None, nodes: Sequence[Node]) -> bool:
        # placement first: a job the store says runs on-prem always has one to resume with;
        # with its nodes' GPU types, which its on-prem use is priced by
        kinds = [nodes[p.node].gpu_type if p.node < len(nodes) else None for p in start.placement]
        self.store.lifecycle.record_placement(
            start.job_id, start.placement, fencing_token=token, at=now, gpu_types=kinds
        )
        if not self._move(start.job_id, JobState.RUNNING_ONPREM, start.reason, token, now):
            return False
        return self._carry_out_start(start.job_id, start.placement, start.reason, token, now)

    def _carry_out_start(
        self, job_id: str, placement: Placement, reason: str, token: int | None, now: float
    ) -> bool:
        """Start through the cluster port. A permanent refusal fails the job with the reason;
        a transient one is retried on the next passes (the store already says it runs)."""
        try:
            self.cluster.start(backend_job(self.store.jobs.get(job_id)), placement, reason)
        except TransientError as exc:
            log.warning("starting %s failed, will retry: %s", job_id, exc)
            self._pending_starts[job_id] = (placement, reason)
            return True
        except Exception as exc:  # permanent, or a backend bug: fail this job, not the pass
            self._pending_starts.pop(job_id, None)
            self.unstartable.fail(job_id, "on-prem", exc, token, now)
            return False
        self._pending_starts.pop(job_id, None)
        return True

    def _retry_starts(self, token: int | None, now: float) -> None:
        for job_id, (placement, reason) in list(self._pending_starts.items()):
            if self.store.jobs.get(job_id).state is JobState.RUNNING_ONPREM:
                self._carry_out_start(job_id, placement, reason, token, now)
            else:
                self._pending_starts.pop(job_id, None)

    def _burst(
        self, burst: Burst, now: float, token: int | None, held: list[tuple[str, str]]
    ) -> bool:
        """Burst through the cloud port; a burst above the team's ceiling is held instead
        (the job stays queued, the reason goes to ``held``: ``controller.loop.burst_ceiling``)."""
        follower = self.cloud_side
        if follower is None:
            return False
        stored = self.store.jobs.get(burst.job_id)
        job = backend_job(stored)
        blocker = cloud_blocker(job)
        if blocker is not None:
            return self._refuse_burst(stored, burst, blocker, token, now)
        try:
            quote = follower.cloud.quote(job)
        except TransientError:
            raise
        except PermanentError as exc:
            if job.gpus == 0:  # a CPU-only job this cloud cannot run: it waits on-prem
                return self._refuse_burst(stored, burst, str(exc), token, now)
            self.unstartable.fail(job.id, "in the cloud", exc, token, now)
            return False
        except Exception as exc:
            self.unstartable.fail(job.id, "in the cloud", exc, token, now)
            return False
        if (over := self.ceiling.check(job, quote)) is not None:
            self.view.add(entry(stored, self.config.policy))  # still queued in the store
            self.ceiling.hold(job.id, over)
            held.append((job.id, over))
            return False
        reason = (
            f"{burst.reason}: burst to {quote.where} ({quote.accelerators}, "
            f"${quote.price_per_hour:.2f}/h)"
        )
        if not self._move(burst.job_id, JobState.BURSTING, reason, token, now):
            return False
        attempt = len(self.store.ledger.launches(job.id)) + 1
        handle = self._launch(job, attempt, reason, token, now)
        if handle is None:
            return False
        self.ceiling.charge(job, quote)
        annotator = self._annotator
        if annotator is not None:  # the Job stays suspended; say where it went and why
            price = quote.price_per_hour
            self._quietly(annotator.burst, job.id, quote.where, reason, handle.name, price)
        return True

    def _launch(
        self,
        job: Job,
        attempt: int,
        reason: str,
        token: int | None,
        now: float,
        *,
        recorded: Sequence[CloudLaunch] = (),
    ) -> CloudHandle | None:
        """The one way a job goes to the cloud, for a burst and for a resumed one alike:
        launch through the cloud port, record the launch in the ledger (unless ``recorded``
        has it: a resumed launch that runs is found, not made again), then follow it.

        A permanent refusal (or any unexpected exception from the port) fails the job and
        returns None; a ``TransientError`` propagates, with nothing recorded."""
        follower = self.cloud_side
        assert follower is not None
        try:
            handle = follower.cloud.launch(cloud_job(job, attempt), reason)
        except TransientError:
            raise
        except Exception as exc:
            self.unstartable.fail(job.id, "in the cloud", exc, token, now)
            return None
        if all(launch.name != handle.name for launch in recorded):
            follower.record_launch(job, handle, now, token)
        follower.track(job.id, handle)
        return handle

    def _refuse_burst(
        self, stored: StoredJob, burst: Burst, why: str, token: int | None, now: float
    ) -> bool:
        """A job that cannot run in the cloud (``cloud_blocker``) waits on-prem instead with
        an infinite budget (the one admission gave it), or fails with both reasons if it can
        never fit on-prem."""
        job = stored.job
        if not self.cluster.snapshot().capacity.could_ever_fit(job):
            self._move(
                job.id, JobState.FAILED, f"{burst.reason}, and it cannot burst: {why}", token, now
            )
            return False
        if stored.wait_budget == math.inf:  # queued on-prem only at admission: keep waiting
            self.view.add(QueuedJob(job, stored.queued_at, math.inf))
            return False
        reason = f"cannot burst: {why}; waits for room on-prem"
        self._move(job.id, JobState.BURSTING, burst.reason, token, now)
        if self._move(job.id, JobState.QUEUED, reason, token, now, wait_budget=math.inf):
            self.view.add(QueuedJob(job, now, math.inf))
            annotator = self._annotator
            if annotator is not None:
                note = annotator.note_waiting
                self._quietly(note, job.id, math.inf, stored.predicted_runtime, reason)
        return False

    def _record_predictions(self, jobs: list[Job], estimates: list[Estimate], now: float) -> None:
        """Every prediction is stored with its source and the model version it came from
        (the job's predicted runtime is not set here: the admission's move sets it)."""
        from starburst.predictor.store import record_as_active

        record_as_active(self.store.models, jobs, estimates, now, set_runtime=False)

    @staticmethod
    def _quietly(call: Callable[..., object], *args: object) -> None:
        """Annotations are a courtesy: a failure is logged, never fatal to the pass."""
        try:
            call(*args)
        except (TransientError, PermanentError) as exc:
            log.warning("could not annotate job %s: %s", args[0], exc)


def _earliest_deadline(
    waiting: list[QueuedJob],
    hold: Mapping[str, str],
    held_jobs: Container[str],
    kept: QueueFacts | None,
    arrivals: Sequence[QueuedJob],
) -> float:
    """When the first waiting job's budget runs out, among those that may burst then (not
    held by their team or a ceiling); inf if none. The whole queue: at C speed when nothing
    is held, or from ``kept``, the facts of the queue, when ``waiting`` is that queue and the
    ``arrivals``, every one still waiting."""
    if HOLD_ALL in hold:
        return math.inf
    if not hold and not held_jobs:
        if kept is not None:
            return min(kept.earliest_deadline(), min(map(_DEADLINE, arrivals), default=math.inf))
        return min(map(_DEADLINE, waiting), default=math.inf)
    return min(
        (
            q.deadline
            for q in waiting
            if (NO_TEAM if q.job.team is None else q.job.team) not in hold and q.id not in held_jobs
        ),
        default=math.inf,
    )


_DEADLINE = attrgetter("deadline")


def _with_declaration(stored: StoredJob) -> Job:
    """A submitted job as the estimator reads it: the user's declared runtime under
    ``declared_runtime``, the command and image under their names."""
    job = backend_job(stored)
    if stored.declared_runtime is not None:
        job = replace(job, extra={**job.extra, "declared_runtime": repr(stored.declared_runtime)})
    return job


def _budget_text(budget: float) -> str:
    from starburst.core.duration import human

    return human(budget)
