"""Reading jobs in the in-memory store (``MemoryJobs``, the ``JobReads`` port): one or many,
the queue, its change feed, counts and placements. New jobs are
``submissions.MemorySubmissions``'s, changes ``transitions.MemoryTransitions``'s; none of the
three forwards to another.

Invariants: as in the SQL store — a job and its ``submitted`` event appear together or not at
all; the queue is FIFO on ``(queued_at, id)``, paged by a cursor naming the last key seen, so
a page is stable under concurrent inserts; an event's id is its position in the change feed.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import heapq
import re
from collections.abc import Collection, Iterable, Iterator, Sequence
from itertools import islice

from starburst.core.capacity import Placement
from starburst.core.errors import ConfigError
from starburst.core.lifecycle import JobState
from starburst.core.records import (
    InvalidPage,
    JobEvent,
    QueuePage,
    StoredJob,
)
from starburst.core.submit_limits import Backlog

from .tables import JobRow, MemoryDatabase

Key = tuple[float, str]


def encode_cursor(key: Key) -> str:
    raw = f"{key[0]!r}|{key[1]}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> Key:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        stamp, job_id = raw.split("|", 1)
        return float(stamp), job_id
    except (ValueError, UnicodeDecodeError, binascii.Error):
        raise InvalidPage(cursor) from None


def glob_matcher(pattern: str) -> re.Pattern[str]:
    """A shell glob (``*``, ``?``; nothing else is special) matched whole and
    case-insensitively, like the SQL store's ILIKE."""
    wild = {"*": ".*", "?": "."}
    regex = "".join(wild.get(ch, re.escape(ch)) for ch in pattern)
    return re.compile(regex + r"\Z", re.IGNORECASE | re.DOTALL)


class MemoryJobs:
    """The ``JobReads`` port: reads, the queue and the change feed over the shared
    ``MemoryDatabase``."""

    def __init__(self, db: MemoryDatabase) -> None:
        self._db = db
        self._t = db.tables
        self._lock = db.lock

    # ---- reading ----------------------------------------------------------------------
    def get(self, job_id: str) -> StoredJob:
        with self._lock:
            return self._t.row(job_id).stored()

    def lookup(
        self, text: str, *, owner: str, everyone: bool = False, limit: int = 10
    ) -> list[StoredJob]:
        def wanted(row: JobRow) -> bool:
            by_id = row.id.startswith(text) and (everyone or row.user == owner)
            return by_id or (row.name == text and row.user == owner)

        with self._lock:
            hits = sorted((r for r in self._t.jobs.values() if wanted(r)), key=_fifo_key)
            return [r.stored() for r in hits[:limit]]

    def states_of(self, job_ids: Iterable[str]) -> dict[str, JobState]:
        with self._lock:
            return {i: self._t.jobs[i].state for i in job_ids if i in self._t.jobs}

    def find_by_key(self, idempotency_key: str) -> StoredJob | None:
        with self._lock:
            job_id = self._t.by_key.get(idempotency_key)
            return None if job_id is None else self._t.jobs[job_id].stored()

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
        if limit < 1:
            raise ConfigError(f"page limit must be at least 1, got {limit}")
        after = decode_cursor(cursor) if cursor is not None else None
        pattern = glob_matcher(name) if name is not None else None

        def wanted(row: JobRow) -> bool:
            return (
                (user is None or row.user == user)
                and (team is None or row.team == team)
                and (pattern is None or (row.name is not None and bool(pattern.match(row.name))))
                and (held is None or (row.held is not None) == held)
            )

        with self._lock:
            keys = heapq.merge(*(self._keys_after(s, after) for s in set(states)))
            rows = (self._t.jobs[job_id] for _, job_id in keys)
            found = list(islice((r for r in rows if wanted(r)), limit + 1))
            page = found[:limit]
            more = len(found) > limit
            return QueuePage(
                [r.stored() for r in page], encode_cursor(_fifo_key(page[-1])) if more else None
            )

    def _keys_after(self, state: JobState, after: Key | None) -> Iterator[Key]:
        keys = self._t.fifo.get(state, [])
        start = 0 if after is None else bisect.bisect_right(keys, after)
        return (keys[i] for i in range(start, len(keys)))

    def events(self, job_id: str) -> list[JobEvent]:
        with self._lock:
            return [self._t.events[i] for i in self._t.events_of.get(job_id, [])]

    def last_event_id(self) -> int:
        with self._lock:
            return len(self._t.events)

    def state_changes(
        self, after_id: int, limit: int = 10_000
    ) -> tuple[list[tuple[str, JobState]], int]:
        with self._lock:
            start = max(after_id, 0)
            chunk = self._t.events[start : start + limit]
            changes = [(e.job_id, e.to_state) for e in chunk]
            return changes, (start + len(chunk) if chunk else after_id)

    def array_in_flight(self, arrays: Iterable[str]) -> dict[str, int]:
        wanted = set(arrays)
        found: dict[str, int] = {}
        with self._lock:
            for state in _IN_FLIGHT:
                for _, job_id in self._t.fifo.get(state, []):
                    array = self._t.jobs[job_id].array
                    if array is not None and array in wanted:
                        found[array] = found.get(array, 0) + 1
        return found

    def array_elements(self, array: str, *, limit: int = 10_000) -> list[StoredJob]:
        with self._lock:
            found = [row.stored() for row in self._t.jobs.values() if row.array == array]
        return sorted(found, key=lambda s: s.job.submission_order())[:limit]

    def count(self, state: JobState) -> int:
        with self._lock:
            return len(self._t.fifo.get(state, []))

    def held_count(self) -> int:
        with self._lock:
            submitted = self._t.fifo.get(JobState.SUBMITTED, [])
            return sum(1 for _, job_id in submitted if self._t.jobs[job_id].held is not None)

    def backlog(
        self,
        *,
        users: Collection[str],
        teams: Collection[str],
        arrays: Collection[str],
        keys: Collection[str],
    ) -> Backlog:
        by_user: dict[str, int] = {}
        by_team: dict[str, int] = {}
        sizes: dict[str, int] = {}
        wanted_users, wanted_teams, wanted_arrays = set(users), set(teams), set(arrays)
        with self._lock:
            for row in self._t.jobs.values():
                if row.array is not None and row.array in wanted_arrays:
                    sizes[row.array] = sizes.get(row.array, 0) + 1
                if row.state not in (JobState.SUBMITTED, JobState.QUEUED):
                    continue
                if row.user is not None and row.user in wanted_users:
                    by_user[row.user] = by_user.get(row.user, 0) + 1
                if row.team is not None and row.team in wanted_teams:
                    by_team[row.team] = by_team.get(row.team, 0) + 1
            known = frozenset(k for k in keys if k in self._t.by_key)
        return Backlog(by_user, by_team, sizes, known)

    def waits_of(self, job_ids: Collection[str]) -> dict[str, tuple[str, ...]]:
        with self._lock:
            rows = [self._t.jobs.get(i) for i in job_ids]
            return {
                r.id: tuple(d.job_id for d in r.after)
                for r in rows
                if r is not None and not r.state.terminal
            }

    # ---- lifecycle --------------------------------------------------------------------

    def placement(self, job_id: str) -> Placement:
        with self._lock:
            attempts = self._t.placements.get(job_id)
            return attempts[-1] if attempts else ()


#: the states in which an array element takes one of its array's slots
_IN_FLIGHT = (JobState.QUEUED, JobState.BURSTING, JobState.RUNNING_ONPREM, JobState.RUNNING_CLOUD)


def _fifo_key(row: JobRow) -> Key:
    return (row.queued_at, row.id)
