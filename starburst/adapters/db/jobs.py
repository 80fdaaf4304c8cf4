"""Reading jobs in the store (``SqlJobs``, the ``JobReads`` port): one or many, the queue,
the change feed, counts and placements.

New jobs are ``submissions.SqlSubmissions``'s; state changes, holds and placements are
written by ``transitions.SqlTransitions``. Each is a repository of its own over the shared
``Database``; none forwards to another.

Invariants:
- The queue is read with keyset pagination on ``(queued_at, id)``: a page costs the same
  whatever its depth, and the cursor is stable under concurrent inserts.
- A job's current placement is its highest ``attempt``.
"""

from __future__ import annotations

import base64
from collections.abc import Collection, Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa

from starburst.core.capacity import Part, Placement
from starburst.core.dependencies import parse_after
from starburst.core.errors import ConfigError
from starburst.core.lifecycle import JobState
from starburst.core.records import (
    InvalidPage,
    JobEvent,
    JobNotFound,
    QueuePage,
    StoredJob,
)
from starburst.core.submit_limits import Backlog

from .base import Database, in_chunks, literal_in, unprepared
from .convert import to_event, to_stored_job
from .engine import run, run_statements
from .models import JobEventRow, JobRow, PlacementRow, WaitingCountRow, table

JOBS = table(JobRow)
EVENTS = table(JobEventRow)
PLACEMENTS = table(PlacementRow)
WAITING = table(WaitingCountRow)
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
        raise InvalidPage(cursor) from None
    return (when if when.tzinfo else when.replace(tzinfo=UTC)), job_id


def like_literal(text: str) -> str:
    """``text`` matched literally by SQL LIKE (escaped with a backslash)."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def glob_to_like(pattern: str) -> str:
    """A shell glob (``*``, ``?``) as a SQL LIKE pattern escaped with a backslash."""
    return like_literal(pattern).replace("*", "%").replace("?", "_")


class SqlJobs:
    """Reads of jobs, the queue and the change feed over the shared ``Database``."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._engine = db.engine

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
        query = queue_query(
            limit=limit, cursor=cursor, states=states, user=user, team=team, name=name, held=held
        )

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

    def array_elements(self, array: str, *, limit: int = 10_000) -> list[StoredJob]:
        """The jobs of ``array`` in index order (the ``array_id`` index finds them)."""
        query = (
            sa.select(JOBS)
            .where(JOBS.c.array_id == array)
            .order_by(JOBS.c.submitted_at, JOBS.c.id)
            .limit(limit)
        )
        found = run(self._engine, lambda c: [to_stored_job(r) for r in c.execute(query).mappings()])
        return sorted(found, key=lambda s: s.job.submission_order())

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
        """The counts submission limits read (``JobReads.backlog``), grouped in the database:
        one query whatever the size of others' backlogs (a group commit reads it before
        every batch, so its round trips count)."""
        if not (users or teams or arrays or keys):
            return Backlog()
        return run_statements(
            self._engine,
            lambda conn: read_backlog(conn, users=users, teams=teams, arrays=arrays, keys=keys),
        )

    def waits_of(self, job_ids: Collection[str]) -> dict[str, tuple[str, ...]]:
        """What each unfinished job of ``job_ids`` waits for (``JobReads.waits_of``)."""
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

    def placement(self, job_id: str) -> Placement:
        """The job's latest placement (empty if it was never placed)."""
        latest = (
            sa.select(sa.func.max(PLACEMENTS.c.attempt))
            .where(PLACEMENTS.c.job_id == job_id)
            .scalar_subquery()
        )
        query = (
            sa.select(PLACEMENTS)
            .where(PLACEMENTS.c.job_id == job_id, PLACEMENTS.c.attempt == latest)
            .order_by(PLACEMENTS.c.part)
        )
        rows = run(self._engine, lambda c: c.execute(query).mappings().all())
        return tuple(
            Part(r["node_index"], r["node_name"], r["gpus"], r["cpus"], r["memory_mb"])
            for r in rows
        )


def queue_query(
    *,
    limit: int,
    cursor: str | None,
    states: Sequence[JobState],
    user: str | None,
    team: str | None,
    name: str | None,
    held: bool | None,
) -> Any:
    """``SqlJobs.queue``'s query: the page's rows and one more (is there a next page)."""
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
    return query


def read_backlog(
    conn: sa.Connection,
    *,
    users: Collection[str],
    teams: Collection[str],
    arrays: Collection[str],
    keys: Collection[str],
) -> Backlog:
    """``JobReads.backlog`` in one query on ``conn``. The waiting jobs of the users and teams
    asked for are read from ``waiting_counts`` (the triggers of migration 0015 keep it with
    every change of the jobs), not counted: a count reads every waiting job of the user, and
    a group commit reads the backlog before every batch. On PostgreSQL the query's text is
    always the same (one array per kind of name), so no statement is built and compiled per
    batch, and it is never prepared: PostgreSQL plans it afresh for the keys of each batch
    (``base.unprepared``)."""
    found: dict[str, dict[str, int]] = {"key": {}, "user": {}, "team": {}, "array": {}}
    if conn.dialect.name == "postgresql":
        params = tuple(list(names) for names in (keys, users, teams, arrays))
        rows: Any = unprepared(conn, _BACKLOG_SQL, params)
    else:
        rows = conn.execute(_backlog_query(users=users, teams=teams, arrays=arrays, keys=keys))
    for what, name, count in rows:
        found[what][str(name)] = int(count)
    return Backlog(
        waiting_by_user=found["user"],
        waiting_by_team=found["team"],
        array_sizes=found["array"],
        known_keys=frozenset(found["key"]),
    )


#: rows (kind, name, count): a known key, the waiting jobs of an asked-for user or team, an
#: array's size
_BACKLOG_SQL = (
    f"SELECT 'key', idempotency_key, 1 FROM {JOBS.name} "
    "WHERE idempotency_key = ANY(%b::varchar[]) "
    f"UNION ALL SELECT kind, name, jobs FROM {WAITING.name} "
    "WHERE jobs > 0 AND (kind = 'user' AND name = ANY(%b::varchar[]) "
    "OR kind = 'team' AND name = ANY(%b::varchar[])) "
    f"UNION ALL SELECT 'array', array_id, count(*) FROM {JOBS.name} "
    "WHERE array_id = ANY(%b::varchar[]) GROUP BY array_id"
)


def _backlog_query(
    *,
    users: Collection[str],
    teams: Collection[str],
    arrays: Collection[str],
    keys: Collection[str],
) -> Any:
    """``read_backlog``'s query elsewhere (SQLite: ``IN`` lists in chunks)."""
    kind: Any = sa.literal_column("'key'").label("kind")
    parts: list[Any] = [
        sa.select(kind, JOBS.c.idempotency_key, sa.literal(1)).where(clause)
        for clause in in_chunks(JOBS.c.idempotency_key, keys)
    ]
    for name, names in (("user", users), ("team", teams)):
        parts += [
            sa.select(WAITING.c.kind, WAITING.c.name, WAITING.c.jobs).where(
                WAITING.c.kind == name, WAITING.c.jobs > 0, clause
            )
            for clause in in_chunks(WAITING.c.name, names)
        ]
    label: Any = sa.literal_column("'array'")
    parts += [
        sa.select(label, JOBS.c.array_id, sa.func.count()).where(clause).group_by(JOBS.c.array_id)
        for clause in in_chunks(JOBS.c.array_id, arrays)
    ]
    return sa.union_all(*parts)
