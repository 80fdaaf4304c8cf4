"""The controller daemon: leadership, the periodic work, and a clean shutdown.

Periodic work runs as APScheduler jobs in one process:
- ``pass``: a scheduling pass every ``pass_interval_s``, and sooner when something happens —
  a submission through the API (``poke``), a job arriving or ending in a backend that says
  so (a ``ChangeNotifier``: the Kubernetes watches, the local backends' end watch), or the
  next budget expiry the last pass reported;
- ``recalibrate``: the waiting-budget coefficient refitted on a rolling window of recent jobs
  (Σ wait budgets = b × Σ predicted runtimes), every ``recalibrate_interval_s``;
- ``retrain``: the runtime estimator rebuilt from the store's history.
Cost metering and reconciliation happen inside every pass (see ``scheduling``).

Leadership: every pass first makes sure this replica holds the store's leader lock (a
PostgreSQL advisory lock, or a lock file for SQLite); a standby keeps trying and takes over
within one pass interval of the leader's death. Each decision carries the lock's fencing
token, so a deposed leader's writes are refused. A controller whose local jobs live in
another host or state directory than the last leader's refuses to lead while jobs are in
flight (``locality``): it would not see them, and would run them again. A database outage
is a *transient* state: the pass fails, readiness turns false with the reason, leadership is
dropped, and the next pass reconnects and re-acquires it.

An unexpected exception in a pass (a bug, not a port's translated error) is counted in
``starburst_pass_errors`` and logged with its stack; after ``DEGRADED_AFTER`` such passes in a
row ``/readyz`` reports the controller degraded until a pass succeeds. A job a backend cannot
start fails on its own (``scheduling``), so it never makes passes fail.

``start`` runs the periodic work on a background APScheduler scheduler, or on the one it is
given (its owner may pause it: passes stop and leadership is kept, as in a hung replica).
``stop`` (SIGTERM): no new passes, the running pass finishes, the lock is released.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING, Protocol

from starburst.controller import structured_logs
from starburst.controller.locality import Locality
from starburst.controller.loop.budgets import BudgetAlerts, BudgetGate
from starburst.controller.loop.capabilities import Capabilities
from starburst.controller.loop.cloudgate import CloudGate
from starburst.controller.loop.report import PassReport
from starburst.controller.loop.scheduling import SchedulingLoop
from starburst.controller.metrics import ControllerMetrics
from starburst.controller.tuning import TuningHooks
from starburst.core.cycle import SchedulerConfig
from starburst.core.errors import ConflictError, StarburstError, TransientError
from starburst.core.job import Job
from starburst.core.leadership import LeaderLock
from starburst.core.ports import Clock, Cloud, Cluster, RuntimeEstimator, Store
from starburst.core.records import JobSpec
from starburst.settings import Settings
from starburst.wallclock import WallClock

if TYPE_CHECKING:
    from apscheduler.schedulers.base import BaseScheduler

log = logging.getLogger("starburst.controller")


class SidePass(Protocol):
    """A pass the wiring adds beside the scheduling pass, run just before it while leading
    (``controller.kueue_burst.KueueBurst``: Starburst as Kueue's burst policy)."""

    def run_pass(self, now: float, token: int | None) -> list[str]: ...


#: passes in a row that fail with an unexpected error before readiness turns false
DEGRADED_AFTER = 3

#: a poke runs a pass at once, but no sooner than this after the previous pass started: a
#: burst of submissions shares the passes' fixed reads instead of each waking its own
COALESCE_S = 0.05
#: nor sooner than this many times the previous pass's duration after it started: passes
#: woken by pokes take at most half of the process's time, the API (same interpreter lock)
#: the rest. Under a burst of REST submissions passes ran back to back, and the API thread
#: waited for the lock behind them.
DUTY_SPAN = 2.0


@dataclass(frozen=True, slots=True)
class Health:
    ready: bool
    detail: str
    degraded: str | None = None  # ready, but the cloud side cannot burst (why)


class Controller:
    """One replica of the controller, wired by ``starburst.controller.wiring``
    (``wire_controller``), which is what builds its store, lock and locality."""

    def __init__(
        self,
        settings: Settings,
        store: Store,
        cluster: Cluster,
        cloud: Cloud | None,
        *,
        lock: LeaderLock,
        locality: Locality,
        clock: Clock | None = None,
        estimator: RuntimeEstimator | None = None,
        metrics: ControllerMetrics | None = None,
        capabilities: Capabilities | None = None,
        history: Callable[[], Sequence[Job]] | None = None,
    ) -> None:
        """``store``: the repositories (the ports) the controller and its pass use;
        ``lock``: the leader lock whose fencing tokens guard its writes; ``locality``: where
        its local jobs live; ``capabilities``: what the backends can do beyond their ports,
        as the wiring resolved them (None: resolved here from ``cluster`` and ``cloud``);
        ``history``: a reader of the training history the retraining child can call on its
        own (None: the child is handed the history read here)."""
        caps = capabilities or Capabilities.of(cluster, cloud)
        self.capabilities = caps
        self.tuning = TuningHooks(store.tuning)
        self.settings = settings = self.tuning.settings_in_force(settings)
        self.store = store
        self.cluster, self.cloud = cluster, cloud
        self.clock = clock or WallClock()
        self.metrics = metrics or ControllerMetrics.create()
        self._lock = lock
        self.locality = locality
        self._history = history
        self._refusal: str | None = None  # the last refusal to lead, logged once
        self.config: SchedulerConfig = settings.scheduler_config()
        #: the finished jobs the coefficient was last fitted on (0: the prior)
        self._fitted_on = 0
        alerts = BudgetAlerts(
            store.accounts,
            store.ledger,
            settings.budget_alerts,
            metrics=self.metrics,
            webhook=settings.budget_webhook,
            webhook_allow=settings.budget_webhook_allow,
            notes=caps.budget_notes,
        )
        self._budgets, self.cloud_gate = (
            BudgetGate(
                store.accounts,
                store.ledger,
                no_team_limit=Decimal(str(settings.no_team_cloud_budget)),
                alerts=alerts,
            ),
            CloudGate(caps.health),
        )
        self.loop = SchedulingLoop(
            store,
            cluster,
            cloud,
            self.clock,
            self.config,
            estimator=estimator,
            fencing_token=lambda: self._lock.token,
            hold=self.holds,
            capabilities=caps,
            team_ceiling=settings.max_team_cloud_price,
            job_ceilings=settings.job_ceilings(settings.price_list()) if cloud else None,
        )
        self.metrics.follow_ledger(store.ledger)
        for notifier in caps.notifiers:  # backends that can say when a job ends or arrives
            notifier.subscribe(self.poke)
        self._health = Health(False, "starting")
        self._scheduler: BaseScheduler | None = None
        self._pass_lock = threading.Lock()
        self._stopping = threading.Event()
        self._poked = threading.Event()
        self._wake_due = False  # a poke already asked for a pass that has not started yet
        self._last_start = datetime.min.replace(tzinfo=UTC)
        self._last_seconds = 0.0  # how long the last pass took
        self.last_report: PassReport | None = None
        self._failed_passes = 0  # unexpected errors in a row
        self._overruns = structured_logs.Overruns()
        #: Starburst as Kueue's burst policy (``controller.kueue_burst``), set by the wiring
        #: when the cluster serves Kueue's API; its pass runs before the scheduling pass
        self.kueue: SidePass | None = None

    def holds(self, now: float) -> dict[str, str]:
        """Who may not burst now (a team, ``NO_TEAM`` or ``HOLD_ALL`` → why): the teams'
        spent cloud budgets and the cloud side's health. Every pass that bursts reads them
        here, the scheduling pass and Kueue's alike."""
        return {**self._budgets(now), **self.cloud_gate(now)}

    # -- lifecycle -----------------------------------------------------------------------------
    def start(self, scheduler: BaseScheduler | None = None) -> None:
        """Run the periodic work on ``scheduler`` (not started yet; default: a background
        scheduler in UTC). ``stop`` shuts it down."""
        from apscheduler.schedulers.background import BackgroundScheduler

        s = self.settings
        scheduler = scheduler if scheduler is not None else BackgroundScheduler(timezone="UTC")
        # two instances: a pass woken while another runs waits on the pass lock and then runs,
        # instead of being skipped by the scheduler (which would lose the wake-up)
        scheduler.add_job(
            self.run_pass,
            "interval",
            seconds=s.pass_interval_s,
            id="pass",
            max_instances=2,
            coalesce=True,
            misfire_grace_time=None,  # a late pass still runs (once): no wake-up is lost
            next_run_time=datetime.now(UTC),
        )
        scheduler.add_job(
            self.recalibrate,
            "interval",
            seconds=s.recalibrate_interval_s,
            id="recalibrate",
            max_instances=1,
            coalesce=True,
        )
        if s.model_path is not None:
            scheduler.add_job(
                self.retrain,
                "interval",
                seconds=s.retrain_interval_s,
                id="retrain",
                max_instances=1,
                coalesce=True,
            )
        self._scheduler = scheduler
        scheduler.start()
        log.info("controller started", extra={"policy": self.config.describe()})

    def stop(self) -> None:
        """Finish the running pass, stop scheduling, release leadership."""
        self._stopping.set()
        if self._scheduler is not None:
            self._scheduler.shutdown(wait=True)
            self._scheduler = None
        with self._pass_lock:
            self._step_down("stopped")
            self._lock.close()
        log.info("controller stopped")

    def poke(self) -> None:
        """Run a pass as soon as possible (after a submission or a watch event), at most one
        per ``COALESCE_S``: pokes until it starts are served by it. A poke that arrives while
        a pass runs is remembered and served right after it, never dropped. Cheap when a
        pass is already due: a flag, no scheduler call (the API pokes on every write)."""
        self._poked.set()
        if self._wake_due:
            return
        self._wake_due = True
        self._run_soon(self._coalesced())

    def _coalesced(self) -> datetime:
        """Now, or ``COALESCE_S`` (or ``DUTY_SPAN`` times the last pass's duration) after the
        last pass started, if that is later."""
        gap = max(COALESCE_S, DUTY_SPAN * self._last_seconds)
        return max(datetime.now(UTC), self._last_start + timedelta(seconds=gap))

    def health(self) -> Health:
        return self._health

    # -- periodic work -------------------------------------------------------------------------
    def run_pass(self) -> PassReport | None:
        if self._stopping.is_set():
            return None
        with self._pass_lock:
            self._wake_due = False  # before the clear: a later poke asks for the next pass
            self._poked.clear()  # what happened so far, this pass sees
            self._last_start = datetime.now(UTC)
            started = time.perf_counter()
            try:
                if not self._lead():
                    return None
                applied = self.tuning.follow(self.settings, self.clock.now())
                if applied is not None:  # ``starburst tune --apply``: no restart needed
                    self.settings = applied
                    self._refit(force=True)
                self._ingest()
                if self.kueue is not None:
                    self.kueue.run_pass(self.clock.now(), self._lock.token)
                report = self.loop.run_pass()
            except ConflictError as exc:  # undone whole, the database up: lead on, pass again
                self.metrics.pass_errors.inc()
                log.warning("pass lost a write conflict, will retry: %s", exc)
                self._run_soon(self._coalesced())
                return None
            except TransientError as exc:
                self.metrics.pass_errors.inc()
                self._step_down(f"pass failed, will retry: {exc}")
                log.warning("pass failed, will retry: %s", exc)
                return None
            except StarburstError as exc:
                self.metrics.pass_errors.inc()
                self._health = Health(False, f"pass failed: {exc}")
                log.error("pass failed: %s", exc)
                return None
            except Exception as exc:  # a bug: counted, logged with its stack, then degraded
                self._unexpected_pass_error(exc)
                return None
            self._failed_passes = 0
            seconds = self._last_seconds = time.perf_counter() - started
            self.metrics.observe(report, seconds)
            self._health = Health(True, "leading", self.cloud_gate.reason)
            self.last_report = report
            self._log(report, seconds)
            self._wake_at(report.next_wakeup)
            if self._poked.is_set():  # poked during the pass: go again, coalesced
                self._wake_due = True
                self._run_soon(self._coalesced())
            return report

    def _unexpected_pass_error(self, exc: Exception) -> None:
        """An exception no port translated: the metric counts it, the log has its stack (the
        job ids and the error only, no commands or env), and once ``DEGRADED_AFTER`` passes
        in a row failed, readiness says so with the error's type."""
        self.metrics.pass_errors.inc()
        self._failed_passes += 1
        log.error(
            "pass failed: %s",
            type(exc).__name__,
            exc_info=exc,
            extra={"failed_passes": self._failed_passes},
        )
        if self._failed_passes >= DEGRADED_AFTER:
            self._health = Health(
                False,
                f"degraded: the last {self._failed_passes} passes "
                f"failed ({type(exc).__name__}); see the controller log",
            )

    def recalibrate(self) -> None:
        """Refit the coefficient on the recent window: Σ budgets = b × Σ predicted runtimes."""
        if self._stopping.is_set():
            return
        with self._pass_lock:
            self._refit()

    def _refit(self, force: bool = False) -> None:
        """(Holding the pass lock.) The configuration from the settings in force, the
        coefficient fitted on the recent window (``force``: even on no history, from the
        prior); recorded for ``starburst tune``."""
        recent = []
        if self.settings.coefficient is None:
            try:
                recent = [
                    h.job for h in self.store.models.history(limit=self.settings.calibration_window)
                ]
            except TransientError as exc:
                log.warning("recalibration skipped: %s", exc)
                return
        if recent or force or self.settings.coefficient is not None:
            self.config = self.loop.config = self.settings.scheduler_config(recent)
            self._fitted_on = len(recent)
            log.info(
                "recalibrated", extra={"policy": self.config.describe(), "window": len(recent)}
            )
        self._record_tuning()

    def _record_tuning(self) -> None:
        now = self.clock.now()
        fitted = self._fitted_on
        self.tuning.record(self.cluster, self.config, self.settings, now, calibrated_on=fitted)

    def retrain(self) -> None:
        """Retrain the runtime model on the store's history and switch the estimator to it; a
        failure keeps the current estimator. The child process (niced, one thread) reads the
        history itself (``history``, from ``wiring.history_reader``), and the new estimator
        predicts over the history it was trained on (the artifact's snapshot): this process
        holds the interpreter lock only to load the result, so the loop keeps its core and
        the lock."""
        from starburst.predictor.estimator import load_estimator
        from starburst.predictor.model import TrainParams
        from starburst.predictor.store import train_from_store

        path = self.settings.model_path
        if path is None or self._stopping.is_set():
            return
        try:
            artifact = train_from_store(
                self.store.models,
                path,
                params=TrainParams(threads=1),
                isolated=True,
                reader=self._history,
            )
            loaded = load_estimator(path)
        except StarburstError as exc:
            log.warning("retraining skipped: %s", exc)
            return
        with self._pass_lock:
            self.loop.estimator = loaded.estimator
        log.info("retrained", extra={"version": artifact.version, "jobs": artifact.jobs})

    # -- helpers -------------------------------------------------------------------------------
    def _lead(self) -> bool:
        if self._lock.token is not None and self._lock.is_held():
            return True
        token = self._lock.try_acquire()
        self.metrics.leader.set(1 if token is not None else 0)
        if token is None:
            self._health = Health(True, "standby: another replica leads")
            return False
        refusal = self.locality.take(token)
        if refusal is not None:
            self._step_down(refusal)
            if refusal != self._refusal:
                log.error(refusal)
            self._refusal = refusal
            return False
        self._refusal = None
        resumed = self.loop.reconcile()
        self._record_tuning()
        log.info("became leader", extra={"fencing_token": token, "resumed": resumed})
        return True

    def _step_down(self, detail: str) -> None:
        try:
            self._lock.release()
        except Exception as exc:  # a broken connection must not stop the step-down
            log.info("releasing the leader lock: %s", exc)
        self.metrics.leader.set(0)
        self._health = Health(False, detail)

    def _ingest(self) -> None:
        """Jobs the cluster itself discovered (suspended Kubernetes Jobs) enter the store."""
        source = self.capabilities.submissions
        if source is None:
            return
        found = source.submissions()
        # a new process is offered every waiting Job again: those the store has are known
        # (their ids are taken, so submitting them again would fail the whole pass)
        known = self.store.jobs.states_of(job.id for job in found)
        for job in found:
            if job.id in known:
                continue
            self.store.submissions.submit(
                JobSpec.from_job(job),
                idempotency_key=f"cluster:{job.id}",
                actor="cluster",
                at=job.submit_time or None,
            )

    def _wake_at(self, at: float) -> None:
        """A pass at ``at`` (the next budget expiry, or now while a backlog of submissions
        waits for admission), but within the passes' share of time (``_coalesced``)."""
        delay = at - self.clock.now()
        if delay < self.settings.pass_interval_s:
            due = datetime.now(UTC) + timedelta(seconds=max(0.0, delay))
            self._run_soon(max(due, self._coalesced()))

    def _run_soon(self, when: datetime) -> None:
        scheduler = self._scheduler
        if scheduler is None or self._stopping.is_set():
            return
        job = scheduler.get_job("pass")
        if job is not None and (job.next_run_time is None or when < job.next_run_time):
            job.modify(next_run_time=when)

    def _log(self, report: PassReport, seconds: float) -> None:
        structured_logs.log_pass(
            log, report, seconds, self.settings.pass_interval_s, self._overruns
        )
