"""Changing jobs in the store (``SqlTransitions``, the ``Lifecycle`` port): state changes of
one job, a batch, or the head of a queue (claims), holds, estimates, and where a job starts
on-prem (its placements).

Invariants:
- Every state change goes through ``starburst.core.lifecycle.check_transition`` and bumps the
  job's ``version``; the ``UPDATE`` applies only ``WHERE version = <the version read>``, so two
  writers racing on one job cannot both move it (the loser gets ``StaleVersion``).
- Each change appends exactly one ``job_events`` row (who, when, from → to, why, fencing token).
- ``transition_many`` moves a batch in one transaction (rows locked ``FOR UPDATE`` on
  PostgreSQL): the same rule, version bump and event per job; a job whose state no longer
  allows the move (e.g. cancelled meanwhile) is skipped and named, the others move.
  ``admit`` is the same for the controller's admissions (to ``queued``, from ``submitted``
  only), without reading the rows it moves.
- A job leaving ``running_onprem`` has its run entered in the ledger (``costs``) in the same
  transaction as the state change.
- A placement is recorded as one row per node part under a new ``attempt`` number; the
  current placement of a job is its highest attempt.
- ``claim`` takes the head of a state's queue with ``FOR UPDATE SKIP LOCKED`` on PostgreSQL,
  so concurrent claimers never take the same job; SQLite serialises writers instead.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from starburst.core.capacity import Placement
from starburst.core.lifecycle import ALLOWED, JobState, check_transition
from starburst.core.records import (
    Admitted,
    Amendment,
    JobNotFound,
    Move,
    Moved,
    StaleVersion,
    StoredJob,
)

from .base import Database, chunks, fk_guard, in_chunks, unnest_insert, unnest_update
from .convert import to_epoch, to_stored_job, to_time
from .costs import onprem_rows
from .engine import run
from .models import JobEventRow, JobRow, PlacementRow, table
from .rollups import enter

JOBS = table(JobRow)
EVENTS = table(JobEventRow)
PLACEMENTS = table(PlacementRow)
_STARTED = {JobState.RUNNING_ONPREM: "onprem", JobState.RUNNING_CLOUD: "cloud"}


class SqlTransitions:
    """State changes, holds, estimates and placements over the shared ``Database``."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._engine = db.engine

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
        """Move one job to ``to_state``; raises ``IllegalTransition``, ``StaleVersion``,
        ``StaleLeader`` or ``JobNotFound`` and then changes nothing."""
        now = to_time(self._db.now(at))

        def move(conn: sa.Connection) -> StoredJob:
            self._db.check_fence(conn, fencing_token)
            row = _read(conn, job_id, expected_version)
            check_transition(job_id, JobState(row["state"]), to_state)
            values = _changes(row, to_state, now)
            if wait_budget is not None:
                values["wait_budget"] = wait_budget
            _write(conn, row, values, to_state, now, reason, actor, fencing_token)
            self._enter_onprem_run(conn, [row], to_state, now)
            return to_stored_job({**row, **values})

        return run(self._engine, move)

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
        """A user's change to one job in one write (``Lifecycle.amend``)."""
        now = to_time(self._db.now(at))

        def write(conn: sa.Connection) -> StoredJob:
            row = _read(conn, job_id, expected_version)
            state = JobState(row["state"])
            to_state = change.to_state or state
            values: dict[str, Any] = {"version": row["version"] + 1}
            if change.to_state is not None:
                check_transition(job_id, state, to_state)
                values = _changes(row, to_state, now)
            if change.hold is not None:
                values["held_reason"] = change.hold
            if change.release:
                values.update(held_reason=None, queued_at=now)
            if change.gpus is not None:
                values["gpus"] = change.gpus
            if change.name is not None:
                values["name"] = change.name
            if change.extra is not None:
                values["extra"] = dict(change.extra)
            if change.rebudget:
                values["wait_budget"] = None
            _write(conn, row, values, to_state, now, reason, actor, None)
            return to_stored_job({**row, **values})

        return run(self._engine, write)

    def transition_many(
        self,
        moves: Sequence[Move],
        to_state: JobState,
        *,
        actor: str,
        fencing_token: int | None = None,
        at: float | None = None,
    ) -> Moved:
        """Move many jobs to ``to_state`` in one transaction (see the module docstring).
        Raises ``StaleLeader`` (then nothing changes); never ``IllegalTransition``."""
        now = to_time(self._db.now(at))

        def move_all(conn: sa.Connection) -> Moved:
            self._db.check_fence(conn, fencing_token)
            rows = self._locked_rows(conn, [m.job_id for m in moves])
            return self._write_moves(conn, moves, rows, to_state, now, actor, fencing_token)

        return run(self._engine, move_all)

    def _write_moves(
        self,
        conn: sa.Connection,
        moves: Sequence[Move],
        rows: dict[str, Any],
        to_state: JobState,
        now: datetime,
        actor: str,
        fencing_token: int | None,
    ) -> Moved:
        """``transition_many``'s writes, given the jobs' ``rows`` by id (locked; taken from
        as they are used): a job without one, or whose state does not allow the move, is
        skipped."""
        moved: list[StoredJob] = []
        skipped: list[str] = []
        events: list[dict[str, Any]] = []
        ended: list[Any] = []
        updates: dict[tuple[str, ...], list[dict[str, Any]]] = {}
        for m in moves:
            row = rows.pop(m.job_id, None)  # a job named twice moves once
            if row is None or to_state not in ALLOWED[JobState(row["state"])]:
                skipped.append(m.job_id)
                continue
            values = _changes(row, to_state, now)
            if m.wait_budget is not None:
                values["wait_budget"] = m.wait_budget
            if m.predicted_runtime is not None:
                values["predicted_runtime"] = m.predicted_runtime
            updates.setdefault(tuple(sorted(values)), []).append(
                {"b_id": m.job_id, "b_version": row["version"], **values}
            )
            events.append(
                {
                    "job_id": m.job_id,
                    "at": now,
                    "from_state": row["state"],
                    "to_state": to_state.value,
                    "reason": m.reason,
                    "actor": actor,
                    "fencing_token": fencing_token,
                }
            )
            moved.append(to_stored_job({**row, **values}))
            ended.append(row)
        for changes in updates.values():
            _update_at_versions(conn, changes)
        _insert_events(conn, events)
        self._enter_onprem_run(conn, ended, to_state, now)
        return Moved(moved, skipped)

    def admit(
        self,
        moves: Sequence[Move],
        *,
        actor: str,
        fencing_token: int | None = None,
        at: float | None = None,
    ) -> Admitted:
        """``Lifecycle.admit``: on PostgreSQL the jobs still submitted are queued and their
        events written in one statement (``_admit_at_once``) that reads nothing back, where
        ``transition_many`` reads and locks each row, then writes it and its event; elsewhere
        ``transition_many``'s own steps for the jobs still submitted."""
        now = to_time(self._db.now(at))

        def admit_all(conn: sa.Connection) -> Admitted:
            self._db.check_fence(conn, fencing_token)
            if self._db.is_postgres:
                return _admit_at_once(conn, moves, actor, fencing_token, now)
            rows = self._locked_rows(conn, [m.job_id for m in moves])
            submitted = {i: r for i, r in rows.items() if r["state"] == JobState.SUBMITTED.value}
            moved = self._write_moves(
                conn, moves, submitted, JobState.QUEUED, now, actor, fencing_token
            )
            return Admitted([m.job.id for m in moved.moved], moved.skipped)

        return run(self._engine, admit_all)

    def _locked_rows(self, conn: sa.Connection, ids: list[str]) -> dict[str, Any]:
        """The rows of these jobs by id, locked ``FOR UPDATE`` on PostgreSQL. There the ids
        go as one array (``= ANY``): the statement's text is the same for every batch, so
        psycopg converts it once and prepares it, where an ``IN`` list is a new statement
        of one placeholder per id each time, and the rows are locked in id order whatever
        the plan (the admission's order: ``_admit_at_once``). SQLite reads them in chunks of
        ``IN`` lists."""
        if self._db.is_postgres:
            query = (
                sa.select(JOBS)
                .where(JOBS.c.id == sa.any_(_IDS))
                .order_by(JOBS.c.id)  # locked in id order, as the admission locks them
                .with_for_update()
            )
            found = conn.execute(query, {"ids": ids}).mappings()
            return {r["id"]: r for r in found}
        rows: dict[str, Any] = {}
        for clause in in_chunks(JOBS.c.id, ids):
            rows.update(
                (r["id"], r) for r in conn.execute(sa.select(JOBS).where(clause)).mappings()
            )
        return rows

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
        """Move up to ``limit`` jobs from the head of ``from_state``'s queue to ``to_state``
        (FIFO); concurrent claimers get disjoint sets."""
        check_transition("(claim)", from_state, to_state)
        now = to_time(self._db.now(at))

        def take(conn: sa.Connection) -> list[StoredJob]:
            self._db.check_fence(conn, fencing_token)
            query = (
                sa.select(JOBS)
                .where(JOBS.c.state == from_state.value)
                .order_by(JOBS.c.queued_at, JOBS.c.id)
                .limit(limit)
            )
            if self._db.is_postgres:
                query = query.with_for_update(skip_locked=True)
            claimed = []
            for row in conn.execute(query).mappings().all():
                values = _changes(row, to_state, now)
                conn.execute(sa.update(JOBS).where(JOBS.c.id == row["id"]).values(**values))
                claimed.append({**row, **values})
            if claimed:
                conn.execute(
                    sa.insert(EVENTS),
                    [
                        {
                            "job_id": r["id"],
                            "at": now,
                            "from_state": from_state.value,
                            "to_state": to_state.value,
                            "reason": reason,
                            "actor": actor,
                            "fencing_token": fencing_token,
                        }
                        for r in claimed
                    ],
                )
            return [to_stored_job(r) for r in claimed]

        return run(self._engine, take)

    def _enter_onprem_run(
        self, conn: sa.Connection, rows: Sequence[Any], to_state: JobState, now: datetime
    ) -> None:
        """Jobs leaving ``running_onprem`` have their run entered in the ledger (GPU-hours)
        in the same transaction, so it is entered exactly once."""
        if to_state is JobState.RUNNING_ONPREM:
            return
        running = [r for r in rows if r["state"] == JobState.RUNNING_ONPREM.value]
        usage = onprem_rows(conn, running, to_epoch(now), chunk=None)
        if usage:
            enter(conn, usage, self._db.is_postgres)

    def hold(self, reasons: Mapping[str, str]) -> None:
        """Say why each of these ``submitted`` jobs is held out of the queue (not a state
        change: no event, the version stays). Jobs no longer submitted are left alone."""

        def write(conn: sa.Connection) -> None:
            for job_id, reason in sorted(reasons.items()):
                conn.execute(
                    sa.update(JOBS)
                    .where(JOBS.c.id == job_id, JOBS.c.state == JobState.SUBMITTED.value)
                    .values(held_reason=reason)
                )

        if reasons:
            run(self._engine, write)

    def set_estimates(
        self,
        job_id: str,
        *,
        predicted_runtime: float | None = None,
        wait_budget: float | None = None,
    ) -> None:
        """Record the runtime estimate and wait budget the policy uses (not a state change,
        so the version stays)."""
        values: dict[str, Any] = {}
        if predicted_runtime is not None:
            values["predicted_runtime"] = predicted_runtime
        if wait_budget is not None:
            values["wait_budget"] = wait_budget
        if not values:
            return

        def write(conn: sa.Connection) -> None:
            if (
                conn.execute(sa.update(JOBS).where(JOBS.c.id == job_id).values(**values)).rowcount
                != 1
            ):
                raise JobNotFound(job_id)

        run(self._engine, write)

    # ---- on-prem placements -----------------------------------------------------------
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
        ``gpu_types``: each part's node GPU type (on-prem use is priced by it)."""
        now = to_time(self._db.now(at))
        kinds = list(gpu_types or ())
        kinds += [None] * (len(placement) - len(kinds))

        def write(conn: sa.Connection) -> int:
            self._db.check_fence(conn, fencing_token)
            last = conn.execute(
                sa.select(sa.func.max(PLACEMENTS.c.attempt)).where(PLACEMENTS.c.job_id == job_id)
            ).scalar()
            attempt = int(last or 0) + 1
            conn.execute(
                sa.insert(PLACEMENTS),
                [
                    {
                        "job_id": job_id,
                        "attempt": attempt,
                        "part": i,
                        "node_index": p.node,
                        "node_name": p.node_name,
                        "gpus": p.gpus,
                        "cpus": p.cpus,
                        "memory_mb": p.memory_mb,
                        "gpu_type": kinds[i],
                        "placed_at": now,
                        "fencing_token": fencing_token,
                    }
                    for i, p in enumerate(placement)
                ],
            )
            return attempt

        return run(self._engine, fk_guard(job_id, write))


#: jobs' ids as one array parameter (PostgreSQL)
_IDS = sa.bindparam("ids", type_=postgresql.ARRAY(JOBS.c.id.type))
#: one row's version check and its new values, for ``_update_at_versions``
_AT_VERSION = sa.update(JOBS).where(
    JOBS.c.id == sa.bindparam("b_id"), JOBS.c.version == sa.bindparam("b_version")
)
#: the same check in ``unnest_update``'s terms: the keys that find a job, and their columns
_AT_VERSION_KEYS = {"b_id": "id", "b_version": "version"}


def _update_at_versions(conn: sa.Connection, changes: Sequence[dict[str, Any]]) -> None:
    """Each job's new values, written only at the version read (``b_id``, ``b_version``; the
    other keys are the columns set, the same in every item), all in one statement: on
    PostgreSQL one ``UPDATE ... FROM unnest(...)``, elsewhere one statement executed for
    each. A job found at another version raises ``StaleVersion`` (it cannot happen under the
    row lock taken with the read: never write blindly)."""
    if conn.dialect.name == "postgresql":
        done = unnest_update(conn, JOBS, changes, keys=_AT_VERSION_KEYS)
    else:
        done = conn.execute(_AT_VERSION, list(changes)).rowcount
    if done == len(changes):
        return
    ids = [c["b_id"] for c in changes]
    found: dict[str, int] = {}
    for clause in in_chunks(JOBS.c.id, ids):
        rows = conn.execute(sa.select(JOBS.c.id, JOBS.c.version).where(clause))
        found.update((str(job_id), int(version)) for job_id, version in rows)
    for c in changes:
        if found.get(c["b_id"]) != c["version"]:
            raise StaleVersion(c["b_id"], c["b_version"], found.get(c["b_id"]))
    raise StaleVersion(ids[0], changes[0]["b_version"], None)


def _admit_at_once(
    conn: sa.Connection,
    moves: Sequence[Move],
    actor: str,
    fencing_token: int | None,
    now: datetime,
) -> Admitted:
    """PostgreSQL: ``Lifecycle.admit`` in one statement (``_ADMIT_SQL``). The moves go as
    arrays, a job named twice only once (its first move: an ``UPDATE ... FROM`` would take
    either); the statement first locks the jobs still submitted in id order, as
    ``transition_many``'s locked read does (two statements taking the same jobs in opposite
    orders deadlock: ``tests/integration/db/test_db_lock_order.py``), and the lock's re-check
    of the state on a row another transaction changed meanwhile stands for that read."""
    first: dict[str, Move] = {}
    for m in moves:
        first.setdefault(m.job_id, m)
    params = (
        [m.job_id for m in first.values()],
        [m.reason for m in first.values()],
        [m.wait_budget for m in first.values()],
        [m.predicted_runtime for m in first.values()],
        now,
        now,
        actor,
        fencing_token,
    )
    done = set(conn.exec_driver_sql(_admit_sql(conn.dialect), params).scalars())
    admitted, skipped = [], []
    for m in moves:
        if m.job_id in done and first.get(m.job_id) is m:
            admitted.append(m.job_id)
        else:
            skipped.append(m.job_id)
    return Admitted(admitted, skipped)


@functools.lru_cache(maxsize=4)
def _admit_sql(dialect: sa.Dialect) -> str:
    """``_admit_at_once``'s statement: each job still submitted queued with ``_changes``'s
    values (the version bumped, the held reason cleared and ``queued_at`` re-stamped after a
    hold, the wait budget and predicted runtime when given), and its event, in the order of
    the moves."""
    at = EVENTS.c.at.type.compile(dialect)
    submitted, queued = JobState.SUBMITTED.value, JobState.QUEUED.value
    return (
        "WITH m AS (SELECT * FROM unnest(%b::varchar[], %b::text[], %b::float8[], "
        "%b::float8[]) WITH ORDINALITY AS m(id, reason, budget, runtime, n)), "
        f"locked AS MATERIALIZED (SELECT m.* FROM {JOBS.name} AS j JOIN m ON j.id = m.id "
        f"WHERE j.state = '{submitted}' ORDER BY j.id FOR UPDATE OF j), "
        f"moved AS (UPDATE {JOBS.name} AS j SET state = '{queued}', version = j.version + 1, "
        "held_reason = NULL, "
        f"queued_at = CASE WHEN j.held_reason IS NULL THEN j.queued_at ELSE %s::{at} END, "
        "wait_budget = COALESCE(m.budget, j.wait_budget), "
        "predicted_runtime = COALESCE(m.runtime, j.predicted_runtime) "
        f"FROM locked AS m WHERE j.id = m.id AND j.state = '{submitted}' "
        "RETURNING j.id, m.reason, m.n), "
        f"events AS (INSERT INTO {EVENTS.name} "
        "(job_id, at, from_state, to_state, reason, actor, fencing_token) "
        f"SELECT id, %s::{at}, '{submitted}', '{queued}', reason, %s, %s::bigint FROM moved "
        "ORDER BY n) "
        "SELECT id FROM moved"
    )


def _insert_events(conn: sa.Connection, events: Sequence[dict[str, Any]]) -> None:
    """The events of a batch, in its order: on PostgreSQL one ``INSERT ... SELECT FROM
    unnest(...)``, elsewhere in chunks of multi-row ``INSERT`` statements."""
    if not events:
        return
    if conn.dialect.name == "postgresql":
        unnest_insert(conn, EVENTS, events)
        return
    for part in chunks(events):
        conn.execute(sa.insert(EVENTS), list(part))


def _changes(row: Any, to_state: JobState, now: datetime) -> dict[str, Any]:
    """Column changes that come with entering ``to_state`` at ``now``."""
    values: dict[str, Any] = {"state": to_state.value, "version": row["version"] + 1}
    if row["held_reason"] is not None:
        values["held_reason"] = None  # only a submitted job is held
    if to_state in _STARTED:
        values.update(started_at=now, ran_on=_STARTED[to_state])
    elif to_state is JobState.BURSTING:
        values["ran_on"] = "cloud"
    elif to_state is JobState.QUEUED and row["state"] != JobState.SUBMITTED.value:
        values.update(queued_at=now, started_at=None, ran_on=None)  # Star-Wait re-arrival
    elif to_state is JobState.QUEUED and row["held_reason"] is not None:
        values["queued_at"] = now  # let in after a hold: its wait budget starts now
    elif to_state.terminal:
        values["ended_at"] = now
        started = row["started_at"]
        if started is not None:
            values["runtime"] = to_epoch(now) - to_epoch(started)
    return values


def _read(conn: sa.Connection, job_id: str, expected_version: int | None) -> Any:
    """The job's row, checked against ``expected_version`` (``JobNotFound``, ``StaleVersion``)."""
    row = conn.execute(sa.select(JOBS).where(JOBS.c.id == job_id)).mappings().first()
    if row is None:
        raise JobNotFound(job_id)
    if expected_version is not None and row["version"] != expected_version:
        raise StaleVersion(job_id, expected_version, row["version"])
    return row


def _write(
    conn: sa.Connection,
    row: Any,
    values: dict[str, Any],
    to_state: JobState,
    now: datetime,
    reason: str,
    actor: str,
    fencing_token: int | None,
) -> None:
    """``values`` on ``row``'s job at the version read (``StaleVersion`` if it moved), and
    the event that says why."""
    job_id = row["id"]
    done = conn.execute(
        sa.update(JOBS)
        .where(JOBS.c.id == job_id, JOBS.c.version == row["version"])
        .values(**values)
    )
    if done.rowcount != 1:
        actual = conn.execute(sa.select(JOBS.c.version).where(JOBS.c.id == job_id))
        raise StaleVersion(job_id, row["version"], actual.scalar())
    conn.execute(
        sa.insert(EVENTS).values(
            job_id=job_id,
            at=now,
            from_state=row["state"],
            to_state=to_state.value,
            reason=reason,
            actor=actor,
            fencing_token=fencing_token,
        )
    )
