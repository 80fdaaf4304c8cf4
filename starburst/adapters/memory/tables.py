"""The in-memory store's state, shared by its repositories (``MemoryDatabase``): its
"tables", the lock that makes each method one transaction, the clock and the leader terms
that fence writes.

Terms:
- *row*: a mutable record owned by the store (``JobRow``, ``CostRow``, ...). Rows never leave
  the store; callers get frozen core records built from them, so nothing outside can change
  the store's state without going through a method.
- *FIFO index*: per state, the sorted list of ``(queued_at, id)`` keys of its jobs, so the
  head of a queue and a page after a cursor are found by bisection, not by sorting.
- *leader term*: per lock name, the latest fencing token handed out (``next_term``); a write
  carrying any other token raises ``StaleLeader``, as in the SQL store.

Invariants: every public method of the store takes ``lock`` (re-entrant) for its whole run
and validates everything before it changes anything, so a method that raises leaves the
state as it found it (all or nothing, like a database transaction).
"""

from __future__ import annotations

import bisect
import threading
from dataclasses import dataclass, field
from typing import Any

from starburst.core.capacity import Placement
from starburst.core.dependencies import Dependency, array_index_in
from starburst.core.job import Job
from starburst.core.lifecycle import JobState
from starburst.core.ports import Clock
from starburst.core.records import (
    FIRST_VERSION,
    AppliedSetting,
    CloudLaunch,
    JobEvent,
    JobNotFound,
    ModelVersion,
    Prediction,
    Role,
    StaleLeader,
    StoredJob,
    TeamBudget,
    User,
)
from starburst.wallclock import WallClock


@dataclass(slots=True)
class JobRow:
    """One job as the store keeps it (the columns of the SQL ``jobs`` table)."""

    id: str
    submitted_at: float
    gpus: int
    state: JobState = JobState.SUBMITTED
    version: int = FIRST_VERSION
    queued_at: float = 0.0
    idempotency_key: str | None = None
    name: str | None = None
    user: str | None = None
    team: str | None = None
    image: str | None = None
    command: str | None = None
    cpus: float = 0.0
    memory_mb: float = 0.0
    gpu_type: str | None = None
    declared_runtime: float | None = None
    deadline: float | None = None
    pods: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    started_at: float | None = None
    ended_at: float | None = None
    runtime: float | None = None
    predicted_runtime: float | None = None
    wait_budget: float | None = None
    ran_on: str | None = None
    after: tuple[Dependency, ...] = ()
    array: str | None = None
    array_limit: int | None = None
    held: str | None = None

    def job(self) -> Job:
        """The core job; its estimate is the prediction, else the declaration."""
        estimate = self.predicted_runtime
        return Job(
            id=self.id,
            submit_time=self.submitted_at,
            gpus=self.gpus,
            cpus=self.cpus,
            memory_mb=self.memory_mb,
            gpu_type=self.gpu_type,
            runtime=self.runtime,
            estimate=estimate if estimate is not None else self.declared_runtime,
            user=self.user,
            team=self.team,
            name=self.name,
            deadline=self.deadline,
            pods=self.pods,
            extra=dict(self.extra),
            after=self.after,
            array=self.array,
            array_limit=self.array_limit,
            array_index=array_index_in(self.extra),
        )

    def stored(self) -> StoredJob:
        return StoredJob(
            job=self.job(),
            state=self.state,
            version=self.version,
            queued_at=self.queued_at,
            idempotency_key=self.idempotency_key,
            image=self.image,
            command=self.command,
            started_at=self.started_at,
            ended_at=self.ended_at,
            predicted_runtime=self.predicted_runtime,
            declared_runtime=self.declared_runtime,
            wait_budget=self.wait_budget,
            ran_on=self.ran_on,
            held=self.held,
        )


@dataclass(slots=True)
class CostRow:
    """One ledger entry, with the owner columns copied from its job when recorded."""

    id: int
    job_id: str
    source: str
    start: float
    end: float
    micros: int
    gpu_hours: float
    currency: str
    cloud: str
    region: str | None
    gpu_type: str | None
    user: str | None
    team: str | None
    project: str | None
    launch_id: int | None
    part: int = 0  # the GPU-type group of an on-prem run


@dataclass(slots=True)
class TokenRow:
    """An API token: only the SHA-256 of its secret is kept."""

    user: str
    role: Role
    label: str | None
    created_at: float
    expires_at: float | None
    revoked_at: float | None = None
    last_used_at: float | None = None


@dataclass(slots=True)
class Tables:
    """Everything the store holds. Ids of events, entries, launches, tokens and models start
    at 1 and only grow (the change feed and ``ledger_totals_after`` read positions)."""

    jobs: dict[str, JobRow] = field(default_factory=dict)
    by_key: dict[str, str] = field(default_factory=dict)  # idempotency key → job id
    fifo: dict[JobState, list[tuple[float, str]]] = field(default_factory=dict)
    events: list[JobEvent] = field(default_factory=list)  # an event's id is its index + 1
    events_of: dict[str, list[int]] = field(default_factory=dict)  # job id → event indexes
    placements: dict[str, list[Placement]] = field(default_factory=dict)  # attempt = index + 1
    #: Job id → the node GPU type of each part of its latest placement.
    placement_types: dict[str, tuple[str | None, ...]] = field(default_factory=dict)
    terms: dict[str, int] = field(default_factory=dict)  # leader name → current token
    costs: list[CostRow] = field(default_factory=list)  # an entry's id is its index + 1
    #: (job, source, start, part) of every entry
    cost_keys: set[tuple[str, str, float, int]] = field(default_factory=set)
    #: Job id → (start, end) of its on-prem entry that ends last
    onprem_last: dict[str, tuple[float, float]] = field(default_factory=dict)
    launches: dict[int, CloudLaunch] = field(default_factory=dict)
    teams: set[str] = field(default_factory=set)
    users: dict[str, User] = field(default_factory=dict)
    tokens: dict[int, TokenRow] = field(default_factory=dict)
    token_by_hash: dict[str, int] = field(default_factory=dict)
    budgets: dict[str, TeamBudget] = field(default_factory=dict)
    alerts: dict[tuple[str, str, int], int] = field(default_factory=dict)  # → spent micros
    predictions: dict[str, list[Prediction]] = field(default_factory=dict)
    models: list[ModelVersion] = field(default_factory=list)  # a version's id is index + 1
    controller_state: dict[str, dict[str, Any]] = field(default_factory=dict)
    settings: list[AppliedSetting] = field(default_factory=list)  # an id is index + 1

    def index(self, row: JobRow) -> None:
        bisect.insort(self.fifo.setdefault(row.state, []), (row.queued_at, row.id))

    def unindex(self, row: JobRow) -> None:
        keys = self.fifo[row.state]
        del keys[bisect.bisect_left(keys, (row.queued_at, row.id))]

    def row(self, job_id: str) -> JobRow:
        row = self.jobs.get(job_id)
        if row is None:
            raise JobNotFound(job_id)
        return row

    def add_cost(self, row: CostRow) -> None:
        """Enter ``row`` unless its (job, source, start, part) is entered already (a
        re-sent interval); its id is assigned here."""
        key = (row.job_id, row.source, row.start, row.part)
        if key not in self.cost_keys:
            self.cost_keys.add(key)
            row.id = len(self.costs) + 1
            self.costs.append(row)
            last = self.onprem_last.get(row.job_id)
            if row.source == "onprem" and (last is None or row.end >= last[1]):
                self.onprem_last[row.job_id] = (row.start, row.end)

    def add_event(self, event: JobEvent) -> None:
        self.events.append(event)
        self.events_of.setdefault(event.job_id, []).append(len(self.events) - 1)


class MemoryDatabase:
    """What every repository of the in-memory store is constructed with (the counterpart of
    the SQL store's ``Database``): the tables, the lock, the clock and ``leader_name``."""

    def __init__(self, *, clock: Clock | None = None, leader_name: str = "controller") -> None:
        self._clock: Clock = clock or WallClock()
        self.leader_name = leader_name
        self.lock = threading.RLock()
        self.tables = Tables()

    @property
    def clock(self) -> Clock:
        return self._clock

    def now(self, at: float | None) -> float:
        """``at``, or the clock's now when it is None."""
        return self._clock.now() if at is None else at

    def check_fence(self, token: int | None) -> None:
        """``StaleLeader`` unless ``token`` is None or the current one of ``leader_name``."""
        if token is None:
            return
        current = self.tables.terms.get(self.leader_name)
        if current != token:
            raise StaleLeader(self.leader_name, token, int(current or 0))

    def next_term(self, name: str | None = None) -> int:
        """Hand out the next fencing token of lock ``name`` (default: this store's leader);
        from now on writes fenced with an older token are refused."""
        with self.lock:
            key = self.leader_name if name is None else name
            self.tables.terms[key] = self.tables.terms.get(key, 0) + 1
            return self.tables.terms[key]
