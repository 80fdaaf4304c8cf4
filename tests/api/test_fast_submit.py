"""``POST /v1/jobs`` answers the same through its fast path (``starburst.api.fastsubmit``) as
through FastAPI's route: status, headers and body for well-formed submissions, which the fast
path answers itself, and for every other request, which it leaves to the route."""

from __future__ import annotations

import json
import math
from decimal import Decimal
from typing import Any

import pytest

from starburst.api import fastsubmit
from starburst.api.limits import MAX_BODY_BYTES
from starburst.api.routes import jobs as job_routes
from starburst.core.lifecycle import JobState
from starburst.core.records import CloudLaunch
from tests.api.conftest import build_api

JOB = {"image": "img:1", "command": "python train.py", "gpus": 2}
JSON = {"Content-Type": "application/json"}


class Spy:
    """Counts the requests the fast path answered itself (it stored their submission)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, enabled: bool) -> None:
        self.answered = 0
        real = fastsubmit.SubmitFastPath._accept

        async def accept(path: Any, scope: Any, messages: Any) -> Any:
            result = await real(path, scope, messages) if enabled else None
            self.answered += result is not None
            return result

        monkeypatch.setattr(fastsubmit.SubmitFastPath, "_accept", accept)


def _send(
    api: Any, who: str | None, request: dict[str, Any]
) -> tuple[int, dict[str, str], Any, bytes]:
    """Status, headers, the body read as JSON and as the bytes sent (ids masked)."""
    client = api.client(who) if who else api.client(None)
    answer = client.post("/v1/jobs", **request)
    headers = {k: v for k, v in answer.headers.items() if k not in ("date", "server")}
    body, raw = answer.json(), answer.content
    if isinstance(body, dict) and "id" in body:
        raw = raw.replace(body["id"].encode(), b"<id>")
        body["id"] = "<id>"  # each path stores its own job
        headers["content-length"] = "<n>"  # the ids' lengths may differ
    return answer.status_code, headers, body, raw


def _both(
    api: Any, monkeypatch: pytest.MonkeyPatch, who: str | None, request: dict[str, Any]
) -> tuple[Any, Any, int]:
    """(fast path answer, route answer, requests the fast path answered itself)."""
    with monkeypatch.context() as m:
        spy = Spy(m, enabled=True)
        fast = _send(api, who, request)
    with monkeypatch.context() as m:
        Spy(m, enabled=False)
        slow = _send(api, who, request)
    return fast, slow, spy.answered


class Chunks:
    """A body sent in chunks, without a ``Content-Length`` (anew for each request)."""

    def __init__(self, *parts: bytes) -> None:
        self.parts = parts

    def __iter__(self) -> Any:
        return iter(self.parts)


GOOD = [
    ("alice", {"json": JOB}),
    ("alice", {"json": {**JOB, "name": "sweep-1", "team": "ml", "env": {"LR": "0.1"}}}),
    ("alice", {"json": {**JOB, "command": ["python", "-c", "print('é')"], "gpus": 0}}),
    ("root", {"json": {**JOB, "user": "alice"}}),
    ("alice", {"content": json.dumps(JOB), "headers": JSON}),
]

BAD = [
    (None, {"json": JOB}),
    ("alice", {"json": JOB, "headers": {"Authorization": "Bearer sb_nobody"}}),
    ("alice", {"content": b"{not json", "headers": JSON}),
    ("alice", {"content": b"[1, 2]", "headers": JSON}),
    ("alice", {"content": b"", "headers": JSON}),
    ("alice", {"json": {**JOB, "gpus": -1}}),
    ("alice", {"json": {**JOB, "surprise": 1}}),
    ("alice", {"json": {**JOB, "team": "vision"}}),
    ("bob", {"json": {**JOB, "user": "alice"}}),
    ("alice", {"json": JOB, "headers": {"Idempotency-Key": "k" * 129}}),
    ("alice", {"content": json.dumps(JOB), "headers": {"Content-Type": "text/plain"}}),
    ("alice", {"content": json.dumps(JOB), "headers": {"Content-Type": "application/json; x=1"}}),
    ("alice", {"json": JOB, "params": {"dry": "1"}}),
    # a job padded past the body limit: by its Content-Length, and streamed without one
    ("alice", {"content": json.dumps(JOB) + " " * MAX_BODY_BYTES, "headers": JSON}),
    (
        "alice",
        {"content": Chunks(json.dumps(JOB).encode(), b" " * MAX_BODY_BYTES), "headers": JSON},
    ),
]


@pytest.mark.parametrize(("who", "request_"), GOOD)
def test_well_formed_submissions_take_the_fast_path_and_read_as_the_routes(
    api: Any, monkeypatch: pytest.MonkeyPatch, who: str, request_: dict[str, Any]
) -> None:
    fast, slow, answered = _both(api, monkeypatch, who, request_)
    assert answered == 1
    assert fast == slow
    assert fast[0] == 201 and fast[2]["state"] == "submitted"


@pytest.mark.parametrize(("who", "request_"), BAD)
def test_anything_else_is_left_to_the_route(
    api: Any, monkeypatch: pytest.MonkeyPatch, who: str | None, request_: dict[str, Any]
) -> None:
    fast, slow, answered = _both(api, monkeypatch, who, request_)
    assert answered == 0
    assert fast == slow
    if not ACCEPTED_BY_THE_ROUTE.intersection(map(str, request_.values())):
        assert fast[0] >= 400


#: spellings the route accepts that the fast path leaves to it
ACCEPTED_BY_THE_ROUTE = {"{'Content-Type': 'application/json; x=1'}", "{'dry': '1'}"}


def test_a_repeated_key_gets_the_same_job_on_either_path(
    api: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    alice = api.client("alice")
    keyed = {"json": JOB, "headers": {"Idempotency-Key": "sweep-7"}}
    with monkeypatch.context() as m:
        spy = Spy(m, enabled=True)
        first = alice.post("/v1/jobs", **keyed)
        again = alice.post("/v1/jobs", **keyed)
    with monkeypatch.context() as m:
        Spy(m, enabled=False)
        routed = alice.post("/v1/jobs", **keyed)
    assert spy.answered == 2
    assert (first.status_code, again.status_code, routed.status_code) == (201, 200, 200)
    assert first.json()["id"] == again.json()["id"] == routed.json()["id"]
    assert again.json() == routed.json()
    assert api.client("root").get("/v1/jobs").json()["jobs"][-1]["id"] == first.json()["id"]


def test_a_repeated_key_answers_the_jobs_full_view_before_and_after_admission(
    api: Any,
) -> None:
    """A repeat of a job still ``submitted`` is answered without reading launches, placement
    or costs (it can have none); it must still equal what ``GET /v1/jobs/{id}`` reads, and
    a job that moved on is read in full."""
    alice = api.client("alice")
    keyed = {"json": JOB, "headers": {"Idempotency-Key": "sweep-8"}}
    job_id = alice.post("/v1/jobs", **keyed).json()["id"]
    again = alice.post("/v1/jobs", **keyed)
    assert again.status_code == 200
    assert again.json() == alice.get(f"/v1/jobs/{job_id}").json()
    assert alice.post(f"/v1/jobs/{job_id}/cancel").status_code == 200
    moved_on = alice.post("/v1/jobs", **keyed)
    assert moved_on.json()["state"] == "cancelled"
    assert moved_on.json() == alice.get(f"/v1/jobs/{job_id}").json()


def test_a_repeat_reads_the_ledger_only_for_a_job_that_may_have_run(
    api: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sweep resent after a timeout, or after its script died, repeats keys of jobs not
    admitted yet or waiting since their admission: those are answered without reading
    launches, placement or costs (they can have none), as a new job is, and the same as
    their ``GET``; a job that moved on since, even back to the queue, is read in full."""
    reads: list[str] = []
    launches = api.store.ledger.launches
    monkeypatch.setattr(
        api.store.ledger, "launches", lambda *a, **k: reads.append("launches") or launches(*a, **k)
    )
    alice = api.client("alice")
    keyed = {"json": JOB, "headers": {"Idempotency-Key": "sweep-9"}}
    job_id = alice.post("/v1/jobs", **keyed).json()["id"]
    again = alice.post("/v1/jobs", **keyed)
    assert again.status_code == 200 and reads == []
    assert again.json() == alice.get(f"/v1/jobs/{job_id}").json()

    store = api.store
    store.lifecycle.transition(job_id, JobState.QUEUED, reason="admitted", actor="controller")
    reads.clear()  # (the GET read them)
    admitted = alice.post("/v1/jobs", **keyed)
    assert admitted.json()["state"] == "queued" and reads == []
    assert admitted.json() == alice.get(f"/v1/jobs/{job_id}").json()
    reads.clear()  # (the GET read them)
    store.lifecycle.transition(job_id, JobState.BURSTING, reason="burst", actor="controller")
    store.ledger.record_launch(
        CloudLaunch(
            job_id=job_id,
            name="sb-9",
            provider="aws",
            accelerators="A100:2",
            hourly_price=Decimal("8.00"),
            launched_at=api.clock.now(),
        )
    )
    store.lifecycle.transition(job_id, JobState.QUEUED, reason="refused", actor="controller")
    reads.clear()
    moved = alice.post("/v1/jobs", **keyed).json()
    assert reads and [run["provider"] for run in moved["cloud"]] == ["aws"]
    assert moved == alice.get(f"/v1/jobs/{job_id}").json()


def test_a_fast_submission_wakes_the_scheduler_as_the_route_does(  # type: ignore[no-untyped-def]
    db_url, clock, resources, open_store, serve, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fast path answers in front of ``WakeOnWrite``: it wakes the scheduler itself
    after a submission, and not after a refusal it leaves to the route."""
    woken: list[str] = []
    api = build_api(
        db_url, open_store(db_url), clock, resources, serve, wake=lambda: woken.append("x")
    )
    alice = api.client("alice")
    with monkeypatch.context() as m:
        spy = Spy(m, enabled=True)
        assert alice.post("/v1/jobs", json=JOB).status_code == 201
        assert alice.post("/v1/jobs", json={**JOB, "gpus": -1}).status_code == 422
        assert spy.answered == 1 and woken == ["x"]
    with monkeypatch.context() as m:
        Spy(m, enabled=False)
        assert alice.post("/v1/jobs", json=JOB).status_code == 201
    assert woken == ["x", "x"]


def test_an_error_once_the_job_is_stored_is_the_same_500_on_either_path(
    api: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def broken(ctx: Any, result: Any) -> Any:
        raise RuntimeError("the answer broke")

    monkeypatch.setattr(fastsubmit, "reply", broken)
    monkeypatch.setattr(job_routes, "answer", broken)
    fast, slow, answered = _both(api, monkeypatch, "alice", {"json": JOB})
    assert answered == 1
    assert fast == slow
    assert fast[0] == 500 and "RuntimeError" in fast[2]["detail"]


def test_a_fresh_jobs_reply_is_the_bytes_the_route_serialises(  # type: ignore[no-untyped-def]
    db_url, clock, open_store
) -> None:
    """``replies.fresh_reply`` builds a job's ``JobDetail`` JSON without the model: for jobs
    that never moved, of every kind of field (floats given as ints, tiny and huge numbers,
    text beyond ASCII, newlines, dependencies, arrays, holds, budgets set before admission),
    it must be byte for byte what the route's ``detail`` serialises."""
    from starburst.api import create_app, replies
    from starburst.api.routes.jobs import detail
    from starburst.core.dependencies import AfterKind, Dependency
    from starburst.core.records import JobSpec
    from starburst.settings import Settings

    store = open_store(db_url)
    ctx = create_app(Settings(database_url=db_url), store, clock=clock).state.starburst
    first = store.submissions.submit(JobSpec(gpus=1, user="alice", team="ml")).job.id
    specs = [
        JobSpec(
            gpus=1,
            user="alice",
            team="ml",
            name="é ☃ \u2028",
            image="img:1",
            command="python -c 'print(\"x\")'\n\tdone",
            cpus=2,
            memory_mb=1024,
            declared_runtime=600,
        ),
        JobSpec(gpus=0, cpus=0.5, memory_mb=0.25, declared_runtime=1e-05),
        JobSpec(
            gpus=8,
            pods=2,
            user="bob",
            array="sweep",
            array_limit=4,
            declared_runtime=3e16,
            after=(Dependency(first, AfterKind.OK), Dependency(first)),
        ),
    ]
    made = [store.submissions.submit(spec).job for spec in specs]  # as the fast path sees them
    ids = [stored.id for stored in made]
    store.lifecycle.hold({ids[2]: "waits for 1 job"})
    store.lifecycle.set_estimates(ids[0], predicted_runtime=600, wait_budget=3600)
    store.lifecycle.set_estimates(ids[1], predicted_runtime=0.1, wait_budget=math.inf)
    clock.advance(30.25)
    for stored in [*made, *(store.jobs.get(job_id) for job_id in [first, *ids])]:
        assert stored.version == 1  # fresh
        expected = detail(ctx, stored, fresh=True).model_dump_json(by_alias=True).encode()
        assert replies.fresh_reply(ctx, stored) == expected
