"""Held jobs (waiting for a dependency or an array slot) read the same in ``starburst jobs``
and ``starburst queue``: ``held``, with the reason, outside the line (no position, none
taken from others); ``--state held`` lists them; ``cancel --state waiting`` (Slurm's
PENDING) takes them too. Through the real CLI against a served app and a controller pass
(SQLite and PostgreSQL)."""

from __future__ import annotations

import json

from starburst.core.lifecycle import JobState
from tests.api.test_cli import run
from tests.api.test_job_dependencies import submit
from tests.api.test_job_dependencies import world as world  # the fixture
from tests.support.databases import BOTH


def scene(loop, api, env):  # type: ignore[no-untyped-def]
    """On a 4-GPU cluster: prep runs, big waits in line, train waits for prep, and an
    array of three one at a time (one element waits in line, two are held). Returns the
    ids by name, and the names of the held jobs."""
    api.clock.advance(1)
    prep = submit(env, "--name", "prep", "--gpus", "4")
    api.clock.advance(1)
    big = submit(env, "--name", "big", "--gpus", "4")
    api.clock.advance(1)
    train = submit(env, "--name", "train", "--after", "prep:ok")
    api.clock.advance(1)
    made = run(["submit", "--array", "0-2%1", "--name", "sw", "--", "true"], env)
    assert made.exit_code == 0, made.stderr
    loop.run_pass()
    every = api.store.jobs.queue(limit=50, states=tuple(JobState)).jobs
    ids = {s.job.name: s.id for s in every}
    assert ids["prep"] == prep and ids["big"] == big and ids["train"] == train
    held = {s.job.name for s in every if s.held is not None}
    assert "train" in held and len(held) == 3  # and two of the array
    (slot,) = {"sw-0", "sw-1", "sw-2"} - held
    assert api.store.jobs.get(ids[slot]).state is JobState.QUEUED
    return ids, held, slot


def rows(text: str) -> dict[str, list[str]]:
    """A listing's rows by job name: POS, ID, NAME, USER, STATE, ..."""
    return {cells[2]: cells for cells in (line.split() for line in text.splitlines()[1:])}


@BOTH
def test_jobs_and_queue_show_held_jobs_alike_outside_the_line(world) -> None:  # type: ignore[no-untyped-def]
    loop, api, env = world
    ids, held, slot = scene(loop, api, env)
    listed = rows(run(["jobs"], env).stdout)
    queue_text = run(["queue"], env).stdout
    first, *table = queue_text.splitlines()
    assert first == "2 waiting in all, 3 held out of it"
    queued = rows("\n".join(table))
    assert set(queued) == held | {"big", slot}  # every held job, none left out
    for name in held:
        assert listed[name][0] == queued[name][0] == "-", name  # no position
        assert listed[name][4] == queued[name][4] == "held", name
    # held jobs take no place ahead: the line is big, then the array's element with a slot
    assert listed["big"][0] == queued["big"][0] == "1"
    assert listed[slot][0] == queued[slot][0] == "2" and queued[slot][4] == "queued"
    assert "held: waiting for job" in queue_text and "waiting for a slot of array" in queue_text

    view = api.client("alice").get("/v1/queue").json()
    line = [(e["position"], e["id"]) for e in view["jobs"][:2]]
    assert line == [(1, ids["big"]), (2, ids[slot])]
    outside = {e["id"]: e for e in view["jobs"][2:]}
    assert set(outside) == {ids[name] for name in held}
    assert all(e["position"] is None and e["held"] for e in outside.values())
    assert api.client("bob").get("/v1/queue").json()["jobs"] == []  # not bob's business


@BOTH
def test_state_held_lists_only_held_jobs_and_mixes_with_other_states(world) -> None:  # type: ignore[no-untyped-def]
    loop, api, env = world
    ids, held, slot = scene(loop, api, env)
    only = rows(run(["jobs", "--state", "held"], env).stdout)
    assert set(only) == held
    mixed = rows(run(["jobs", "--state", "held,queued"], env).stdout)
    assert set(mixed) == held | {"big", slot}
    waiting = rows(run(["jobs", "--state", "waiting"], env).stdout)
    assert set(waiting) == held | {"big", slot}
    running = rows(run(["jobs", "--state", "held,running"], env).stdout)
    assert set(running) == held | {"prep"}
    over_http = api.client("alice").get("/v1/jobs", params={"state": "held"}).json()["jobs"]
    assert {j["id"] for j in over_http} == {ids[name] for name in held}
    assert run(["jobs", "--state", "held", "--name", "nothing*"], env).stdout == (
        "no jobs in held named 'nothing*'\n"
    )
    assert run(["jobs", "--all", "--name", "nothing*"], env).stdout == (
        "no jobs named 'nothing*'\n"
    )  # not "use --all": it was given


@BOTH
def test_cancel_by_state_waiting_takes_held_jobs_as_slurms_pending_does(world) -> None:  # type: ignore[no-untyped-def]
    loop, api, env = world
    ids, held, slot = scene(loop, api, env)
    refused = run(["cancel", "--all", "--state", "succeeded"], env)
    assert refused.exit_code == 2 and "ended jobs cannot be cancelled" in refused.stderr
    assert api.store.jobs.get(ids["prep"]).state is JobState.RUNNING_ONPREM  # nothing cancelled
    only_held = run(["cancel", "--all", "--state", "held", "--yes"], env)
    assert only_held.exit_code == 0, only_held.stderr
    assert only_held.stdout.splitlines()[-1] == "cancelled 3 of 3 jobs"
    assert {api.store.jobs.get(ids[name]).state for name in held} == {JobState.CANCELLED}
    assert api.store.jobs.get(ids["big"]).state is JobState.QUEUED
    # a fresh held job, then Slurm's `scancel --state=PENDING`: held and queued alike
    after = submit(env, "--name", "after", "--after", "prep")
    loop.run_pass()
    pending = run(["cancel", "--all", "--state", "waiting", "--yes"], env)
    assert pending.stdout.splitlines()[-1] == "cancelled 3 of 3 jobs"  # big, the slot, after
    assert {api.store.jobs.get(j).state for j in (ids["big"], ids[slot], after)} == {
        JobState.CANCELLED
    }
    left = json.loads(run(["jobs", "--json"], env).stdout)
    assert [j["name"] for j in left] == ["prep"]
