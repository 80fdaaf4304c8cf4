"""Group commit for ``POST /v1/jobs``: concurrent submissions share one transaction.

A lab's sweep script submits thousands of jobs at once. One transaction per request spends
most of each request in round trips and commits; the store's ``submit_many`` writes hundreds
of jobs in one. ``SubmissionBatcher`` joins the two: each request hands its submission to one
committer thread and waits (a thread with ``submit``, a coroutine with ``submit_async``, which
holds no thread while it waits); the committer takes everything that arrived while the
previous batch was being written and commits it as the next batch. Nothing waits on a timer,
so a lone request is committed at once and batches grow only with concurrency.

Invariants:
- A request is answered only after its batch committed: a 201 means the job is stored.
- One bad submission never fails its neighbours: a batch that raises is retried one
  submission at a time, so each request gets its own result or its own error.
- Idempotency holds inside a batch as across batches (``submit_many``: the first request
  with a key creates the job, a repeat gets it with ``created`` false).
- Submission limits (``core.submit_limits``) are counted in the store once per batch, and
  the batch's own earlier submissions count too: one process never lets a user, team or
  array past its limit, however many requests arrive at once. Where the waiting jobs leave
  every user and team of a batch room for all of it (``room``), the store counts them in
  the statement that writes the batch (one round trip); otherwise the batch is screened
  against the backlog read just before it is written.
- The committer writes through one ``SubmissionWriter`` while batches follow each other
  (the store may hold one connection for it: no pool checkout and ping per statement); when
  a batch leaves nothing waiting, the writer lets go of it before the batch is answered, so
  an idle API holds no connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass

from starburst.core.errors import StarburstError
from starburst.core.ports import SubmissionWriter
from starburst.core.records import JobSpec, Submission
from starburst.core.submit_limits import SubmitLimits, room, screen

#: The most submissions one transaction carries.
MAX_BATCH = 500
#: An idle committer thread ends after this long (the next submission starts another).
IDLE_S = 5.0


@dataclass(slots=True)
class _Pending:
    spec: JobSpec
    key: str | None
    actor: str | None
    result: Submission | None = None
    error: BaseException | None = None
    #: what the committer wakes once ``result`` or ``error`` is set (``_answer``): the
    #: event a request thread waits on (``submit``), or a coroutine's future (its loop's)
    done: threading.Event | None = None
    committed: asyncio.Future[None] | None = None

    def outcome(self) -> Submission:
        if self.error is not None:
            raise self.error
        assert self.result is not None
        return self.result


class SubmissionBatcher:
    """Commits submissions from many request threads in shared transactions."""

    def __init__(
        self,
        writer: Callable[[], SubmissionWriter],
        *,
        limits: SubmitLimits | None = None,
        max_batch: int = MAX_BATCH,
    ) -> None:
        """``writer`` opens what each committer thread reads the backlog the limits count
        and writes the batches through (``Submissions.writer``)."""
        self._open_writer = writer
        self._limits = limits or SubmitLimits()
        self._max_batch = max_batch
        self._queue: queue.SimpleQueue[_Pending | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()

    def submit(self, spec: JobSpec, key: str | None, actor: str | None) -> Submission:
        """Store one submission (blocking until its batch committed)."""
        done = threading.Event()  # (a coroutine waits on a future instead: no event each)
        pending = _Pending(spec, key, actor, done=done)
        self._queue.put(pending)  # first: a committer ending now sees it and stays
        self._ensure_running()
        done.wait()
        return pending.outcome()

    async def submit_async(self, spec: JobSpec, key: str | None, actor: str | None) -> Submission:
        """``submit`` for a coroutine: the event loop serves other requests meanwhile."""
        committed: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        pending = _Pending(spec, key, actor, committed=committed)
        self._queue.put(pending)
        self._ensure_running()
        await committed
        return pending.outcome()

    def close(self) -> None:
        """Stop the committer after the submissions already handed to it."""
        with self._start_lock:
            thread, self._thread = self._thread, None
        if thread is not None:
            self._queue.put(None)
            thread.join()

    def _ensure_running(self) -> None:
        with self._start_lock:
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, daemon=True, name="starburst-submissions"
                )
                self._thread.start()

    def _idle_exit(self) -> bool:
        """End the committer if nothing waits (under the lock ``_ensure_running`` takes)."""
        with self._start_lock:
            if not self._queue.empty():
                return False
            self._thread = None
            return True

    def _run(self) -> None:
        writer = self._open_writer()
        try:
            self._serve(writer)
        finally:
            writer.close()

    def _serve(self, writer: SubmissionWriter) -> None:
        while True:
            try:
                first = self._queue.get(timeout=IDLE_S)
            except queue.Empty:
                if self._idle_exit():
                    return
                continue
            if first is None:
                return
            batch = [first]
            stop = False
            while len(batch) < self._max_batch:
                try:
                    more = self._queue.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    stop = True
                    break
                batch.append(more)
            self._commit(writer, batch)
            if stop:
                return

    def _commit(self, writer: SubmissionWriter, batch: list[_Pending]) -> None:
        self._write(writer, batch)
        if self._queue.empty():  # a pause: what the writer holds goes back before answering
            writer.close()
        _answer(batch)

    def _write(self, writer: SubmissionWriter, batch: list[_Pending]) -> None:
        """Set each submission's result or error (``_commit`` answers them): the batch
        written at once if the store leaves its users and teams room for all of it (the
        common case, one round trip), else screened against the backlog first."""
        if self._write_if_room(writer, batch):
            return
        try:
            batch = self._within_limits(writer, batch)
        except BaseException as exc:  # the counts could not be read: nobody is stored
            for pending in batch:
                pending.error = exc
            return
        if not batch:
            return
        try:
            results = writer.submit_many([(p.spec, p.key, p.actor) for p in batch])
        except BaseException as exc:  # handed to the waiting request, never lost here
            if len(batch) > 1:
                for pending in batch:  # find whose submission it was
                    self._write(writer, [pending])
                return
            batch[0].error = exc
            return
        for pending, result in zip(batch, results, strict=True):
            pending.result = result

    def _write_if_room(self, writer: SubmissionWriter, batch: list[_Pending]) -> bool:
        """Whether the batch is settled by one write (``submit_if_room``): each result set,
        or, on an error that is not the store's, that error for each. A batch a limit could
        refuse part of (``room``), or whose write the store refused (a dropped connection, an
        id taken), is left to ``_write`` to screen and write again, as a batch that failed is
        written again one submission at a time."""
        need = room([(p.spec, p.key) for p in batch], self._limits)
        if need is None:
            return False
        try:
            results = writer.submit_if_room([(p.spec, p.key, p.actor) for p in batch], need)
        except StarburstError:
            return False
        except BaseException as exc:  # handed to the waiting requests, never lost here
            for pending in batch:
                pending.error = exc
            return True
        if results is None:
            return False
        for pending, result in zip(batch, results, strict=True):
            pending.result = result
        return True

    def _within_limits(self, writer: SubmissionWriter, batch: list[_Pending]) -> list[_Pending]:
        """The batch without the submissions over a limit (their errors set)."""
        specs = [p.spec for p in batch]
        backlog = writer.backlog(
            users={s.user for s in specs if s.user is not None},
            teams={s.team for s in specs if s.team is not None},
            arrays={s.array for s in specs if s.array is not None},
            keys={p.key for p in batch if p.key is not None},
        )
        kept = []
        for pending, refusal in zip(
            batch, screen([(p.spec, p.key) for p in batch], backlog, self._limits), strict=True
        ):
            if refusal is None:
                kept.append(pending)
            else:
                pending.error = refusal
        return kept


def _answer(batch: list[_Pending]) -> None:
    """Wake the requests of a committed ``batch``: each waiting thread, and each event loop
    once for all its coroutines (one wake-up of the loop per batch, where one per request
    was a twentieth of the API's interpreter time at 32 submissions in flight)."""
    waiting: dict[asyncio.AbstractEventLoop, list[asyncio.Future[None]]] = {}
    for pending in batch:
        if pending.done is not None:
            pending.done.set()
        elif pending.committed is not None:
            waiting.setdefault(pending.committed.get_loop(), []).append(pending.committed)
    for loop, futures in waiting.items():
        with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits any more
            loop.call_soon_threadsafe(_settle, futures)


def _settle(futures: list[asyncio.Future[None]]) -> None:
    for committed in futures:
        if not committed.done():  # a cancelled request (its client left) is not woken
            committed.set_result(None)
