"""Ports: the interfaces through which the decision core meets the world.

The simulator's in-memory implementations (``starburst.sim``) and the live adapters
(``starburst.adapters.*``) implement the same protocols, and one contract test suite runs
against both. Rules: nothing but the ``Clock`` reads time; no port call blocks the scheduling
loop (a cloud launch returns a handle at once and later passes poll it); adapters raise
``TransientError`` or ``PermanentError`` (``starburst.core.errors``), never SDK exceptions.

Terms:
- *port*: what every backend of a kind must do (``Clock``, ``Cluster``, ``Cloud``,
  ``RuntimeEstimator``, and the store's ``Submissions``, ``JobReads``, ``Lifecycle``,
  ``Ledger``, ``Accounts``, ``ModelRegistry`` and ``TuningLog``). The job ports are cut by
  who uses them: submissions (the API), reads and the change feed (listings, the queue
  view), lifecycle (the controller's pass, a cancel).
- *repository*: an object implementing one store port, each method itself (none forwards to
  another repository). ``Store`` is not itself a port of methods but the aggregate of the
  seven repositories (``store.submissions``, ``store.jobs``, ``store.lifecycle``,
  ``store.ledger``, ``store.accounts``, ``store.models``, ``store.tuning``) over one database;
  a consumer is given the repositories it uses, never the whole store.
- *capability*: what some backends can do beyond their port, each a small
  ``@runtime_checkable`` protocol named after what it means (``ChangeNotifier``,
  ``SubmissionSource``, ``JobAnnotator``, ``BudgetNotes``, ``DeletedJobs``, ``LogSource``,
  ``CloudHealth``, ``FailureReasons``, ``BilledLaunches``, ``LaunchEnds``). A backend
  declares one by implementing its methods; the controller resolves them once, when it is
  wired (``starburst.controller.loop.capabilities``), and never asks a backend again. A
  backend without a capability is never worse than correct: the controller only loses a
  courtesy (an annotation, a prompt pass, an exact end time).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from starburst.core.capacity import Node, Placement
from starburst.core.job import Job
from starburst.core.lifecycle import JobState
from starburst.core.port_values import CloudHandle as CloudHandle
from starburst.core.port_values import CloudStatus as CloudStatus
from starburst.core.port_values import ClusterSnapshot as ClusterSnapshot
from starburst.core.port_values import JobEnded as JobEnded
from starburst.core.port_values import Quote as Quote
from starburst.core.port_values import RunningJob as RunningJob

if TYPE_CHECKING:
    # annotations only: the simulator, which needs just the clock, cluster and cloud ports,
    # then never imports the store's records (a fifth of ``starburst simulate``'s imports)
    from decimal import Decimal

    from starburst.core.billing import BilledLaunch
    from starburst.core.records import (
        Admitted,
        Amendment,
        AppliedSetting,
        CloudLaunch,
        CloudSpend,
        CostEntry,
        CostTotal,
        HistoryJob,
        IssuedToken,
        JobEvent,
        JobSpec,
        Keyed,
        ModelVersion,
        Move,
        Moved,
        Prediction,
        Principal,
        QueuePage,
        Role,
        StoredJob,
        Submission,
        TeamBudget,
        TokenInfo,
        User,
    )
    from starburst.core.setting import PolicySetting
    from starburst.core.submit_limits import Backlog, Room


class Clock(Protocol):
    def now(self) -> float:
        """Seconds since the epoch (live) or since the trace started (simulated)."""
        ...


class Cluster(Protocol):
    """The private cluster: Kubernetes, the local executor or the simulator's cluster."""

    def snapshot(self) -> ClusterSnapshot: ...

    def start(self, job: Job, placement: Placement, reason: str) -> None:
        """Start the job on these nodes. Idempotent: starting a started job does nothing."""
        ...

    def cancel(self, job_id: str) -> None: ...

    def ended(self) -> Sequence[JobEnded]:
        """Jobs that ended since the last call."""
        ...


class Cloud(Protocol):
    """Rented GPUs: SkyPilot, the emulated cloud or the simulator's cloud."""

    def quote(self, job: Job) -> Quote: ...

    def launch(self, job: Job, reason: str) -> CloudHandle:
        """Start a launch and return at once; ``poll`` follows it."""
        ...

    def poll(self, handle: CloudHandle) -> CloudStatus: ...

    def cancel(self, handle: CloudHandle) -> None: ...

    def logs(self, handle: CloudHandle) -> str: ...


# -- capabilities: what some backends can do beyond their port ------------------------------
@runtime_checkable
class ChangeNotifier(Protocol):
    """A backend that says when a pass is worth running now: a job ended or arrived (the
    Kubernetes watches, the local backends' end watch). Without it, ends and arrivals are
    seen at the next periodic pass."""

    def subscribe(self, listener: Callable[[], None]) -> None:
        """Call ``listener`` (from the backend's own thread; it must be quick and must not
        call back into the backend) after each such change. One listener: a later
        ``subscribe`` replaces the earlier one."""
        ...


@runtime_checkable
class SubmissionSource(Protocol):
    """A cluster where users submit jobs themselves (suspended Kubernetes Jobs); each pass
    enters them into the store."""

    def submissions(self) -> list[Job]:
        """Jobs submitted since the last call (each once per process), oldest first."""
        ...


@runtime_checkable
class JobAnnotator(Protocol):
    """A cluster whose job objects can carry Starburst's decisions where users look
    (annotations and Events on a Kubernetes Job). Failures are logged, never fatal."""

    def note_waiting(
        self, job_id: str, budget: float, predicted_runtime: float | None, reason: str
    ) -> None:
        """The job's wait budget (``inf``: waits on-prem only), its estimate and why."""
        ...

    def burst(
        self,
        job_id: str,
        where: str,
        reason: str,
        cloud_job: str | None = None,
        price_per_hour: float | None = None,
    ) -> None:
        """The job went to the cloud (it stays suspended in the cluster): where and why."""
        ...


@runtime_checkable
class BudgetNotes(Protocol):
    """A cluster that can record a team's budget alert where its users look (a Kubernetes
    Event in the team's namespace)."""

    def note_budget(self, team: str, reason: str, message: str) -> None: ...


@runtime_checkable
class DeletedJobs(Protocol):
    """A cluster whose jobs are objects a user can delete behind the controller's back (a
    Kubernetes Job removed with kubectl while no leader watched)."""

    def vanished(self, jobs: Iterable[Job]) -> list[str]:
        """The ids of ``jobs`` whose object in the cluster is gone."""
        ...


@runtime_checkable
class LogSource(Protocol):
    """A cluster that keeps what its jobs printed (a Kubernetes Job's pods, the local
    cluster's output files). The cloud's output is part of the ``Cloud`` port."""

    def job_logs(self, job: Job, tail: int | None = None) -> str:
        """The job's output, its last ``tail`` lines (None: all the backend keeps)."""
        ...


@runtime_checkable
class CloudHealth(Protocol):
    """A cloud that can say why it cannot burst right now (None: it can)."""

    def degraded(self) -> str | None: ...


@runtime_checkable
class FailureReasons(Protocol):
    """A cloud that can say why a launch is in its state (an ended run's exit code, a
    refused launch's cause); without it a failure says only its status."""

    def reason(self, handle: CloudHandle) -> str: ...


@runtime_checkable
class BilledLaunches(Protocol):
    """A cloud that knows what it bills for a launch, so metering starts when it really
    launched (a restarted controller re-records a launch from before it) and only once
    something was launched. Without it a launch bills from when the controller recorded it."""

    def billed_launch(self, handle: CloudHandle) -> BilledLaunch | None:
        """What is billed for the launch (None: nothing launched yet)."""
        ...


@runtime_checkable
class LaunchEnds(Protocol):
    """A cloud that knows when a launch really ended, so a controller that learns of the end
    late (after a restart) bills to the end, not to the poll. Without it: to the poll.

    Contract: once it has answered with an end, every later call, in this life or the next,
    answers the same — a life that billed up to that end and died before closing the launch
    leaves cost entries the next life's end must agree with."""

    def ended_at(self, handle: CloudHandle) -> float | None:
        """When the launch ended (None: it has not, or the backend does not know)."""
        ...


@dataclass(frozen=True, slots=True)
class Estimate:
    """A runtime estimate in seconds with its band and where it came from."""

    value: float
    low: float
    high: float
    source: str


class RuntimeEstimator(Protocol):
    def estimate(self, jobs: Sequence[Job]) -> list[Estimate]: ...


# ---- the store ---------------------------------------------------------------------------
# The durable record of jobs, money, accounts and models, split by concept so each user names
# only what it needs: one port per concept, one repository object per port. ``SqlStore``
# (PostgreSQL, SQLite) and ``MemoryStore`` each hand out one repository of every port (the
# ``Store`` aggregate below) and pass one contract suite (``tests/contract/test_store_*.py``).
#
# Shared rules: times are epoch seconds and a write without ``at=`` is stamped by the store's
# clock; money is ``Decimal`` kept exactly to the micro-unit (1e-6); a write carrying a
# ``fencing_token`` older than the current leader's raises ``StaleLeader`` and changes
# nothing; every method is one transaction (all of its writes or none).

#: One row of ``Ledger.ledger_totals_after``: team, location, source, currency, micro-units
#: of money and GPU-hours.
LedgerTotalRow = tuple[str | None, str, str, str, int, float]
#: Ledger ids ``first..last`` (both included) not in the ledger when it was read.
IdRange = tuple[int, int]


@dataclass(frozen=True, slots=True)
class LedgerRead:
    """What ``Ledger.ledger_totals_after`` read, in one snapshot: the highest id there was
    (``top``), the sums of the entries newly read, and the ids up to ``top`` that were not
    there (``missing``): rolled back, or — on PostgreSQL, where ids are handed out before
    commit — an entry whose transaction commits after a higher id's, to be asked for again."""

    top: int
    rows: list[LedgerTotalRow]
    missing: tuple[IdRange, ...] = ()


#: The key of ``Ledger.job_costs``'s amounts: the launch id (None: no launch) and currency.
JobCostKey = tuple[int | None, str]


class Submissions(Protocol):
    """New jobs: idempotent submission, one or a batch. Used by the API and admin imports.

    Contract: a job is created in ``submitted`` with ``version`` 1 and a ``submitted`` event;
    an ``idempotency_key`` already known returns the existing job (``created`` False); a given
    id that exists raises ``DuplicateJob`` and keeps nothing of the batch. Its user and team
    are created if new.
    """

    def submit(
        self,
        spec: JobSpec,
        *,
        idempotency_key: str | None = None,
        actor: str | None = None,
        at: float | None = None,
    ) -> Submission:
        """Store a new job in ``submitted``; a known ``idempotency_key`` returns its job.
        Its user and team are created if new."""
        ...

    def submit_many(
        self,
        items: Sequence[JobSpec | Keyed],
        *,
        actor: str | None = None,
        at: float | None = None,
    ) -> list[Submission]:
        """Submit a batch at once (all or nothing); results in input order. An item is a
        spec, or ``(spec, idempotency_key, actor)`` (its actor None: ``actor``'s). A key
        repeated inside the batch makes one job, ``created`` at its first position only."""
        ...

    def writer(self) -> SubmissionWriter:
        """A writer for a run of batches from one thread (a group commit's committer):
        the store may hold one connection for it until ``close``."""
        ...


class SubmissionWriter(Protocol):
    """What a group commit writes each batch through (``Submissions.writer``): the backlog
    its limits count, then the batch. Used from one thread at a time.

    Contract: ``backlog`` answers as ``JobReads.backlog`` and ``submit_many`` as
    ``Submissions.submit_many`` would at the same moment; a connection the server dropped
    while the writer was idle is replaced before ``backlog`` fails, as a pool's ping would.
    """

    def backlog(
        self,
        *,
        users: Collection[str],
        teams: Collection[str],
        arrays: Collection[str],
        keys: Collection[str],
    ) -> Backlog: ...

    def submit_many(self, items: Sequence[Keyed]) -> list[Submission]: ...

    def submit_if_room(self, items: Sequence[Keyed], room: Room) -> list[Submission] | None:
        """``submit_many(items)`` if the store's waiting jobs leave every user and team of
        ``room`` its room (``core.submit_limits.fits``), else None, writing nothing: the
        backlog and the batch in one step where the store can (one statement on PostgreSQL,
        one round trip a batch instead of two)."""
        ...

    def close(self) -> None:
        """Release what the writer holds (a later call takes what it needs again)."""
        ...


class JobReads(Protocol):
    """Reading jobs: one or many, the queue, the change feed, counts and placements. Used by
    the API's listings, the controller's queue view and the reports.

    Contract: the queue is FIFO on (``queued_at``, id) and paged by an opaque cursor that
    stays valid under concurrent inserts; a cursor it did not hand out is an
    ``InvalidPage``, a limit below 1 a ``ConfigError``. Unknown ids raise ``JobNotFound``
    (reads of many ids leave unknown ones out instead).
    """

    def get(self, job_id: str) -> StoredJob: ...

    def lookup(
        self, text: str, *, owner: str, everyone: bool = False, limit: int = 10
    ) -> list[StoredJob]:
        """Jobs whose id starts with ``text`` (``owner``'s only unless ``everyone``) or
        ``owner``'s jobs named ``text``; oldest queued first, at most ``limit``."""
        ...

    def states_of(self, job_ids: Iterable[str]) -> dict[str, JobState]:
        """The state of each known id of ``job_ids`` (unknown ids are left out)."""
        ...

    def find_by_key(self, idempotency_key: str) -> StoredJob | None: ...

    def queue(
        self,
        *,
        limit: int = 100,
        cursor: str | None = None,
        states: Sequence[JobState] = (JobState.QUEUED,),
        user: str | None = None,
        team: str | None = None,
        name: str | None = None,
        held: bool | None = None,
    ) -> QueuePage:
        """One page of the jobs in ``states``, FIFO; ``user``/``team`` match exactly and
        ``name`` is a case-insensitive shell glob (``sweep-*``, ``?``); ``held`` keeps only
        the jobs held out of the queue (True) or only the others (False)."""
        ...

    def array_in_flight(self, arrays: Iterable[str]) -> dict[str, int]:
        """Elements of each array that are queued, bursting or running (arrays with none
        are left out)."""
        ...

    def array_elements(self, array: str, *, limit: int = 10_000) -> list[StoredJob]:
        """The jobs of ``array`` (every state), in index order (``Job.submission_order``),
        at most ``limit``; none for an unknown array."""
        ...

    def events(self, job_id: str) -> list[JobEvent]:
        """The job's events, oldest first (an unknown job has none)."""
        ...

    def last_event_id(self) -> int:
        """The position of the newest event in the change feed (0 when there is none)."""
        ...

    def state_changes(
        self, after_id: int, limit: int = 10_000
    ) -> tuple[list[tuple[str, JobState]], int]:
        """Up to ``limit`` (job id, new state) changes after position ``after_id``, oldest
        first, and the position of the last one returned (``after_id`` if none)."""
        ...

    def count(self, state: JobState) -> int: ...

    def held_count(self) -> int:
        """How many ``submitted`` jobs are held out of the queue (``hold``)."""
        ...

    def backlog(
        self,
        *,
        users: Collection[str],
        teams: Collection[str],
        arrays: Collection[str],
        keys: Collection[str],
    ) -> Backlog:
        """What ``core.submit_limits`` counts: waiting (``submitted`` or ``queued``) jobs of
        each of ``users`` and ``teams``, elements of each of ``arrays`` (any state), and which
        of the idempotency ``keys`` are known. Names with none are left out."""
        ...

    def waits_of(self, job_ids: Collection[str]) -> dict[str, tuple[str, ...]]:
        """For each of ``job_ids`` that has not ended (unknown ids are left out): the ids of
        the jobs it waits for (``after``)."""
        ...

    def placement(self, job_id: str) -> Placement:
        """The job's latest placement, parts in order (empty if never placed)."""
        ...


class Lifecycle(Protocol):
    """Changing jobs: state changes with fencing tokens, holds, estimates and placements.
    Used by the controller's pass and a user's cancel.

    Contract: every state change goes through ``core.lifecycle``'s one table, bumps
    ``version`` by one and appends one event. Entering ``running_onprem``/``running_cloud``
    sets ``started_at`` and ``ran_on``; ``bursting`` sets ``ran_on`` to ``cloud``; re-entering
    ``queued`` after a run (Star-Wait) re-stamps ``queued_at`` and clears ``started_at`` and
    ``ran_on``; a terminal state sets ``ended_at`` and the measured ``runtime``. A job leaving
    ``running_onprem`` has its run entered in the ledger (source ``onprem``).
    """

    def transition(
        self,
        job_id: str,
        to_state: JobState,
        *,
        reason: str,
        actor: str,
        fencing_token: int | None = None,
        expected_version: int | None = None,
        at: float | None = None,
        wait_budget: float | None = None,
    ) -> StoredJob:
        """Move one job and return it as it now is; raises ``JobNotFound``, ``StaleLeader``,
        ``StaleVersion`` (``expected_version`` is not the job's) or ``IllegalTransition``,
        and then changes nothing."""
        ...

    def amend(
        self,
        job_id: str,
        change: Amendment,
        *,
        reason: str,
        actor: str,
        expected_version: int | None = None,
        at: float | None = None,
    ) -> StoredJob:
        """Apply a user's change (hold, release, update, a note) to one job in one write:
        its state change if any (through ``core.lifecycle``), its fields, one event (from
        its state to its new one, the same state when it does not move) and a version bump.
        Raises as ``transition`` does (``JobNotFound``, ``StaleVersion``,
        ``IllegalTransition``) and then changes nothing."""
        ...

    def transition_many(
        self,
        moves: Sequence[Move],
        to_state: JobState,
        *,
        actor: str,
        fencing_token: int | None = None,
        at: float | None = None,
    ) -> Moved:
        """Move a batch at once; a job that is unknown, named twice or whose state no longer
        allows the move is skipped and named, the others move. Raises only ``StaleLeader``
        (then nothing changes), never ``IllegalTransition``."""
        ...

    def admit(
        self,
        moves: Sequence[Move],
        *,
        actor: str,
        fencing_token: int | None = None,
        at: float | None = None,
    ) -> Admitted:
        """``transition_many(moves, QUEUED, ...)`` for jobs still ``submitted``, without
        reading them back (the controller's admission has just read them): the same version
        bump, wait budget (and predicted runtime, when a move has one), held reason cleared
        (``queued_at`` re-stamped after a hold) and one event per job, in one transaction.
        A job that is unknown, named twice or no longer submitted is skipped and named.
        Raises only ``StaleLeader`` (then nothing changes)."""
        ...

    def claim(
        self,
        to_state: JobState,
        *,
        limit: int,
        reason: str,
        actor: str,
        from_state: JobState = JobState.QUEUED,
        fencing_token: int | None = None,
        at: float | None = None,
    ) -> list[StoredJob]:
        """Move up to ``limit`` jobs from the head of ``from_state``'s FIFO to ``to_state``;
        concurrent claimers get disjoint sets. ``IllegalTransition`` if the move never is."""
        ...

    def hold(self, reasons: Mapping[str, str]) -> None:
        """Record why each ``submitted`` job is held out of the queue (no state change, no
        event); the next state change clears it, and entering ``queued`` from a hold
        re-stamps ``queued_at`` (its wait budget starts then)."""
        ...

    def set_estimates(
        self,
        job_id: str,
        *,
        predicted_runtime: float | None = None,
        wait_budget: float | None = None,
    ) -> None:
        """Record the estimate and wait budget the policy uses; not a state change (the
        version stays); None leaves a field as it is."""
        ...

    def record_placement(
        self,
        job_id: str,
        placement: Placement,
        *,
        fencing_token: int | None = None,
        at: float | None = None,
        gpu_types: Sequence[str | None] | None = None,
    ) -> int:
        """Record where a job starts on-prem; returns the attempt number (1, 2, ...).
        ``gpu_types``: the GPU type of each part's node (what on-prem use is priced by)."""
        ...


class Ledger(Protocol):
    """Where money went: cloud launches and metered cost entries, and the reports on them.

    Contract:
    - A launch gets its ``id`` when recorded; updates fill in fields and never clear one;
      ``ended_at`` set means it bills no more (it leaves ``launches(active=True)``).
    - Cost entries are idempotent per (job, source, start): a re-sent interval is ignored.
      An entry takes its job's user, team, project (``extra["project"]``) and, unless it
      names one, GPU type at the time it is recorded.
    - Reports cover entries whose start is in ``[since, until)``, grouped by any of
      ``team user project label cloud region location gpu_type source job day week month``
      (UTC; a week is named by its Monday) and by currency, sorted by key then currency.
      ``location`` is ``cloud:region`` or ``cloud``. On-prem entries add GPU-hours to
      ``onprem_gpu_hours`` (priced at ``rates`` into ``onprem_amount``), not to money.
    - An on-prem run is entered by ``core.billing.onprem_usage``: in intervals that never
      cross a UTC midnight (``meter_onprem`` while it runs, its state change for the rest),
      at the GPU type of the nodes it was placed on, one entry per interval and GPU type
      (``part``); each interval is entered once, whichever writer comes first.
    """

    def record_launch(
        self, launch: CloudLaunch, *, fencing_token: int | None = None
    ) -> CloudLaunch:
        """Store a launch of a known job (``JobNotFound`` otherwise); returns it with its id."""
        ...

    def update_launch(
        self,
        launch_id: int,
        *,
        status: str | None = None,
        request_id: str | None = None,
        cloud_job_id: str | None = None,
        started_at: float | None = None,
        ended_at: float | None = None,
    ) -> CloudLaunch:
        """Fill in what polling learned (None keeps a field); ``ConfigError`` if unknown."""
        ...

    def launches(self, job_id: str | None = None, *, active: bool = False) -> list[CloudLaunch]:
        """Launches of one job (or all) in the order recorded; ``active``: not yet ended."""
        ...

    def record_costs(self, entries: Sequence[CostEntry]) -> None:
        """Record metered entries at once; ``JobNotFound`` for an unknown job, and
        ``ConfigError`` for an unknown launch id or an interval ending before it starts
        (then nothing is kept)."""
        ...

    def cost_report(
        self,
        since: float,
        until: float,
        by: Sequence[str] = ("team",),
        *,
        team: str | None = None,
        user: str | None = None,
        cloud: str | None = None,
        project: str | None = None,
        job: str | None = None,
        source: str | None = None,
        rates: Mapping[str, float] | None = None,
        top: int | None = None,
    ) -> list[CostTotal]:
        """Totals over ``[since, until)`` (see the class docstring); filters narrow the
        entries first; ``rates`` are $/GPU-hour per GPU type, case-insensitive, ``*`` for
        any other; ``top``: only the N rows of highest cloud spend in each currency
        (``core.billing.top_per_currency``, in that order). An unknown key is a
        ``ConfigError``."""
        ...

    def job_costs(self, job_ids: Iterable[str]) -> dict[str, dict[JobCostKey, Decimal]]:
        """Money metered per job, launch id (None: entries of no launch) and currency, over
        all time, on-prem entries left out; jobs without entries are absent. Amounts in
        different currencies are never added together."""
        ...

    def meter_onprem(self, until: float, *, chunk: float) -> int:
        """Enter the complete intervals (``core.billing.onprem_usage``) of every run still
        on-prem up to ``until``, continuing from each run's last entry; how many entries
        were written. A run's state change enters its remainder (``Lifecycle.transition``)."""
        ...

    def ledger_totals_after(self, after_id: int, missing: Sequence[IdRange] = ()) -> LedgerRead:
        """Entries with an id above ``after_id`` or in the ``missing`` ranges (asked for
        again) summed by team, location, source and currency, the new position (``after_id``
        when nothing is new) and the ids still missing (see ``LedgerRead``)."""
        ...

    def ended_jobs(self, since: float, until: float) -> list[StoredJob]:
        """Jobs in a final state that ended in ``[since, until)``, oldest end first."""
        ...


class Accounts(Protocol):
    """Users, teams, API tokens, team budgets and budget alerts.

    Contract: a token's secret is returned once and never stored; a revoked or expired token
    authenticates nobody; its last use is noted at most once a minute. A budget is a monthly
    cloud limit (never negative: ``ConfigError``); an alert is claimed once per (team, month,
    threshold).
    """

    def ensure_team(self, name: str, *, at: float | None = None) -> None: ...

    def save_user(
        self,
        name: str,
        *,
        team: str | None = None,
        email: str | None = None,
        at: float | None = None,
    ) -> User:
        """Create the user, or set their team and e-mail; ``ConfigError`` for a blank name."""
        ...

    def user(self, name: str) -> User | None: ...

    def users(self, *, team: str | None = None) -> list[User]:
        """Every user (of ``team`` if given), by name."""
        ...

    def teams(self) -> list[str]:
        """Every team's name, sorted."""
        ...

    def tokens(self, *, user: str | None = None) -> list[TokenInfo]:
        """Every token (of ``user`` if given), revoked and expired ones too, by id."""
        ...

    def issue_token(
        self,
        user: str,
        role: Role,
        *,
        label: str | None = None,
        expires_at: float | None = None,
        at: float | None = None,
        secret: str | None = None,
    ) -> IssuedToken:
        """A new token for an existing user (``ConfigError`` otherwise). ``secret`` registers
        one chosen outside: ``sb_`` and 32+ characters, else ``ConfigError``."""
        ...

    def authenticate(self, secret: str, *, at: float | None = None) -> Principal | None:
        """Who holds this secret, if it is a live token."""
        ...

    def revoke_token(self, token_id: int, *, at: float | None = None) -> bool:
        """Revoke a token; False if there is no such live token."""
        ...

    def set_team_budget(
        self,
        team: str,
        monthly_limit: Decimal,
        *,
        currency: str = "USD",
        at: float | None = None,
    ) -> TeamBudget: ...

    def team_budgets(self) -> list[TeamBudget]:
        """Every team's budget, by team name."""
        ...

    def team_budget(self, team: str) -> TeamBudget | None: ...

    def claim_budget_alert(
        self, team: str, month: str, threshold: float, spent: Decimal, *, at: float | None = None
    ) -> bool:
        """True only for the first claim of (team, month, threshold to the permille)."""
        ...

    def budget_alerts(self, month: str) -> dict[str, list[float]]:
        """The thresholds each team crossed in ``month`` (``YYYY-MM``), ascending."""
        ...


class ModelRegistry(Protocol):
    """What the runtime predictor learns from and writes: history, predictions, models.

    Contract: ``history`` holds only jobs with a start and an end, so every runtime is a
    measured one, oldest end first (then id). Recording a prediction sets the job's
    ``predicted_runtime`` (what ``StoredJob.job.estimate`` reads). At most one version per
    model name is active; registering an active version retires the previous one.
    """

    def history(
        self,
        *,
        since: float | None = None,
        until: float | None = None,
        limit: int | None = None,
        states: Sequence[JobState] = (JobState.SUCCEEDED,),
    ) -> list[HistoryJob]:
        """Finished jobs in ``states`` (optionally ended in ``[since, until)``; ``limit``
        keeps the most recent), oldest end first."""
        ...

    def record_predictions(
        self, predictions: Sequence[Prediction], *, set_runtime: bool = True
    ) -> None:
        """Store predictions (``JobNotFound`` for an unknown job; the last one per job sets
        its ``predicted_runtime``, unless not ``set_runtime``: the caller writes it with
        another change of the job, as the admission does with its ``Move``)."""
        ...

    def predictions(self, job_id: str) -> list[Prediction]:
        """The job's predictions in the order recorded."""
        ...

    def register_model(
        self,
        name: str,
        version: str,
        *,
        trained_on: int,
        metrics: Mapping[str, float] | None = None,
        artifact_uri: str | None = None,
        activate: bool = True,
        at: float | None = None,
    ) -> ModelVersion: ...

    def active_model(self, name: str) -> ModelVersion | None: ...

    def model_versions(self, name: str) -> list[ModelVersion]:
        """Every version of ``name`` in the order registered."""
        ...


class TuningLog(Protocol):
    """What ``starburst tune`` reads and writes: finished jobs as a trace, the cloud money
    they cost, the controller's observed state, and the policy settings applied at run time.

    Contract:
    - A *finished job* was submitted in ``[since, until)`` and ended succeeded or failed after
      running somewhere; its runtime is what it ran where it ended (on-prem: its last run;
      in the cloud: its last ended launch, launch to end, provisioning included), its
      ``extra`` is ``{"ran_on": ..., "state": ...}``; a cloud job without an ended launch is
      left out. Ordered by submit time, then id.
    - The controller's state is one JSON value per name, overwritten by each write.
    - Policy settings are append-only: the newest is in force; nothing updates or deletes one.
    """

    def finished_jobs(self, since: float, until: float) -> list[Job]: ...

    def cloud_spend(self, job_ids: Sequence[str]) -> CloudSpend:
        """Σ metered cloud money and GPU-hours of ``job_ids`` (every currency summed)."""
        ...

    def record_state(self, name: str, value: Mapping[str, Any], at: float | None = None) -> None:
        """Overwrite the state ``name`` with ``value`` (kept as JSON)."""
        ...

    def state(self, name: str) -> dict[str, Any] | None: ...

    def record_cluster_shape(self, nodes: Sequence[Node], at: float | None = None) -> None: ...

    def cluster_shape(self) -> list[Node] | None: ...

    def apply_setting(
        self,
        setting: PolicySetting,
        *,
        actor: str,
        reason: str,
        evidence: Mapping[str, Any] | None = None,
        at: float | None = None,
    ) -> AppliedSetting:
        """Append ``setting`` to the audit log; from now on it is the one in force."""
        ...

    def setting_in_force(self) -> AppliedSetting | None: ...

    def settings_log(self, limit: int = 100) -> list[AppliedSetting]:
        """The newest ``limit`` applied settings, newest first."""
        ...


@runtime_checkable
class Store(Protocol):
    """The whole store: one repository per port over the same data, for the composition
    roots that hand them out (the API, the controller's wiring, the CLI's admin verbs).
    Everything else is given only the ports it uses (``store.jobs``, ``store.lifecycle``,
    ``store.ledger``, ...)."""

    @property
    def submissions(self) -> Submissions: ...

    @property
    def jobs(self) -> JobReads: ...

    @property
    def lifecycle(self) -> Lifecycle: ...

    @property
    def ledger(self) -> Ledger: ...

    @property
    def accounts(self) -> Accounts: ...

    @property
    def models(self) -> ModelRegistry: ...

    @property
    def tuning(self) -> TuningLog: ...

    def close(self) -> None:
        """Release connections; the store is not used afterwards."""
        ...
