"""New jobs in the in-memory store (``MemorySubmissions``, the ``Submissions`` port).

Invariants: as in the SQL store — a job and its ``submitted`` event appear together or not at
all; a known idempotency key returns its job; a given id that exists, or that two new jobs of
a batch share, raises ``DuplicateJob`` and keeps nothing of the batch.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Iterable, Sequence

from starburst.core.records import (
    DuplicateJob,
    JobEvent,
    JobSpec,
    Keyed,
    StoredJob,
    Submission,
    User,
    keyed,
)
from starburst.core.submit_limits import Backlog, Room, write_if_room

from .jobs import MemoryJobs
from .tables import JobRow, MemoryDatabase


class MemorySubmissions:
    """Submission over the shared ``MemoryDatabase``."""

    def __init__(self, db: MemoryDatabase) -> None:
        self._db = db
        self._t = db.tables
        self._lock = db.lock

    def submit(
        self,
        spec: JobSpec,
        *,
        idempotency_key: str | None = None,
        actor: str | None = None,
        at: float | None = None,
    ) -> Submission:
        return self.submit_many([(spec, idempotency_key, actor)], at=at)[0]

    def submit_many(
        self,
        items: Sequence[JobSpec | Keyed],
        *,
        actor: str | None = None,
        at: float | None = None,
    ) -> list[Submission]:
        triples = keyed(items, actor)
        with self._lock:
            now = self._db.now(at)
            self._refuse_taken_ids(triples)
            self._ensure_owners([spec for spec, _, _ in triples], now)
            out: list[Submission] = []
            for spec, key, who in triples:
                known = self._t.by_key.get(key) if key is not None else None
                if known is not None:
                    out.append(Submission(self._t.jobs[known].stored(), False))
                else:
                    out.append(Submission(self._create(spec, key, who, now), True))
            return out

    def writer(self) -> MemorySubmissionWriter:
        """A group commit's writer (``Submissions.writer``): nothing to hold here."""
        return MemorySubmissionWriter(self, MemoryJobs(self._db))

    def _refuse_taken_ids(self, items: Sequence[tuple[JobSpec, str | None, str | None]]) -> None:
        """``DuplicateJob`` for a given id that exists or that two new jobs of the batch
        share (a key repeated in the batch makes one job, not two)."""
        ids: set[str] = set()
        keys: set[str] = set()
        for spec, key, _ in items:
            if spec.id is not None and spec.id in self._t.jobs:
                raise DuplicateJob(spec.id)
            if key is not None and key in keys:
                continue
            if spec.id is not None and spec.id in ids:
                raise DuplicateJob(spec.id)
            ids.update([spec.id] if spec.id is not None else [])
            keys.update([key] if key is not None else [])

    def _create(self, spec: JobSpec, key: str | None, actor: str | None, now: float) -> StoredJob:
        row = JobRow(
            id=spec.id or uuid.uuid4().hex,
            submitted_at=now,
            gpus=spec.gpus,
            queued_at=now,
            idempotency_key=key,
            name=spec.name,
            user=spec.user,
            team=spec.team,
            image=spec.image,
            command=spec.command,
            cpus=spec.cpus,
            memory_mb=spec.memory_mb,
            gpu_type=spec.gpu_type,
            declared_runtime=spec.declared_runtime,
            deadline=spec.deadline,
            pods=spec.pods,
            extra=dict(spec.extra),
            after=spec.after,
            array=spec.array,
            array_limit=spec.array_limit,
        )
        self._t.jobs[row.id] = row
        self._t.index(row)
        if key is not None:
            self._t.by_key[key] = row.id
        who = actor or spec.user or "unknown"
        self._t.add_event(JobEvent(row.id, now, None, row.state, "submitted", who, None))
        return row.stored()

    def _ensure_owners(self, specs: Iterable[JobSpec], now: float) -> None:
        """A submission's team and user are created if new (an existing user keeps theirs)."""
        for spec in specs:
            if spec.team:
                self._t.teams.add(spec.team)
            if spec.user and spec.user not in self._t.users:
                self._t.users[spec.user] = User(spec.user, spec.team)


class MemorySubmissionWriter:
    """``SubmissionWriter`` over the store's own repositories."""

    def __init__(self, submissions: MemorySubmissions, jobs: MemoryJobs) -> None:
        self._submissions, self._jobs = submissions, jobs

    def backlog(
        self,
        *,
        users: Collection[str],
        teams: Collection[str],
        arrays: Collection[str],
        keys: Collection[str],
    ) -> Backlog:
        return self._jobs.backlog(users=users, teams=teams, arrays=arrays, keys=keys)

    def submit_many(self, items: Sequence[Keyed]) -> list[Submission]:
        return self._submissions.submit_many(items)

    def submit_if_room(self, items: Sequence[Keyed], room: Room) -> list[Submission] | None:
        return write_if_room(self, items, room)

    def close(self) -> None:
        """Nothing to release."""
