"""``starburst submit --after ID[:ok]`` and ``--array A-B%N`` through the real CLI against a
served API and a controller pass the test drives on virtual time; bad input is one clear
line and a non-zero exit (4xx over HTTP), never a traceback."""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import ExitStack
from typing import Any

import pytest

from starburst.core.capacity import uniform_nodes
from starburst.core.cycle import SchedulerConfig
from starburst.core.lifecycle import JobState
from starburst.core.policy import PolicyKind, WaitPolicy
from starburst.sim.cluster import SimCluster
from tests.api.conftest import LiveServer, serve_loop
from tests.api.test_cli import run
from tests.support.clock import ManualClock
from tests.support.databases import BOTH

RUNTIME = 100.0


class EveryJob(dict[str, float]):
    """Every job runs ``RUNTIME`` seconds on the simulated cluster."""

    def get(self, key: str, default: float | None = None) -> float:  # type: ignore[override]
        return RUNTIME


@pytest.fixture
def world(  # type: ignore[no-untyped-def]
    db_url: str,
    clock: ManualClock,
    resources: ExitStack,
    open_store: Callable[[str], Any],
    serve: Callable[[Any], LiveServer],
):
    store = open_store(db_url)
    cluster = SimCluster(uniform_nodes(1, 4), clock, EveryJob())
    loop, api, env = serve_loop(db_url, store, clock, resources, serve, cluster, None)
    return loop, api, env


def submit(env: dict[str, str], *args: str) -> str:
    made = run(["submit", "--image", "i", *args, "--", "true"], env)
    assert made.exit_code == 0, made.stderr
    return made.stdout.split()[0]


@BOTH
def test_dependents_are_held_with_a_reason_then_run_or_are_cancelled(world) -> None:  # type: ignore[no-untyped-def]
    loop, api, env = world
    prep = submit(env, "--name", "prep", "--gpus", "4")
    train = submit(env, "--name", "train", "--after", "prep:ok")  # by name
    report = submit(env, "--name", "report", "--after", prep[:8])  # by id prefix: afterany
    loop.run_pass()
    held = api.store.jobs.get(train)
    assert held.state is JobState.SUBMITTED and held.job.after[0].job_id == prep
    listing = run(["jobs"], env).stdout
    line = next(row for row in listing.splitlines() if "train" in row)
    assert " held " in line and f"held: waiting for job {prep} to succeed" in line
    explained = json.loads(run(["explain", "train", "--json"], env).stdout)
    assert explained["summary"] == (
        f"held: waiting for job {prep} to succeed; its wait budget starts when it enters the queue"
    )
    shown = json.loads(run(["status", "train", "--json"], env).stdout)
    assert shown["after"] == [f"{prep}:ok"] and shown["held"].startswith("waiting for job")
    assert run(["cancel", "prep"], env).exit_code == 0
    loop.run_pass()
    assert api.store.jobs.get(train).state is JobState.CANCELLED
    why = json.loads(run(["explain", train, "--json"], env).stdout)["events"][-1]["reason"]
    assert why.startswith(f"dependency never satisfied: job {prep} cancelled")
    assert api.store.jobs.get(report).state is JobState.RUNNING_ONPREM  # afterany: it ended


def test_the_wait_budget_starts_when_the_dependency_ends(world, clock) -> None:  # type: ignore[no-untyped-def]
    loop, api, env = world
    loop.config = SchedulerConfig(WaitPolicy(PolicyKind.CONSTANT, 30.0))
    first = submit(env, "--gpus", "4")
    then = submit(env, "--gpus", "4", "--after", first)
    loop.run_pass()
    clock.advance(RUNTIME)
    loop.run_pass()  # first ends; then is let in and starts: it never spent its 30 s budget
    stored = api.store.jobs.get(then)
    assert stored.state is JobState.RUNNING_ONPREM
    assert stored.queued_at == clock.t


def test_an_array_limit_throttles_its_elements(world, clock) -> None:  # type: ignore[no-untyped-def]
    loop, api, env = world
    made = run(["submit", "--image", "i", "--name", "s", "--array", "0-5%2", "--", "true"], env)
    assert made.exit_code == 0, made.stderr
    last = made.stdout.splitlines()[-1]
    assert last.startswith("submitted 6 jobs: s-0 … s-5, at most 2 at once; array id s-")
    ids = [line.split()[0] for line in made.stdout.splitlines()[:-1]]
    loop.run_pass()
    states = api.store.jobs.states_of(ids)
    # elements submitted in the same (virtual) instant go in index order
    assert [states[i] for i in ids[:2]] == [JobState.RUNNING_ONPREM] * 2
    held = [i for i in ids if "at most 2 at once" in (api.store.jobs.get(i).held or "")]
    assert held == ids[2:] and all(states[i] is JobState.SUBMITTED for i in held)
    clock.advance(RUNTIME)
    loop.run_pass()
    after = api.store.jobs.states_of(ids)
    # the first two ended, the next two by index run, the last two are still held
    assert [after[i] for i in ids] == (
        [JobState.SUCCEEDED] * 2 + [JobState.RUNNING_ONPREM] * 2 + [JobState.SUBMITTED] * 2
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--after", "a b"], "--after 'a b'"),
        (["--after", "abc:maybe"], "unknown condition 'maybe'"),
        (["--after", ":ok"], "expected a job id"),
        (["--after", "x" * 300], "expected a job id"),
        (["--array", "0-9%0"], "between 1 and 10000"),
        (["--array", "0-9%-1"], "whole number from 1 to 10000, got '-1'"),
        (["--array", "0-9%abc"], "got 'abc'"),
        (["--array", "0-9%99999999999999999999"], "whole number from 1 to 10000"),
        (["--array", "0-9%"], "got ''"),
    ],
)
def test_bad_after_and_limits_are_one_line_and_exit_2(world, args, message) -> None:  # type: ignore[no-untyped-def]
    _, api, env = world
    bad = run(["submit", "--image", "i", *args, "--", "true"], env)
    assert bad.exit_code == 2 and message in bad.stderr, bad.stderr
    assert "Traceback" not in bad.stderr
    assert api.store.jobs.queue(limit=5, states=list(JobState)).jobs == []


def test_an_unknown_or_hopeless_dependency_is_refused_at_submit(world) -> None:  # type: ignore[no-untyped-def]
    _, api, env = world
    unknown = run(["submit", "--image", "i", "--after", "nosuch", "--", "true"], env)
    assert unknown.exit_code != 0 and "after nosuch: no job 'nosuch'" in unknown.stderr
    other = run(
        ["submit", "--image", "i", "--name", "bobs", "--", "true"],
        {**env, "STARBURST_TOKEN": api.tokens["bob"]},
    )
    bobs = other.stdout.split()[0]
    hidden = run(["submit", "--image", "i", "--after", bobs, "--", "true"], env)
    assert hidden.exit_code != 0 and "no job" in hidden.stderr  # not alice's to wait for
    gone = submit(env, "--name", "gone")
    assert run(["cancel", gone], env).exit_code == 0
    hopeless = run(["submit", "--image", "i", "--after", "gone:ok", "--", "true"], env)
    assert hopeless.exit_code != 0 and "already cancelled" in hopeless.stderr
    fine = run(["submit", "--image", "i", "--after", "gone", "--", "true"], env)
    assert fine.exit_code == 0  # afterany: it ended, so it may run
    assert len(api.store.jobs.queue(limit=10, states=list(JobState)).jobs) == 3


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ({"after": ["a b"]}, "after"),
        ({"after": [f"j{i}" for i in range(101)]}, "after"),
        ({"after": "abc"}, "after"),
        ({"array": "s", "array_limit": 0}, "array_limit"),
        ({"array": "s", "array_limit": -1}, "array_limit"),
        ({"array": "s", "array_limit": 10**30}, "array_limit"),
        ({"array": "s", "array_limit": True}, "array_limit"),
        ({"array": "s", "array_limit": "3"}, "array_limit"),
        ({"array_limit": 3}, "needs an array"),
    ],
)
def test_the_api_answers_422_to_bad_dependency_fields(world, extra, field) -> None:  # type: ignore[no-untyped-def]
    _, api, _ = world
    body = {"image": "i", "command": "true", "gpus": 1, **extra}
    answer = api.client().post("/v1/jobs", json=body)
    assert answer.status_code == 422 and field in answer.text, answer.text


@pytest.mark.parametrize(
    ("extra", "valid"),
    [
        ({"array": "s", "array_limit": 3}, True),
        ({"array_limit": None}, True),
        ({"array": None, "array_limit": None}, True),
        ({"array": "s"}, True),
        ({"array_limit": 3}, False),
        ({"array": None, "array_limit": 3}, False),
    ],
)
def test_the_openapi_schema_states_the_array_limit_rule_the_api_enforces(extra, valid) -> None:  # type: ignore[no-untyped-def]
    """Clients and fuzzers generate from the document: it must refuse what the model does."""
    import jsonschema
    from pydantic import ValidationError

    from starburst.api.schemas.jobs import JobSubmit

    body = {"image": "i", "command": "true", "gpus": 1, **extra}
    schema = JobSubmit.model_json_schema()
    assert jsonschema.Draft202012Validator(schema).is_valid(body) is valid
    try:
        JobSubmit.model_validate(body)
        accepted = True
    except ValidationError:
        accepted = False
    assert accepted is valid


def test_a_dependency_on_an_unknown_job_is_404_as_any_unknown_id(world) -> None:  # type: ignore[no-untyped-def]
    _, api, _ = world
    body = {"image": "i", "command": "true", "gpus": 1, "after": ["nosuch:ok"]}
    answer = api.client().post("/v1/jobs", json=body)
    assert answer.status_code == 404 and "no job 'nosuch'" in answer.json()["detail"]
