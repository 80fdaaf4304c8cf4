"""``starburst hold``, ``release``, ``requeue`` and ``update`` (``core.amendments``) through
the real CLI against a served app and controller passes on virtual time (SQLite and
PostgreSQL): each change is an event ``explain`` shows, a state that does not allow it is
one line (409 over REST), an update is checked as a submission is (422) and its wait budget
is computed again from the new GPUs × predicted runtime."""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import ExitStack
from typing import Any

import pytest

from starburst.core.capacity import uniform_nodes
from starburst.core.failure import with_output
from starburst.core.lifecycle import JobState
from starburst.core.policy import PolicyKind, WaitPolicy
from starburst.sim.cluster import SimCluster
from tests.api.conftest import LiveServer, serve_loop
from tests.api.test_cli import run
from tests.api.test_job_dependencies import EveryJob
from tests.support.clock import ManualClock
from tests.support.databases import BOTH

COEFFICIENT = 0.5  # Compute-Wait: budget = 0.5 × GPUs × runtime


@pytest.fixture
def world(  # type: ignore[no-untyped-def]
    db_url: str,
    clock: ManualClock,
    resources: ExitStack,
    open_store: Callable[[str], Any],
    serve: Callable[[Any], LiveServer],
):
    """4 GPUs on one node; Compute-Wait; every job runs 100 s; no cloud (jobs wait on-prem)."""
    store = open_store(db_url)
    cluster = SimCluster(uniform_nodes(1, 4), clock, EveryJob())
    policy = WaitPolicy(PolicyKind.COMPUTE, COEFFICIENT)
    return serve_loop(db_url, store, clock, resources, serve, cluster, None, policy)


def submit(env: dict[str, str], *args: str) -> str:
    made = run(["submit", *args, "--", "true"], env)
    assert made.exit_code == 0, made.stderr
    return str(made.stdout.split()[0])


def one_line_error(done: Any, *expected: str) -> None:
    assert done.exit_code == 1, done.stdout
    (line,) = done.stderr.splitlines()
    assert line.startswith("error: ") and all(e in line for e in expected), line


def events(env: dict[str, str], job: str) -> list[tuple[str, str, str]]:
    answer = json.loads(run(["explain", job, "--json"], env).stdout)
    return [(e["from_state"], e["to_state"], e["reason"]) for e in answer["events"]]


def busy_then_queued(loop: Any, api: Any, env: dict[str, str]) -> tuple[str, str]:
    """big runs on all 4 GPUs; train (2 GPUs, 1 h declared) waits in the queue."""
    big = submit(env, "--name", "big", "--gpus", "4")
    api.clock.advance(1)
    train = submit(env, "--name", "train", "--gpus", "2", "--runtime", "1h")
    loop.run_pass()
    assert api.store.jobs.get(train).state is JobState.QUEUED
    assert api.store.jobs.get(train).wait_budget == COEFFICIENT * 2 * 3600
    return big, train


@BOTH
def test_hold_keeps_a_job_out_until_release_and_both_are_events(world) -> None:  # type: ignore[no-untyped-def]
    loop, api, env = world
    big, train = busy_then_queued(loop, api, env)
    api.clock.advance(10)

    held = run(["hold", "train"], env)
    assert held.exit_code == 0, held.stderr
    assert held.stdout == f"{train}  held\n"
    stored = api.store.jobs.get(train)
    assert stored.state is JobState.SUBMITTED and stored.held.startswith("by alice until released")
    assert run(["queue"], env).stdout.splitlines()[0] == "0 waiting in all, 1 held out of it"
    listing = next(line for line in run(["jobs"], env).stdout.splitlines() if "train" in line)
    assert " held " in listing and "held: by alice until released" in listing
    assert events(env, train)[-1] == (
        "queued",
        "submitted",
        "held by alice: out of the queue until released",
    )
    one_line_error(run(["hold", "train"], env), "already held by alice", "(HTTP 409)")
    one_line_error(
        run(["hold", "big"], env), f"job {big} is running_onprem", "only a waiting job can be held"
    )

    # big ends and frees the GPUs: the held job still does not start
    api.clock.advance(200)
    loop.run_pass()
    loop.run_pass()
    assert api.store.jobs.get(train).state is JobState.SUBMITTED

    released = run(["release", train[:8]], env)
    assert released.exit_code == 0, released.stderr
    assert released.stdout == f"{train}  submitted\n"
    assert api.store.jobs.get(train).queued_at == api.clock.now()  # its budget starts now
    assert events(env, train)[-1][2].startswith("released by alice: enters the queue")
    loop.run_pass()
    assert api.store.jobs.get(train).state is JobState.RUNNING_ONPREM
    one_line_error(run(["release", "train"], env), "not held by a user", "(HTTP 409)")


@BOTH
def test_hold_and_release_are_the_owners_or_an_admins(world) -> None:  # type: ignore[no-untyped-def]
    loop, api, env = world
    _, train = busy_then_queued(loop, api, env)
    bob = {**env, "STARBURST_TOKEN": api.tokens["bob"]}
    one_line_error(run(["hold", train], bob), f"no job or array {train}", "(HTTP 404)")
    fin = api.client("fin").post(f"/v1/jobs/{train}/hold")
    assert fin.status_code == 403 and "fin has role finance" in fin.json()["detail"]
    root = {**env, "STARBURST_TOKEN": api.tokens["root"]}
    assert run(["hold", train], root).exit_code == 0
    assert api.store.jobs.get(train).held.startswith("by root until released")
    # REST: a release of a job not held, a hold of a running job: 409 with the reason
    assert run(["release", train], env).exit_code == 0
    again = api.client("alice").post(f"/v1/jobs/{train}/release")
    assert again.status_code == 409 and "not held by a user" in again.json()["detail"]


@BOTH
def test_update_is_checked_as_a_submit_and_rebudgeted_from_the_new_size(world) -> None:  # type: ignore[no-untyped-def]
    loop, api, env = world
    big, train = busy_then_queued(loop, api, env)
    queued_at = api.store.jobs.get(train).queued_at
    api.clock.advance(10)

    done = run(["update", "train", "--gpus", "1", "--time-limit", "2h", "--name", "small"], env)
    assert done.exit_code == 0, done.stderr
    assert done.stdout == f"{train}  submitted\n"
    reason = events(env, train)[-1]
    assert reason == (
        "queued",
        "submitted",
        "updated by alice: gpus 2 → 1, time limit none → 2h, name train → small; back out of "
        "the line until admitted again with a new wait budget",
    )
    loop.run_pass()  # the controller admits it again, with a budget for 1 GPU
    stored = api.store.jobs.get(train)
    assert stored.state is JobState.QUEUED
    assert (stored.job.gpus, stored.job.name) == (1, "small")
    assert stored.job.extra["time_limit_s"] == "7200"
    assert stored.wait_budget == COEFFICIENT * 1 * 3600  # was 0.5 × 2 × 1 h
    assert stored.queued_at == queued_at  # its place in line kept
    assert events(env, train)[-1][2] == (
        "queued with a 30m wait budget: 1 GPU × 1h runtime estimate × coefficient 0.5 (compute)"
    )
    shown = json.loads(run(["status", "small", "--json"], env).stdout)
    assert shown["gpus"] == 1 and shown["wait_budget_s"] == 1800.0

    # refused as a submission would be: 422 over REST for the same values, one line in the CLI
    alice = api.client("alice")
    version = api.store.jobs.get(train).version
    for body in ({"gpus": 5000}, {"gpus": -1}, {"name": "bad\x07name"}, {"time_limit_s": 0}):
        answer = alice.patch(f"/v1/jobs/{train}", json=body)
        assert answer.status_code == 422, body
        sent = {"command": "true", "gpus": 1, **body}
        assert alice.post("/v1/jobs", json=sent).status_code == 422, body
    # nothing to change (an empty body, or the values it has): 200, no write
    assert alice.patch(f"/v1/jobs/{train}", json={}).status_code == 200
    assert alice.patch(f"/v1/jobs/{train}", json={"gpus": 1}).status_code == 200
    assert api.store.jobs.get(train).version == version  # nothing changed
    usage = run(["update", "small"], env)
    assert usage.exit_code == 2 and "give what to change" in usage.stderr
    assert run(["update", "small", "--time-limit", "soon"], env).exit_code == 2

    # a running job is not updated: 409, one line
    one_line_error(
        run(["update", big, "--gpus", "2"], env),
        f"job {big} is running_onprem: only a waiting job can be updated",
        "(HTTP 409)",
    )
    assert alice.patch(f"/v1/jobs/{big}", json={"gpus": 2}).status_code == 409


@BOTH
def test_requeue_submits_an_ended_job_again_and_notes_it(world) -> None:  # type: ignore[no-untyped-def]
    loop, api, env = world
    failed = submit(env, "--name", "flaky", "--gpus", "2", "--runtime", "30m")
    api.store.lifecycle.transition(
        failed, JobState.FAILED, reason=with_output("exit code 3", "boom"), actor="test"
    )
    one_line_error(
        run(["requeue", submit(env, "--name", "waiting")], env),
        "only an ended job",
        "(HTTP 409)",
    )

    done = run(["requeue", "flaky"], env)
    assert done.exit_code == 0, done.stderr
    new, state, *_ = done.stdout.split()
    assert new != failed and state == "submitted"
    again = api.store.jobs.get(new)
    old = api.store.jobs.get(failed)
    assert (again.job.name, again.job.gpus, again.command, again.declared_runtime) == (
        "flaky",
        2,
        "true",
        1800.0,
    )
    assert old.state is JobState.FAILED
    assert events(env, failed)[-1] == ("failed", "failed", f"requeued by alice as job {new}")
    # the note is no failure: the exit code and cause still read from the failure itself
    status = json.loads(run(["status", failed, "--json"], env).stdout)
    assert status["exit_code"] == 3 and status["failure"].startswith("exit code 3")
    loop.run_pass()
    assert api.store.jobs.get(new).state is JobState.RUNNING_ONPREM


@BOTH
def test_a_users_hold_outlasts_the_dependency_it_replaces(world) -> None:  # type: ignore[no-untyped-def]
    loop, api, env = world
    prep = submit(env, "--name", "prep", "--gpus", "4")
    train = submit(env, "--name", "train", "--after", "prep:ok")
    loop.run_pass()
    assert api.store.jobs.get(train).held.startswith("waiting for job")
    assert run(["hold", "train"], env).exit_code == 0
    assert api.store.jobs.get(train).held.startswith("by alice until released")
    api.clock.advance(200)  # prep succeeds: the dependency is met, the user's hold is not
    loop.run_pass()
    loop.run_pass()
    assert api.store.jobs.get(prep).state is JobState.SUCCEEDED
    assert api.store.jobs.get(train).held.startswith("by alice until released")
    assert run(["release", "train"], env).exit_code == 0
    loop.run_pass()
    assert api.store.jobs.get(train).state is JobState.RUNNING_ONPREM
