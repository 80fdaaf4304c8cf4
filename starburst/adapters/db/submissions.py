"""New jobs in the store (``SqlSubmissions``, the ``Submissions`` port): idempotent
submission of one job or a batch, with its ``submitted`` event.

Invariants:
- A job row and its ``submitted`` event are written in one transaction; nothing half-written
  survives a lost connection.
- An idempotency key already known returns the job it made (the database skips the row on
  the key's unique index); a key repeated inside a batch makes one job.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from starburst.core.lifecycle import JobState
from starburst.core.records import DuplicateJob, JobSpec, Keyed, Submission, keyed

from .base import Database, chunks, in_chunks, unnest_insert
from .convert import spec_columns, to_stored_job, to_time
from .engine import run
from .models import JobEventRow, JobRow, TeamRow, UserRow, table

JOBS = table(JobRow)
EVENTS = table(JobEventRow)


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
        triples = keyed(items, actor)
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
