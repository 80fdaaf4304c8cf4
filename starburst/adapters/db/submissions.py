"""New jobs in the store (``SqlSubmissions``, the ``Submissions`` port): idempotent
submission of one job or a batch, with its ``submitted`` event.

Invariants:
- A job row and its ``submitted`` event are written in one transaction; nothing half-written
  survives a lost connection. On PostgreSQL that transaction is one statement (owners,
  jobs and events together, ``_insert_at_once``): a batch costs one round trip, not one per
  table plus ``BEGIN`` and ``COMMIT``.
- An idempotency key already known returns the job it made (the database skips the row on
  the key's unique index); a key repeated inside a batch makes one job.
- A group commit's writer (``SqlSubmissionWriter``) holds one PostgreSQL connection across
  its batches instead of taking one from the pool (and pinging it) for each statement. A
  batch the store leaves room for is one round trip (``submit_if_room``: the statement
  reads the waiting jobs of its users and teams, then writes, or writes nothing); any
  other is two, its backlog and its write. Any error releases the held connection, so
  when a write finds it dropped, the group commit screens the batch again and the backlog
  read takes a fresh one (it asks again on a fresh one itself, as the pool's ping would).
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable, Collection, Iterable, Sequence
from datetime import datetime
from typing import Any, TypeVar

import sqlalchemy as sa

from starburst.core.lifecycle import JobState
from starburst.core.records import (
    FIRST_VERSION,
    DuplicateJob,
    JobSpec,
    Keyed,
    Submission,
    keyed,
)
from starburst.core.submit_limits import Backlog, Room, write_if_room

from .base import Database, chunks, in_chunks, unnest_parts
from .convert import spec_columns, to_stored_job, to_time
from .engine import DatabaseUnavailable, run_statements, translate_errors
from .jobs import WAITING, read_backlog
from .models import JobEventRow, JobRow, TeamRow, UserRow, table

JOBS = table(JobRow)
EVENTS = table(JobEventRow)
TEAMS = table(TeamRow)
USERS = table(UserRow)

T = TypeVar("T")


class SqlSubmissions:
    """Submission over the shared ``Database``."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._engine = db.engine

    def submit(
        self,
        spec: JobSpec,
        *,
        idempotency_key: str | None = None,
        actor: str | None = None,
        at: float | None = None,
    ) -> Submission:
        """Store a new job in ``submitted``; a known ``idempotency_key`` returns its job."""
        return self.submit_many([(spec, idempotency_key, actor)], at=at)[0]

    def submit_many(
        self,
        items: Sequence[JobSpec | Keyed],
        *,
        actor: str | None = None,
        at: float | None = None,
    ) -> list[Submission]:
        """Submit a batch in one transaction (all or nothing); results in input order. An
        item's own actor (the API commits concurrent requests of different callers
        together) or else ``actor``."""
        # PostgreSQL writes the batch in one statement, whole on its own: no transaction
        # around it (``_insert_at_once``); the reads before and after it write nothing
        return run_statements(self._engine, self._batch(items, actor, at))

    def _batch(
        self, items: Sequence[JobSpec | Keyed], actor: str | None, at: float | None
    ) -> Callable[[sa.Connection], list[Submission]]:
        """The write of ``submit_many``, to run on a connection (its own or a writer's)."""
        triples = keyed(items, actor)
        now = to_time(self._db.now(at))
        return lambda conn: _written(self._submit(conn, triples, now, None))

    def _batch_if_room(
        self, items: Sequence[Keyed], room: Room
    ) -> Callable[[sa.Connection], list[Submission] | None]:
        """PostgreSQL: the write of ``SqlSubmissionWriter.submit_if_room``, to run on a
        connection (the backlog's check is part of the batch's one statement)."""
        triples = keyed(items, None)
        now = to_time(self._db.now(None))
        return lambda conn: self._submit(conn, triples, now, room)

    def writer(self) -> SqlSubmissionWriter:
        """A group commit's writer (``Submissions.writer``; module docstring)."""
        return SqlSubmissionWriter(self, self._db)

    def _submit(
        self,
        conn: sa.Connection,
        triples: list[tuple[JobSpec, str | None, str | None]],
        now: datetime,
        room: Room | None,
    ) -> list[Submission] | None:
        """The batch written; with a ``room`` (PostgreSQL), None instead, writing nothing, if
        the waiting jobs the store holds do not leave every user and team its room."""
        rows: list[dict[str, Any]] = []
        by_key: dict[str, dict[str, Any]] = {}
        actor_of: dict[int, str] = {}  # id(row) → who its event names
        for spec, key, actor in triples:
            if key is not None and key in by_key:
                rows.append(by_key[key])  # repeated within the batch: the first one wins
                continue
            row = {
                "id": spec.id or uuid.uuid4().hex,
                "idempotency_key": key,
                **spec_columns(spec),
                "state": JobState.SUBMITTED.value,
                "version": FIRST_VERSION,
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
            actor_of[id(row)] = actor or row["user_name"] or "unknown"
            if key is not None:
                by_key[key] = row
        fresh = list({id(row): row for row in rows}.values())
        given = [spec.id for spec, _, _ in triples if spec.id is not None]
        taken = self._existing_id(conn, given) if given else None
        if taken is not None:
            raise DuplicateJob(taken)
        specs = [spec for spec, _, _ in triples]
        try:
            if self._db.is_postgres:
                inserted = _insert_at_once(conn, specs, fresh, actor_of, now, room)
            else:
                inserted = self._insert(conn, specs, fresh, actor_of, now)
        except sa.exc.IntegrityError:  # an id taken by a concurrent submission
            raise DuplicateJob(", ".join(given)) from None
        if inserted is None:
            return None
        created = [r for r in fresh if r["id"] in inserted]
        existing = self._rows_by_key(
            conn, {r["idempotency_key"]: r for r in fresh if r["id"] not in inserted}
        )
        made = {id(r) for r in created}
        result: list[Submission] = []
        for row in rows:
            key = row["idempotency_key"]
            stored = row if id(row) in made or key is None else existing[key]
            result.append(Submission(to_stored_job(stored), id(row) in made and stored is row))
        return self._first_only(result)

    def _insert(
        self,
        conn: sa.Connection,
        specs: list[JobSpec],
        fresh: list[dict[str, Any]],
        actor_of: dict[int, str],
        now: datetime,
    ) -> set[str]:
        """Owners, jobs and the new jobs' events, statement by statement (SQLite); the ids
        of the jobs inserted (a row whose key was known is skipped by the database)."""
        self._ensure_owners(conn, specs, now)
        # RETURNING makes SQLAlchemy batch the rows into multi-row INSERTs ("insertmanyvalues")
        statement = (
            self._db.insert(JOBS)
            .on_conflict_do_nothing(index_elements=["idempotency_key"])
            .returning(JOBS.c.id)
        )
        inserted: set[str] = set()
        for part in chunks(fresh):
            inserted.update(conn.execute(statement, list(part)).scalars())
        events = [_event(r, actor_of[id(r)], now) for r in fresh if r["id"] in inserted]
        for part in chunks(events):
            conn.execute(sa.insert(EVENTS).returning(EVENTS.c.id), list(part)).all()
        return inserted

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
        teams, users = _owners(specs)
        if teams:
            conn.execute(
                self._db.insert(TEAMS).on_conflict_do_nothing(),
                [{"name": t, "created_at": now} for t in teams],
            )
        if users:
            conn.execute(
                self._db.insert(USERS).on_conflict_do_nothing(),
                [
                    {"name": u, "team_name": t, "email": None, "created_at": now}
                    for u, t in users.items()
                ],
            )


class SqlSubmissionWriter:
    """Backlogs and batches over one held connection (PostgreSQL; elsewhere each call
    runs as ``SqlJobs.backlog`` and ``SqlSubmissions.submit_many`` do)."""

    def __init__(self, submissions: SqlSubmissions, db: Database) -> None:
        self._submissions, self._db = submissions, db
        self._conn: sa.Connection | None = None

    def backlog(
        self,
        *,
        users: Collection[str],
        teams: Collection[str],
        arrays: Collection[str],
        keys: Collection[str],
    ) -> Backlog:
        if not (users or teams or arrays or keys):
            return Backlog()

        def read(conn: sa.Connection) -> Backlog:
            return read_backlog(conn, users=users, teams=teams, arrays=arrays, keys=keys)

        held = self._conn is not None
        try:
            return self._run(read)
        except DatabaseUnavailable:
            if not held:
                raise
            return self._run(read)  # on a fresh connection

    def submit_many(self, items: Sequence[Keyed]) -> list[Submission]:
        return self._run(self._submissions._batch(items, None, None))

    def submit_if_room(self, items: Sequence[Keyed], room: Room) -> list[Submission] | None:
        if self._db.is_postgres:
            return self._run(self._submissions._batch_if_room(items, room))
        return write_if_room(self, items, room)

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    def _run(self, work: Callable[[sa.Connection], T]) -> T:
        if not self._db.is_postgres:
            return run_statements(self._db.engine, work)
        try:
            with translate_errors(self._db.engine):
                if self._conn is None:
                    self._conn = self._db.engine.connect().execution_options(
                        isolation_level="AUTOCOMMIT"
                    )
                return work(self._conn)
        except BaseException:
            self.close()  # whatever failed, the next call starts on a fresh connection
            raise


def _owners(specs: Iterable[JobSpec]) -> tuple[list[str], dict[str, str | None]]:
    """The teams a batch names, and each user it names with one of the teams it gives
    that user (one row per user name): the owner rows the batch may create."""
    teams = sorted({s.team for s in specs if s.team})
    pairs = sorted({(s.user, s.team) for s in specs if s.user}, key=lambda p: p[0] or "")
    return teams, {str(u): t for u, t in reversed(pairs)}


def _event(row: dict[str, Any], actor: str, now: datetime) -> dict[str, Any]:
    return {
        "job_id": row["id"],
        "at": now,
        "from_state": None,
        "to_state": row["state"],
        "reason": "submitted",
        "actor": actor,
        "fencing_token": None,
    }


def _insert_at_once(
    conn: sa.Connection,
    specs: list[JobSpec],
    fresh: list[dict[str, Any]],
    actor_of: dict[int, str],
    now: datetime,
    room: Room | None,
) -> set[str] | None:
    """PostgreSQL: owners, jobs and the new jobs' events in one statement (one round trip,
    whole or not at all, also outside a transaction); the ids of the jobs inserted. The
    events are written in the batch's order, as one statement per table writes them.

    With a ``room``, the statement first reads the waiting jobs of its users and teams
    (``waiting_counts``) and writes nothing, answering None, unless each is within its room:
    the group commit's backlog check and its write in one round trip, on one snapshot. The
    statement is prepared, so its plan may read ``waiting_counts`` whole (a hash join made
    while the table was small): a row per user and team with jobs, not per job.

    Every statement takes the keys it inserts in one order, the keys' own (teams and users
    by name, jobs by idempotency key): two writers whose batches share keys (two API
    replicas, a client that retried on another connection) then wait for each other at the
    first shared key instead of each holding one the other needs, which PostgreSQL ends only
    after ``deadlock_timeout`` (a second) by failing one statement."""
    teams, users = _owners(specs)
    jobs_sql, job_arrays = unnest_parts(
        conn.dialect,
        JOBS,
        sorted(fresh, key=_key_order),
        conflict="idempotency_key",
        returning="id",
        where=None if room is None else _IF_ROOM,
    )
    guard: list[list[Any]] = []
    if room is not None:  # (kind, name, room) of each user and team, an array for each
        rooms = [("user", name, left) for name, left in room.users.items()]
        rooms += [("team", name, left) for name, left in room.teams.items()]
        guard = [[r[i] for r in rooms] for i in range(3)]
    params: list[Any] = [
        *guard,
        now,
        teams,
        now,
        list(users),
        list(users.values()),
        *job_arrays,
        now,
        [r["id"] for r in fresh],
        [actor_of[id(r)] for r in fresh],
    ]
    sql = _at_once_sql(conn.dialect, jobs_sql, room is not None)
    if room is None:
        return {str(job_id) for job_id in conn.exec_driver_sql(sql, tuple(params)).scalars()}
    ok, ids = conn.exec_driver_sql(sql, tuple(params)).one()
    return {str(job_id) for job_id in ids} if ok else None


def _written(found: list[Submission] | None) -> list[Submission]:
    """A batch ``_submit`` wrote without a room to check: never None."""
    assert found is not None
    return found


def _key_order(row: dict[str, Any]) -> tuple[bool, str]:
    """Rows by idempotency key, those without one last (they cannot clash)."""
    key = row["idempotency_key"]
    return key is None, key or ""


#: the condition each insert of a batch written only if there is room adds (``_at_once_sql``)
_IF_ROOM = "(SELECT ok FROM room)"


@functools.lru_cache(maxsize=8)
def _at_once_sql(dialect: sa.Dialect, jobs_sql: str, if_room: bool) -> str:
    """``_insert_at_once``'s statement; ``if_room``: it first reads, as ``room``, whether no
    user or team given (kind, name, room) has more waiting jobs than its room, inserts only
    then, and answers one row (that, the ids inserted) instead of a row per id."""
    at = EVENTS.c.at.type.compile(dialect)
    where = f" WHERE {_IF_ROOM}" if if_room else ""
    guard = (
        "room AS (SELECT NOT EXISTS (SELECT FROM unnest(%b::varchar[], %b::varchar[], "
        f"%b::bigint[]) AS r(kind, name, room) JOIN {WAITING.name} AS w "
        "ON w.kind = r.kind AND w.name = r.name WHERE w.jobs > r.room) AS ok), "
        if if_room
        else ""
    )
    answer = (
        f"SELECT {_IF_ROOM}, ARRAY(SELECT id FROM new_jobs)"
        if if_room
        else "SELECT id FROM new_jobs"
    )
    return (
        f"WITH {guard}new_teams AS (INSERT INTO {TEAMS.name} (name, created_at) "
        f"SELECT t.name, %s::{at} FROM unnest(%b::varchar[]) AS t(name){where} "
        "ON CONFLICT DO NOTHING), "
        f"new_users AS (INSERT INTO {USERS.name} (name, team_name, email, created_at) "
        f"SELECT u.name, u.team, NULL, %s::{at} FROM unnest(%b::varchar[], %b::varchar[]) "
        f"AS u(name, team){where} ON CONFLICT DO NOTHING), "
        f"new_jobs AS ({jobs_sql}), "
        f"new_events AS (INSERT INTO {EVENTS.name} "
        "(job_id, at, from_state, to_state, reason, actor, fencing_token) "
        f"SELECT e.id, %s::{at}, NULL, '{JobState.SUBMITTED.value}', 'submitted', e.actor, NULL "
        "FROM unnest(%b::varchar[], %b::varchar[]) WITH ORDINALITY AS e(id, actor, n) "
        "JOIN new_jobs ON new_jobs.id = e.id ORDER BY e.n) "
        f"{answer}"
    )
