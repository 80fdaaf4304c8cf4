"""The controller's view of the queue: read in full once, then kept current from the store's
change feed (the append-only job events), so a pass does not re-read 10,000 queued rows.

Jobs Starburst follows for Kueue (``core.kueue_jobs.is_kueues``) are not in the
view: Kueue admits them on-prem, ``controller.kueue_burst`` bursts them.

The view also keeps the queue in order (``ordered``): sorted again only after it changed, so a
steady pass over a long queue does not sort it; and beside it the facts a pass asks of the
whole queue (``core.queue_facts.QueueFacts``: the earliest deadline, the job shapes), so a steady
pass does not scan it either.

Invariants: the store stays the truth. The view is only a candidate list: every decision is
still a checked store transition, and a job the view had wrong (cancelled by a user in a
transaction that committed late) is dropped the moment its transition is refused. A full
re-read every ``refresh_s`` seconds bounds any drift.
"""

from __future__ import annotations

from starburst.core.job import QueuedJob
from starburst.core.kueue_jobs import is_kueues
from starburst.core.lifecycle import JobState
from starburst.core.ordering import QueueOrder, in_order
from starburst.core.policy import WaitPolicy
from starburst.core.ports import JobReads
from starburst.core.queue_facts import QueueFacts
from starburst.core.records import JobNotFound, StoredJob

PAGE = 1000


def read_all(store: JobReads, state: JobState) -> list[StoredJob]:
    jobs: list[StoredJob] = []
    cursor: str | None = None
    while True:
        page = store.queue(limit=PAGE, cursor=cursor, states=(state,))
        jobs += page.jobs
        cursor = page.next_cursor
        if cursor is None:
            return jobs


def entry(stored: StoredJob, policy: WaitPolicy) -> QueuedJob:
    budget = stored.wait_budget if stored.wait_budget is not None else policy.budget(stored.job)
    return QueuedJob(stored.job, stored.queued_at, budget)


class QueueView:
    def __init__(self, store: JobReads, refresh_s: float = 60.0) -> None:
        self.store = store
        self.refresh_s = refresh_s
        self._entries: dict[str, QueuedJob] | None = None
        self._position = 0
        self._loaded_at = float("-inf")
        #: jobs that became cancelled since the last ``take_cancelled`` (from the feed)
        self._cancelled: set[str] = set()
        #: whether the last ``current`` re-read everything (callers then re-check in full)
        self.reloaded = False
        #: the entries in order, as last sorted, and their facts (None: changed since)
        self._ordered: tuple[QueueOrder, tuple[QueuedJob, ...], QueueFacts] | None = None

    def current(self, now: float, policy: WaitPolicy) -> list[QueuedJob]:
        return list(self._refresh(now, policy).values())

    def ordered(self, now: float, policy: WaitPolicy, order: QueueOrder) -> tuple[QueuedJob, ...]:
        """``current`` in ``order``; sorted only when the entries changed since the last call
        (until then the same tuple, with the same ``facts``)."""
        entries = self._refresh(now, policy)
        if self._ordered is None or self._ordered[0] is not order:
            queue = tuple(in_order(entries.values(), order))
            self._ordered = (order, queue, QueueFacts(queue))
        return self._ordered[1]

    @property
    def facts(self) -> QueueFacts | None:
        """The kept facts of the last ``ordered`` queue; None once the entries changed."""
        return None if self._ordered is None else self._ordered[2]

    def _refresh(self, now: float, policy: WaitPolicy) -> dict[str, QueuedJob]:
        self.reloaded = self._entries is None or now - self._loaded_at >= self.refresh_s
        if self.reloaded:
            self._reload(now, policy)
        else:
            self._follow(policy)
        assert self._entries is not None
        return self._entries

    def add(self, queued: QueuedJob) -> None:
        if self._entries is not None:
            self._entries[queued.id] = queued
            self._ordered = None

    def drop(self, job_id: str) -> None:
        if self._entries is not None and self._entries.pop(job_id, None) is not None:
            self._ordered = None

    def invalidate(self) -> None:
        self._entries = None
        self._ordered = None

    def take_cancelled(self) -> set[str]:
        taken, self._cancelled = self._cancelled, set()
        return taken

    def _reload(self, now: float, policy: WaitPolicy) -> None:
        position = self.store.last_event_id()  # before the read: replaying is harmless
        self._entries = {
            s.id: entry(s, policy)
            for s in read_all(self.store, JobState.QUEUED)
            if not is_kueues(s.job)
        }
        self._ordered = None
        self._position = position
        self._loaded_at = now

    def _follow(self, policy: WaitPolicy) -> None:
        assert self._entries is not None
        while True:
            changes, self._position = self.store.state_changes(self._position)
            # Only each job's last state counts: a job submitted and admitted since the last
            # look (the admission added it already) is not read back one by one.
            last: dict[str, JobState] = {}
            for job_id, state in changes:
                if state is JobState.CANCELLED:
                    self._cancelled.add(job_id)
                last[job_id] = state
            for job_id, state in last.items():
                if state is not JobState.QUEUED:
                    self.drop(job_id)
                elif job_id not in self._entries:
                    try:
                        stored = self.store.get(job_id)
                    except JobNotFound:
                        continue
                    if stored.state is JobState.QUEUED and not is_kueues(stored.job):
                        self.add(entry(stored, policy))
            if len(changes) < 10_000:
                return
