"""Group commit of submissions: concurrent requests share transactions, each keeps its answer.

The store is the real one (SQLite and PostgreSQL); ``GatedStore`` holds the first batch in
``submit_many`` until the test releases it, so what arrives meanwhile must form the next batch:
the batching is observed, not timed.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from starburst.api.submissions import SubmissionBatcher
from starburst.core.records import DuplicateJob, JobSpec, Submission
from tests.support.waiting import wait_for


class GatedStore:
    """The store's own ``SubmissionWriter``, holding the first batch written (either way)
    until ``gate`` opens; ``sizes`` are the batches written, ``opened``/``closed`` count the
    writers the committers took and released."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.sizes: list[int] = []
        self.gate = threading.Event()
        self.opened = self.closed = 0

    def writer(self) -> GatedStore:
        self.inner = self.store.submissions.writer()
        self.opened += 1
        return self

    def backlog(self, **kw: Any) -> Any:
        return self.inner.backlog(**kw)

    def submit_many(self, items: list[Any]) -> list[Submission]:
        self._hold(items)
        return self.inner.submit_many(items)  # type: ignore[no-any-return]

    def submit_if_room(self, items: list[Any], room: Any) -> list[Submission] | None:
        self._hold(items)
        return self.inner.submit_if_room(items, room)  # type: ignore[no-any-return]

    def _hold(self, items: list[Any]) -> None:
        self.sizes.append(len(items))
        if len(self.sizes) == 1:
            assert self.gate.wait(20), "the test never released the first batch"

    def close(self) -> None:
        self.inner.close()
        self.closed += 1


class Calls:
    """Each call on its own thread; ``results()`` joins them: values or raised exceptions."""

    def __init__(self, calls: list[Callable[[], object]]) -> None:
        self._out: list[object] = [None] * len(calls)
        self._threads = [
            threading.Thread(target=self._one, args=(i, c)) for i, c in enumerate(calls)
        ]
        for thread in self._threads:
            thread.start()

    def _one(self, i: int, call: Callable[[], object]) -> None:
        try:
            self._out[i] = call()
        except Exception as exc:  # the test inspects it
            self._out[i] = exc

    def results(self) -> list[object]:
        for thread in self._threads:
            thread.join(20)
        return self._out


def spec(**kw: Any) -> JobSpec:
    return JobSpec(**{"gpus": 1, "command": "true", **kw})


async def two_batches(
    batcher: SubmissionBatcher, gated: GatedStore, later: list[tuple[JobSpec, str | None, str]]
) -> list[object]:
    """A first submission, then ``later``'s while the committer holds the first batch: they
    form the second. The answers in that order (a raised error as its value)."""
    import asyncio

    first = asyncio.ensure_future(batcher.submit_async(spec(), "k0", "a"))
    while gated.sizes != [1]:  # the committer holds the first batch in submit_many
        await asyncio.sleep(0.001)
    rest = [asyncio.ensure_future(batcher.submit_async(*item)) for item in later]
    while batcher._queue.qsize() < len(later):
        await asyncio.sleep(0.001)
    gated.gate.set()  # released from the loop, which no waiting request blocks
    return await asyncio.gather(first, *rest, return_exceptions=True)


@pytest.mark.parametrize("db_url", ["sqlite", "postgres"], indirect=True)
def test_concurrent_submissions_share_a_transaction_and_each_gets_its_own_job(
    db_url: str, open_store: Callable[[str], Any]
) -> None:
    gated = GatedStore(open_store(db_url))
    batcher = SubmissionBatcher(gated.writer)
    specs = [spec(user=f"u{i % 3}", name=f"j{i}") for i in range(40)]
    submit = [
        lambda s=s, i=i: batcher.submit(s, f"key-{i}", f"actor-{i}")  # type: ignore[misc]
        for i, s in enumerate(specs)
    ]
    # the first submission alone is held in its commit, then the 39 others arrive: started
    # together, a loaded machine could let the first batch take all 40 (seen at -n 4)
    first = Calls(submit[:1])
    assert wait_for(lambda: gated.sizes == [1])
    rest = Calls(submit[1:])
    assert wait_for(lambda: batcher._queue.qsize() == 39)
    gated.gate.set()
    results = first.results() + rest.results()
    batcher.close()
    assert gated.sizes == [1, 39]  # those that arrived during the first commit form one batch
    assert all(isinstance(r, Submission) and r.created for r in results)
    jobs = [r.job for r in results]  # type: ignore[union-attr]
    assert [j.job.name for j in jobs] == [s.name for s in specs]
    assert len({j.id for j in jobs}) == 40
    assert gated.store.jobs.find_by_key("key-7").id == jobs[7].id
    assert gated.store.jobs.events(jobs[7].id)[0].actor == "actor-7"  # each its own submitter


@pytest.mark.parametrize("db_url", ["sqlite", "postgres"], indirect=True)
def test_one_bad_submission_fails_alone_and_a_repeated_key_gets_the_same_job(
    db_url: str, open_store: Callable[[str], Any]
) -> None:
    gated = GatedStore(open_store(db_url))
    gated.store.submissions.submit(spec(id="taken", command="original"))
    batcher = SubmissionBatcher(gated.writer)
    first = Calls([lambda: batcher.submit(spec(), "first", None)])
    assert wait_for(lambda: gated.sizes == [1])
    rest = Calls(
        [
            lambda: batcher.submit(spec(), "same", "a"),
            lambda: batcher.submit(spec(id="taken", command="x"), None, "b"),
            lambda: batcher.submit(spec(), "same", "c"),
            lambda: batcher.submit(spec(gpus=2), "other", "d"),
        ]
    )
    assert wait_for(lambda: batcher._queue.qsize() == 4)
    gated.gate.set()
    same_a, dup, same_c, other = rest.results()
    (ok,) = first.results()
    batcher.close()
    assert isinstance(ok, Submission) and ok.created
    assert isinstance(dup, DuplicateJob)  # only the request that reused an id fails
    assert isinstance(same_a, Submission) and isinstance(same_c, Submission)
    assert same_a.job.id == same_c.job.id
    assert sorted([same_a.created, same_c.created]) == [False, True]
    assert isinstance(other, Submission) and other.created and other.job.job.gpus == 2
    assert gated.store.jobs.get("taken").command == "original"  # nothing stored is changed


def test_an_idle_committer_ends_and_the_next_submission_starts_another(
    db_url: str, open_store: Callable[[str], Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from starburst.api import submissions

    monkeypatch.setattr(submissions, "IDLE_S", 0.05)
    gated = GatedStore(open_store(db_url))
    gated.gate.set()
    batcher = SubmissionBatcher(gated.writer)
    assert batcher.submit(spec(), None, None).created
    assert wait_for(lambda: batcher._thread is None)
    assert (gated.opened, gated.closed) == (1, 2)  # released after its batch, and at its end
    assert batcher.submit(spec(), None, None).created  # a new committer takes it
    batcher.close()
    assert (gated.opened, gated.closed) == (2, 4)


def test_coroutines_share_a_batch_and_each_gets_its_own_answer_or_error(
    db_url: str, open_store: Callable[[str], Any]
) -> None:
    """``submit_async`` (what ``POST /v1/jobs`` awaits): waiting holds no thread, a batch
    forms of what arrived meanwhile, and a bad submission fails only its own coroutine."""
    import asyncio

    gated = GatedStore(open_store(db_url))
    gated.store.submissions.submit(spec(id="taken"))
    batcher = SubmissionBatcher(gated.writer)

    good = [(spec(name=f"j{i}"), f"k{i}", "a") for i in range(1, 6)]
    *ok, dup = asyncio.run(two_batches(batcher, gated, [*good, (spec(id="taken"), None, "b")]))
    batcher.close()
    assert gated.sizes[:2] == [1, 6]  # five good ones and the bad one formed one batch
    assert isinstance(dup, DuplicateJob)
    assert all(isinstance(r, Submission) and r.created for r in ok)
    assert [r.job.job.name for r in ok[1:]] == [f"j{i}" for i in range(1, 6)]  # type: ignore[union-attr]


def test_a_batch_wakes_the_event_loop_once_for_all_its_coroutines(
    db_url: str, open_store: Callable[[str], Any]
) -> None:
    """Each wake-up from the committer thread is a write to the loop's self-pipe and a turn
    of the loop: one per batch, not one per request."""
    import asyncio

    gated = GatedStore(open_store(db_url))
    batcher = SubmissionBatcher(gated.writer)
    wakes: list[str] = []

    async def scenario() -> list[object]:
        loop = asyncio.get_running_loop()
        original = loop.call_soon_threadsafe

        def counting(*args: Any, **kw: Any) -> Any:
            wakes.append(threading.current_thread().name)
            return original(*args, **kw)

        loop.call_soon_threadsafe = counting  # type: ignore[method-assign]
        later = [(spec(name=f"j{i}"), f"k{i}", "a") for i in range(1, 9)]
        return await two_batches(batcher, gated, later)

    answers = asyncio.run(scenario())
    batcher.close()
    assert gated.sizes[:2] == [1, 8]
    assert all(isinstance(a, Submission) and a.created for a in answers)
    assert wakes.count("starburst-submissions") == 2  # two batches (one wake each), not nine


@pytest.mark.parametrize("db_url", ["sqlite", "postgres"], indirect=True)
def test_a_batch_whose_one_step_write_failed_is_screened_and_written_again(
    db_url: str, open_store: Callable[[str], Any]
) -> None:
    """The one-step write (``submit_if_room``) fails as on a connection the server dropped:
    the batch is screened against the backlog (a fresh connection) and written; the write
    it tried left nothing behind, so each request gets one job."""
    from starburst.adapters.db.engine import DatabaseUnavailable

    class Dropped(GatedStore):
        def submit_if_room(self, items: list[Any], room: Any) -> list[Submission] | None:
            self.sizes.append(len(items))
            raise DatabaseUnavailable("the connection died during a statement")

    gated = Dropped(open_store(db_url))
    gated.gate.set()
    batcher = SubmissionBatcher(gated.writer)
    made = batcher.submit(spec(user="ann"), "k1", "ann")
    batcher.close()
    assert gated.sizes == [1, 1]  # the one-step write, then the screened one
    assert made.created and gated.store.jobs.find_by_key("k1").id == made.job.id
    waiting = gated.store.jobs.backlog(users={"ann"}, teams=(), arrays=(), keys=())
    assert waiting.waiting_by_user == {"ann": 1}


@pytest.mark.parametrize("db_url", ["sqlite", "postgres"], indirect=True)
def test_a_batch_a_limit_could_refuse_is_screened_first(
    db_url: str, open_store: Callable[[str], Any]
) -> None:
    """Under its limits a batch is written in one step; where a submission could pass one
    (here the user's third against a limit of 2), the batch is screened: whether the two
    late ones form one batch or two, two jobs are stored and one is refused."""
    from starburst.core.submit_limits import SubmitLimits

    gated = GatedStore(open_store(db_url))
    gated.gate.set()
    steps: list[str] = []
    one_step, screened = gated.submit_if_room, gated.submit_many
    gated.submit_if_room = lambda *a: (steps.append("one step"), one_step(*a))[1]  # type: ignore[method-assign]
    gated.submit_many = lambda *a: (steps.append("screened"), screened(*a))[1]  # type: ignore[method-assign]
    batcher = SubmissionBatcher(gated.writer, limits=SubmitLimits(waiting_per_user=2))
    assert batcher.submit(spec(user="ann"), None, "ann").created
    assert steps == ["one step"]
    answers = Calls([lambda: batcher.submit(spec(user="ann"), None, "ann") for _ in range(2)])
    outcomes = answers.results()
    batcher.close()
    assert sorted(type(o).__name__ for o in outcomes) == ["BacklogFull", "Submission"]
    waiting = gated.store.jobs.backlog(users={"ann"}, teams=(), arrays=(), keys=())
    assert waiting.waiting_by_user == {"ann": 2}
