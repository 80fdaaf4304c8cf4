"""Jobs in the store (``SqlJobs``, the ``JobStore`` port): idempotent submission, reads, the
queue and its change feed.

State changes and placements are written by ``transitions.SqlTransitions``, which
``SqlJobs`` is built with and hands those calls to.

Invariants:
- A job row and its ``submitted`` event are written in one transaction; nothing half-written
  survives a lost connection.
- The queue is read with keyset pagination on ``(queued_at, id)``: a page costs the same
  whatever its depth, and the cursor is stable under concurrent inserts.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Collection, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa

from starburst.core.capacity import Placement
from starburst.core.dependencies import parse_after
from starburst.core.errors import ConfigError
from starburst.core.lifecycle import JobState
from starburst.core.records import (
    Amendment,
    DuplicateJob,
    JobEvent,
    JobNotFound,
    JobSpec,
    Move,
    Moved,
    QueuePage,
    StoredJob,
    Submission,
)
from starburst.core.submit_limits import Backlog

from .base import Database, chunks, in_chunks, literal_in, unnest_insert
from .convert import spec_columns, to_event, to_stored_job, to_time
from .engine import run
from .models import JobEventRow, JobRow, TeamRow, UserRow, table
from .transitions import SqlTransitions

JOBS = table(JobRow)
EVENTS = table(JobEventRow)
_WAITING = (JobState.SUBMITTED, JobState.QUEUED)
#: the states in which an array element takes one of its array's slots
_IN_FLIGHT = (
    JobState.QUEUED,
    JobState.BURSTING,
    JobState.RUNNING_ONPREM,
    JobState.RUNNING_CLOUD,
)


def encode_cursor(queued_at: datetime, job_id: str) -> str:
    raw = f"{queued_at.isoformat()}|{job_id}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, str]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        stamp, job_id = raw.split("|", 1)
        when = datetime.fromisoformat(stamp)
    except (ValueError, UnicodeDecodeError):
        raise ConfigError(f"invalid queue cursor {cursor!r}") from None
    return (when if when.tzinfo else when.replace(tzinfo=UTC)), job_id


def like_literal(text: str) -> str:
    """``text`` matched literally by SQL LIKE (escaped with a backslash)."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def glob_to_like(pattern: str) -> str:
    """A shell glob (``*``, ``?``) as a SQL LIKE pattern escaped with a backslash."""
    return like_literal(pattern).replace("*", "%").replace("?", "_")


class SqlJobs:
    """Submission, queue and lifecycle over the shared ``Database``; state changes and
    placements are ``SqlTransitions``'s."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._engine = db.engine
        self._transitions = SqlTransitions(db)

    # ---- submission -------------------------------------------------------------------
    def submit(
        self,
        spec: JobSpec,
        *,
        idempotency_key: str | None = None,
        actor: str | None = None,
        at: float | None = None,
    ) -> Submission:
        """Store a new job in ``submitted``; a known ``idempotency_key`` returns its job."""
        return self.submit_many([(spec, idempotency_key)], actor=actor, at=at)[0]

    def submit_many(
        self,
        items: Sequence[JobSpec | tuple[JobSpec, str | None]],
        *,
        actor: str | None = None,
        at: float | None = None,
    ) -> list[Submission]:
        """Submit a batch in one transaction (all or nothing); results in input order."""
        pairs = [item if isinstance(item, tuple) else (item, None) for item in items]
        return self.submit_batch([(spec, key, actor) for spec, key in pairs], at=at)

    def submit_batch(
        self,
        items: Sequence[tuple[JobSpec, str | None, str | None]],
        *,
        at: float | None = None,
    ) -> list[Submission]:
        """``submit_many`` with an actor per item ``(spec, idempotency_key, actor)``: the
        API commits concurrent requests of different callers together."""
        triples = list(items)
        now = to_time(self._db.now(at))
        return run(self._engine, lambda conn: self._submit(conn, triples, now))

    def _submit(
        self,
        conn: sa.Connection,
        triples: list[tuple[JobSpec, str | None, str | None]],
        now: datetime,
    ) -> list[Submission]:
        self._ensure_owners(conn, [spec for spec, _, _ in triples], now)
        rows: list[dict[str, Any]] = []
        by_key: dict[str, dict[str, Any]] = {}
        actor_of: dict[int, str | None] = {}  # id(row) → who submitted it
        for spec, key, actor in triples:
            if key is not None and key in by_key:
                rows.append(by_key[key])  # repeated within the batch: the first one wins
                continue
            row = {
                "id": spec.id or uuid.uuid4().hex,
                "idempotency_key": key,
                **spec_columns(spec),
                "state": JobState.SUBMITTED.value,
                "version": 1,
                "submitted_at": now,
                "queued_at": now,
                "started_at": None,
                "ended_at": None,
                "runtime": None,
                "predicted_runtime": None,
                "wait_budget": None,
                "ran_on": None,
            }
            rows.append(row)
            actor_of[id(row)] = actor
            if key is not None:
                by_key[key] = row
        fresh = list({id(row): row for row in rows}.values())
        given = [spec.id for spec, _, _ in triples if spec.id is not None]
        taken = self._existing_id(conn, given) if given else None
        if taken is not None:
            raise DuplicateJob(taken)
        # RETURNING makes SQLAlchemy batch the rows into multi-row INSERTs ("insertmanyvalues")
        # and tells which rows were new; rows whose key was known are skipped by the database.
        statement = (
            self._db.insert(JOBS)
            .on_conflict_do_nothing(index_elements=["idempotency_key"])
            .returning(JOBS.c.id)
        )
        inserted: set[str] = set()
        try:
            if self._db.is_postgres and len(fresh) > 1:  # one short statement, arrays of values
                new = unnest_insert(conn, JOBS, fresh, conflict="idempotency_key", returning="id")
                inserted.update(str(job_id) for job_id in new)
            else:
                for part in chunks(fresh):
                    inserted.update(conn.execute(statement, list(part)).scalars())
        except sa.exc.IntegrityError:  # an id taken by a concurrent submission
            raise DuplicateJob(", ".join(given)) from None
        created = [r for r in fresh if r["id"] in inserted]
        existing = self._rows_by_key(
            conn, {r["idempotency_key"]: r for r in fresh if r["id"] not in inserted}
        )
        events = [
            {
                "job_id": r["id"],
                "at": now,
                "from_state": None,
                "to_state": r["state"],
                "reason": "submitted",
                "actor": actor_of[id(r)] or r["user_name"] or "unknown",
                "fencing_token": None,
            }
            for r in created
        ]
        if self._db.is_postgres and len(events) > 1:
            unnest_insert(conn, EVENTS, events)
        else:
            for part in chunks(events):
                conn.execute(sa.insert(EVENTS).returning(EVENTS.c.id), list(part)).all()
        made = {id(r) for r in created}
        result: list[Submission] = []
        for row in rows:
            key = row["idempotency_key"]
            stored = row if id(row) in made or key is None else existing[key]
            result.append(Submission(to_stored_job(stored), id(row) in made and stored is row))
        return self._first_only(result)

    @staticmethod
    def _first_only(result: list[Submission]) -> list[Submission]:
        """A key repeated inside one batch is ``created`` only at its first position."""
        seen: set[str] = set()
        out = []
        for sub in result:
            out.append(Submission(sub.job, sub.created and sub.job.id not in seen))
            seen.add(sub.job.id)
        return out

    def _rows_by_key(
        self, conn: sa.Connection, by_key: dict[str, dict[str, Any]]
    ) -> dict[str, Any]:
        found: dict[str, Any] = {}
        for clause in in_chunks(JOBS.c.idempotency_key, by_key):
            for row in conn.execute(sa.select(JOBS).where(clause)).mappings():
                found[row["idempotency_key"]] = row
        return found

    @staticmethod
    def _existing_id(conn: sa.Connection, ids: list[str]) -> str | None:
        for clause in in_chunks(JOBS.c.id, ids):
            hit = conn.execute(sa.select(JOBS.c.id).where(clause).limit(1)).scalar()
            if hit is not None:
                return str(hit)
        return None

    def _ensure_owners(self, conn: sa.Connection, specs: Iterable[JobSpec], now: datetime) -> None:
        teams = sorted({s.team for s in specs if s.team})
        users = sorted({(s.user, s.team) for s in specs if s.user}, key=lambda p: p[0] or "")
        if teams:
            conn.execute(
                self._db.insert(table(TeamRow)).on_conflict_do_nothing(),
                [{"name": t, "created_at": now} for t in teams],
            )
        if users:
            first = dict(reversed(users))  # one row per user name
            conn.execute(
                self._db.insert(table(UserRow)).on_conflict_do_nothing(),
                [
                    {"name": u, "team_name": t, "email": None, "created_at": now}
                    for u, t in first.items()
                ],
            )

    # ---- reading ----------------------------------------------------------------------
    def get(self, job_id: str) -> StoredJob:
        def read(conn: sa.Connection) -> StoredJob:
            row = conn.execute(sa.select(JOBS).where(JOBS.c.id == job_id)).mappings().first()
            if row is None:
                raise JobNotFound(job_id)
            return to_stored_job(row)

        return run(self._engine, read)

    def lookup(
        self, text: str, *, owner: str, everyone: bool = False, limit: int = 10
    ) -> list[StoredJob]:
        """Jobs whose id starts with ``text`` (``owner``'s only, unless ``everyone``) or
        ``owner``'s jobs named ``text``, oldest first, at most ``limit``: how a typed prefix
        or name is resolved."""
        by_id: sa.ColumnElement[bool] = JOBS.c.id.like(like_literal(text) + "%", escape="\\")
        if not everyone:
            by_id = sa.and_(by_id, JOBS.c.user_name == owner)
        by_name = sa.and_(JOBS.c.name == text, JOBS.c.user_name == owner)
        query = (
            sa.select(JOBS)
            .where(sa.or_(by_id, by_name))
            .order_by(JOBS.c.queued_at, JOBS.c.id)
            .limit(limit)
        )
        return run(self._engine, lambda c: [to_stored_job(r) for r in c.execute(query).mappings()])

    def states_of(self, job_ids: Iterable[str]) -> dict[str, JobState]:
        """The state of each of ``job_ids`` the store knows (unknown ids are left out)."""
        clauses = in_chunks(JOBS.c.id, job_ids)

        def read(conn: sa.Connection) -> dict[str, JobState]:
            found: dict[str, JobState] = {}
            for clause in clauses:
                query = sa.select(JOBS.c.id, JOBS.c.state).where(clause)
                found.update((i, JobState(s)) for i, s in conn.execute(query))
            return found

        return run(self._engine, read) if clauses else {}

    def find_by_key(self, idempotency_key: str) -> StoredJob | None:
        def read(conn: sa.Connection) -> StoredJob | None:
            query = sa.select(JOBS).where(JOBS.c.idempotency_key == idempotency_key)
            row = conn.execute(query).mappings().first()
            return None if row is None else to_stored_job(row)

        return run(self._engine, read)

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
        """Jobs in ``states`` in FIFO order (``queued_at``, then id), one page at a time;
        ``user``/``team`` and ``name`` (a shell glob: ``sweep-*``) narrow it in the database,
        so a page is one query however few of the jobs are theirs. ``held``: only jobs held
        out of the queue (True) or only the others (False)."""
        if limit < 1:
            raise ConfigError(f"page limit must be at least 1, got {limit}")
        query = (
            sa.select(JOBS)
            .where(literal_in(JOBS.c.state, [s.value for s in states]))
            .order_by(JOBS.c.queued_at, JOBS.c.id)
            .limit(limit + 1)
        )
        if user is not None:
            query = query.where(JOBS.c.user_name == user)
        if team is not None:
            query = query.where(JOBS.c.team_name == team)
        if name is not None:
            query = query.where(JOBS.c.name.ilike(glob_to_like(name), escape="\\"))
        if held is not None:
            is_held = JOBS.c.held_reason.is_not(None)
            query = query.where(is_held if held else sa.not_(is_held))
        if cursor is not None:
            when, job_id = decode_cursor(cursor)
            query = query.where(sa.tuple_(JOBS.c.queued_at, JOBS.c.id) > sa.tuple_(when, job_id))

        def read(conn: sa.Connection) -> QueuePage:
            rows = conn.execute(query).mappings().all()
            page = rows[:limit]
            last = page[-1] if len(rows) > limit else None
            nxt = encode_cursor(last["queued_at"], last["id"]) if last is not None else None
            return QueuePage([to_stored_job(r) for r in page], nxt)

        return run(self._engine, read)

    def events(self, job_id: str) -> list[JobEvent]:
        query = sa.select(EVENTS).where(EVENTS.c.job_id == job_id).order_by(EVENTS.c.id)
        return run(self._engine, lambda c: [to_event(r) for r in c.execute(query).mappings()])

    def last_event_id(self) -> int:
        """The id of the newest job event (0 when there is none): a change-feed position."""
        query = sa.select(sa.func.coalesce(sa.func.max(EVENTS.c.id), 0))
        return int(run(self._engine, lambda c: c.execute(query).scalar_one()))

    def state_changes(
        self, after_id: int, limit: int = 10_000
    ) -> tuple[list[tuple[str, JobState]], int]:
        """Jobs that changed state after event ``after_id``, oldest first, and the new position.

        A change feed for caches of the queue. Under concurrent writers an event may commit
        after a later id was read, so a cache fed by it must still treat the store's
        transition checks as the truth (and refresh in full now and then).
        """
        query = (
            sa.select(EVENTS.c.id, EVENTS.c.job_id, EVENTS.c.to_state)
            .where(EVENTS.c.id > after_id)
            .order_by(EVENTS.c.id)
            .limit(limit)
        )

        def read(conn: sa.Connection) -> tuple[list[tuple[str, JobState]], int]:
            rows = conn.execute(query).all()
            last = int(rows[-1][0]) if rows else after_id
            return [(str(r[1]), JobState(r[2])) for r in rows], last

        return run(self._engine, read)

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

    def array_in_flight(self, arrays: Iterable[str]) -> dict[str, int]:
        """How many elements of each array are queued, bursting or running (the slots a
        throttled array has taken, ``core.dependencies``); arrays with none are left out."""
        busy = [s.value for s in _IN_FLIGHT]
        clauses = in_chunks(JOBS.c.array_id, arrays)

        def read(conn: sa.Connection) -> dict[str, int]:
            found: dict[str, int] = {}
            for clause in clauses:
                query = (
                    sa.select(JOBS.c.array_id, sa.func.count())
                    .where(clause, literal_in(JOBS.c.state, busy))
                    .group_by(JOBS.c.array_id)
                )
                found.update((str(a), int(n)) for a, n in conn.execute(query))
            return found

        return run(self._engine, read) if clauses else {}

    def count(self, state: JobState) -> int:
        query = sa.select(sa.func.count()).select_from(JOBS).where(JOBS.c.state == state.value)
        return int(run(self._engine, lambda c: c.execute(query).scalar_one()))

    def held_count(self) -> int:
        query = (
            sa.select(sa.func.count())
            .select_from(JOBS)
            .where(JOBS.c.state == JobState.SUBMITTED.value, JOBS.c.held_reason.is_not(None))
        )
        return int(run(self._engine, lambda c: c.execute(query).scalar_one()))

    def backlog(
        self,
        *,
        users: Collection[str],
        teams: Collection[str],
        arrays: Collection[str],
        keys: Collection[str],
    ) -> Backlog:
        """The counts submission limits read (``JobStore.backlog``), grouped in the database:
        a few small queries whatever the size of others' backlogs."""
        waiting = literal_in(JOBS.c.state, [s.value for s in _WAITING])

        def counts(conn: sa.Connection, column: Any, names: Collection[str], *where: Any) -> Any:
            found: dict[str, int] = {}
            for clause in in_chunks(column, names):
                query = sa.select(column, sa.func.count()).where(clause, *where).group_by(column)
                found.update((str(n), int(c)) for n, c in conn.execute(query))
            return found

        def read(conn: sa.Connection) -> Backlog:
            known: set[str] = set()
            for clause in in_chunks(JOBS.c.idempotency_key, keys):
                known.update(
                    conn.execute(sa.select(JOBS.c.idempotency_key).where(clause)).scalars()
                )
            return Backlog(
                waiting_by_user=counts(conn, JOBS.c.user_name, users, waiting),
                waiting_by_team=counts(conn, JOBS.c.team_name, teams, waiting),
                array_sizes=counts(conn, JOBS.c.array_id, arrays),
                known_keys=frozenset(known),
            )

        return run(self._engine, read)

    def waits_of(self, job_ids: Collection[str]) -> dict[str, tuple[str, ...]]:
        """What each unfinished job of ``job_ids`` waits for (``JobStore.waits_of``)."""
        ended = [s.value for s in JobState if s.terminal]

        def read(conn: sa.Connection) -> dict[str, tuple[str, ...]]:
            found: dict[str, tuple[str, ...]] = {}
            for clause in in_chunks(JOBS.c.id, job_ids):
                query = sa.select(JOBS.c.id, JOBS.c.depends_on).where(
                    clause, sa.not_(literal_in(JOBS.c.state, ended))
                )
                for job_id, deps in conn.execute(query):
                    found[str(job_id)] = tuple(parse_after(d).job_id for d in deps or ())
            return found

        return run(self._engine, read) if job_ids else {}

    # ---- lifecycle --------------------------------------------------------------------
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
        return self._transitions.transition(
            job_id,
            to_state,
            reason=reason,
            actor=actor,
            fencing_token=fencing_token,
            expected_version=expected_version,
            at=at,
            wait_budget=wait_budget,
        )

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
        return self._transitions.amend(
            job_id,
            change,
            reason=reason,
            actor=actor,
            expected_version=expected_version,
            at=at,
        )

    def transition_many(
        self,
        moves: Sequence[Move],
        to_state: JobState,
        *,
        actor: str,
        fencing_token: int | None = None,
        at: float | None = None,
    ) -> Moved:
        return self._transitions.transition_many(
            moves, to_state, actor=actor, fencing_token=fencing_token, at=at
        )

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
        return self._transitions.claim(
            to_state,
            limit=limit,
            reason=reason,
            actor=actor,
            from_state=from_state,
            fencing_token=fencing_token,
            at=at,
        )

    def set_estimates(
        self,
        job_id: str,
        *,
        predicted_runtime: float | None = None,
        wait_budget: float | None = None,
    ) -> None:
        self._transitions.set_estimates(
            job_id, predicted_runtime=predicted_runtime, wait_budget=wait_budget
        )

    def record_placement(
        self,
        job_id: str,
        placement: Placement,
        *,
        fencing_token: int | None = None,
        at: float | None = None,
        gpu_types: Sequence[str | None] | None = None,
    ) -> int:
        return self._transitions.record_placement(
            job_id, placement, fencing_token=fencing_token, at=at, gpu_types=gpu_types
        )

    def placement(self, job_id: str) -> Placement:
        return self._transitions.placement(job_id)
