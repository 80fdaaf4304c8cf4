"""Job arrays as Slurm users expect them (issue 34, item 4), through the real CLI against a
served app: elements start in index order even when they enter the queue in one instant
(submitted together on the virtual clock, or let in together by a throttle), and every
array — with or without a ``%`` limit — has an array id that ``status`` and ``cancel``
take as a whole."""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import ExitStack
from typing import Any

import pytest

from starburst.core.capacity import uniform_nodes
from starburst.core.lifecycle import JobState
from starburst.sim.cluster import SimCluster
from tests.api.conftest import LiveServer, serve_loop
from tests.api.test_cli import run
from tests.api.test_job_dependencies import RUNTIME, EveryJob
from tests.support.clock import ManualClock
from tests.support.databases import BOTH


@pytest.fixture
def one_gpu(  # type: ignore[no-untyped-def]
    db_url: str,
    clock: ManualClock,
    resources: ExitStack,
    open_store: Callable[[str], Any],
    serve: Callable[[Any], LiveServer],
):
    """A cluster of one 1-GPU node: one element runs at a time, so the start order shows."""
    store = open_store(db_url)
    cluster = SimCluster(uniform_nodes(1, 1), clock, EveryJob())
    return serve_loop(db_url, store, clock, resources, serve, cluster, None)


def _submit_array(env: dict[str, str], spec: str, *extra: str) -> tuple[list[str], str]:
    made = run(["submit", "--name", "sweep", "--array", spec, *extra, "--", "true"], env)
    assert made.exit_code == 0, made.stderr
    lines = made.stdout.splitlines()
    array_id = lines[-1].rsplit("array id ", 1)[1]
    return [line.split()[0] for line in lines[:-1]], array_id


def _start_order(loop: Any, api: Any, clock: ManualClock, ids: list[str]) -> list[str]:
    """Run the loop until every element ran; the elements in the order they started."""
    started: list[str] = []
    for _ in range(len(ids) + 1):
        loop.run_pass()
        started += [
            i
            for i in ids
            if i not in started
            and api.store.jobs.get(i).state is not JobState.SUBMITTED
            and api.store.jobs.get(i).started_at is not None
        ]
        clock.advance(RUNTIME)
    return started


@BOTH
@pytest.mark.parametrize("spec", ["0-7", "0-7%3"])
def test_elements_start_in_index_order(one_gpu, clock, spec) -> None:  # type: ignore[no-untyped-def]
    """Eight elements submitted in one virtual instant (ties on submit and queue time); with
    a throttle, three are let in at once and later two at a time enter in one pass. Before
    the fix the ties went by random job id: sweep-3 could start before sweep-2."""
    loop, api, env = one_gpu
    ids, _ = _submit_array(env, spec)
    assert _start_order(loop, api, clock, ids) == ids
    indices = [api.store.jobs.get(i).job.array_index for i in ids]
    assert indices == list(range(8))


@BOTH
def test_an_array_without_a_limit_has_an_id_status_and_cancel_take(one_gpu, clock) -> None:  # type: ignore[no-untyped-def]
    loop, api, env = one_gpu
    ids, array_id = _submit_array(env, "0-3")
    assert array_id.startswith("sweep-") and len(array_id) == len("sweep-") + 8
    loop.run_pass()
    shown = run(["status", array_id], env)
    assert shown.exit_code == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0] == f"array {array_id}: 4 jobs (3 queued, 1 running_onprem)"
    assert [line.split()[1] for line in lines[2:]] == ["sweep-0", "sweep-1", "sweep-2", "sweep-3"]
    as_json = json.loads(run(["status", array_id, "--json"], env).stdout)
    assert [e["array_index"] for e in as_json["elements"]] == [0, 1, 2, 3]
    assert as_json["user"] == "alice" and as_json["limit"] is None
    # another user cannot see it; an admin names it as <user>/<array id>
    bob = {**env, "STARBURST_TOKEN": api.tokens["bob"]}
    hidden = run(["status", array_id], bob)
    assert hidden.exit_code == 1 and f"no job or array {array_id}" in hidden.stderr
    root = {**env, "STARBURST_TOKEN": api.tokens["root"]}
    assert run(["status", f"alice/{array_id}"], root).stdout.startswith(f"array {array_id}:")
    assert run(["cancel", array_id], bob).exit_code == 1
    # cancel the whole array: the running element and the queued ones
    clock.advance(RUNTIME)
    loop.run_pass()  # sweep-0 succeeded, sweep-1 runs
    cancelled = run(["cancel", array_id], env)
    assert cancelled.exit_code == 0, cancelled.stderr
    assert cancelled.stdout.splitlines()[-1] == f"cancelled array {array_id} (4 jobs)"
    states = api.store.jobs.states_of(ids)
    assert [states[i] for i in ids] == [JobState.SUCCEEDED] + [JobState.CANCELLED] * 3
    assert "cancelled by alice" in api.store.jobs.events(ids[1])[-1].reason


@BOTH
def test_hold_and_release_take_an_array_id(one_gpu, clock) -> None:  # type: ignore[no-untyped-def]
    """``hold ARRAY`` holds the waiting elements (the running one goes on), and ``release
    ARRAY`` lets the held ones back in, still in index order."""
    loop, api, env = one_gpu
    ids, array_id = _submit_array(env, "0-3")
    loop.run_pass()  # sweep-0 runs, the others wait
    held = run(["hold", array_id], env)
    assert held.exit_code == 0, held.stderr
    assert held.stdout.splitlines()[-1] == f"held 3 of 4 jobs of array {array_id}"
    assert [bool(api.store.jobs.get(i).held) for i in ids] == [False, True, True, True]
    clock.advance(RUNTIME)
    loop.run_pass()  # sweep-0 ends; nothing else may start while held
    states = api.store.jobs.states_of(ids)
    assert states[ids[0]] is JobState.SUCCEEDED
    assert all(api.store.jobs.get(i).started_at is None for i in ids[1:])
    again = run(["hold", array_id], env)  # nothing left to hold: still one clear line
    assert again.stdout.splitlines()[-1] == f"held 0 of 4 jobs of array {array_id}"
    released = run(["release", array_id], env)
    assert released.exit_code == 0, released.stderr
    assert released.stdout.splitlines()[-1] == f"released 3 of 4 jobs of array {array_id}"
    assert not any(api.store.jobs.get(i).held for i in ids)
    assert _start_order(loop, api, clock, ids[1:]) == ids[1:]
    unknown = run(["hold", "nosuch"], env)
    assert unknown.exit_code == 1
    assert unknown.stderr.strip() == "error: no job or array nosuch (HTTP 404)"


def test_an_unknown_job_or_array_is_one_line(api) -> None:  # type: ignore[no-untyped-def]
    env = {"STARBURST_SERVER": api.url, "STARBURST_TOKEN": api.tokens["alice"]}
    for args in (["status", "nosuch"], ["cancel", "nosuch"]):
        answer = run(args, env)
        assert answer.exit_code == 1
        assert answer.stderr.strip() == "error: no job or array nosuch (HTTP 404)"


def test_array_index_needs_an_array(api) -> None:  # type: ignore[no-untyped-def]
    client = api.client("alice")
    refused = client.post("/v1/jobs", json={"command": "true", "gpus": 1, "array_index": 2})
    assert refused.status_code == 422 and "array_index needs an array" in refused.text
    bad = client.post(
        "/v1/jobs", json={"command": "true", "gpus": 1, "array": "a", "array_index": -1}
    )
    assert bad.status_code == 422
