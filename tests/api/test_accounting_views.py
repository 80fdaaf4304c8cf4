"""``starburst queue --all`` (the whole line and every running job, others' redacted: never
"0 waiting" with GPUs busy and no word why) and ``starburst jobs --all`` with Slurm's
``sacct`` columns (elapsed, exit code, cost) and ``--since``/``--until``. Through the real
CLI against a served app and controller passes on virtual time (SQLite and PostgreSQL)."""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import ExitStack
from datetime import UTC, datetime
from typing import Any

import pytest

from starburst.core.capacity import uniform_nodes
from starburst.core.failure import with_output
from starburst.core.lifecycle import JobState
from starburst.core.policy import PolicyKind
from starburst.sim.cloud import SimCloud
from starburst.sim.cluster import SimCluster
from tests.api.conftest import LiveServer, serve_loop
from tests.api.test_cli import run
from tests.api.test_job_dependencies import EveryJob
from tests.support.clock import ManualClock
from tests.support.databases import BOTH

NOW = 1_796_000_000.0  # 2026-11-30


@pytest.fixture
def world(  # type: ignore[no-untyped-def]
    db_url: str,
    clock: ManualClock,
    resources: ExitStack,
    open_store: Callable[[str], Any],
    serve: Callable[[Any], LiveServer],
):
    """4 on-prem GPUs, a simulated cloud at $2.50 per GPU-hour, No-Wait (what does not fit
    bursts at once); every job runs 100 s."""
    clock.set(NOW)
    store = open_store(db_url)
    return serve_loop(
        db_url,
        store,
        clock,
        resources,
        serve,
        SimCluster(uniform_nodes(1, 4), clock, EveryJob()),
        SimCloud(clock, 2.5, runtimes=EveryJob()),
        PolicyKind.NO_WAIT,
    )


def submit(env: dict[str, str], *args: str) -> str:
    made = run(["submit", *args, "--", "true"], env)
    assert made.exit_code == 0, made.stderr
    return str(made.stdout.split()[0])


def rows(text: str) -> dict[str, list[str]]:
    """A table's rows by their second column (the job id)."""
    return {cells[1]: cells for cells in (line.split() for line in text.splitlines()[1:])}


@BOTH
def test_queue_all_shows_running_jobs_redacted(world) -> None:  # type: ignore[no-untyped-def]
    loop, api, env = world
    bob = {**env, "STARBURST_TOKEN": api.tokens["bob"]}
    big = submit(bob, "--name", "secret-model", "--gpus", "4")
    api.clock.advance(1)
    mine = submit(env, "--name", "cloudy", "--gpus", "1")
    loop.run_pass()
    loop.run_pass()
    api.clock.advance(30)

    plain = run(["queue"], env).stdout
    assert plain.splitlines() == ["0 waiting in all", "none of your jobs is waiting"]
    shown = run(["queue", "--all"], env)
    assert shown.exit_code == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[:2] == ["0 waiting in all; 2 running on 5 GPUs", "nothing is waiting"]
    assert lines[3] == "running:"
    table = {cells[0]: cells for cells in (line.split() for line in lines[5:])}
    assert table[big[:8]] == [big[:8], "-", "-", "running_onprem", "4", "30s"]
    assert table[mine[:8]][:4] == [mine[:8], "cloudy", "alice", "running_cloud"]
    assert "secret" not in shown.stdout and "bob" not in shown.stdout

    view = json.loads(run(["queue", "--all", "-o", "json"], env).stdout)
    assert {r["id"]: r["user"] for r in view["running"]} == {big: None, mine: "alice"}
    admin = api.client("root").get("/v1/queue", params={"all": "true"}).json()
    assert {r["id"]: r["name"] for r in admin["running"]} == {big: "secret-model", mine: "cloudy"}
    assert api.client("alice").get("/v1/queue").json()["running"] is None  # not asked


@BOTH
def test_jobs_all_has_elapsed_exit_code_and_cost_and_a_window(world) -> None:  # type: ignore[no-untyped-def]
    loop, api, env = world
    hog = submit(env, "--name", "hog", "--gpus", "4")
    api.clock.advance(1)
    cloudy = submit(env, "--name", "cloudy", "--gpus", "2")
    loop.run_pass()
    loop.run_pass()
    api.clock.advance(200)
    loop.run_pass()
    loop.run_pass()
    api.clock.advance(600)
    bad = submit(env, "--name", "bad", "--gpus", "1")
    api.store.lifecycle.transition(
        bad, JobState.FAILED, reason=with_output("exit code 3", "boom"), actor="test"
    )
    assert {api.store.jobs.get(j).state for j in (hog, cloudy)} == {JobState.SUCCEEDED}

    listed = run(["jobs", "--all"], env)
    assert listed.exit_code == 0, listed.stderr
    header = listed.stdout.splitlines()[0].split()
    assert header[-4:] == ["ELAPSED", "EXIT", "COST", "WHERE"]
    by_id = rows(listed.stdout)
    cost = api.client("alice").get(f"/v1/jobs/{cloudy}").json()["costs"]
    assert cost and cost[0]["currency"] == "USD" and float(cost[0]["amount"]) > 0
    assert by_id[hog[:8]][4:10] == ["succeeded", "4", "-", "-", "1m40s", "0"]
    assert by_id[hog[:8]][10] == "-"  # on-prem: no cloud money
    assert by_id[cloudy[:8]][4] == "succeeded" and by_id[cloudy[:8]][9] == "0"
    assert by_id[cloudy[:8]][10:12] == [cost[0]["amount"], "USD"]
    assert by_id[bad[:8]][4] == "failed" and by_id[bad[:8]][8:11] == ["-", "3", "-"]
    data = json.loads(run(["jobs", "--all", "--json"], env).stdout)
    assert {j["id"]: j["exit_code"] for j in data} == {hog: 0, cloudy: 0, bad: 3}
    assert {j["id"]: j["elapsed_s"] for j in data}[hog] == 100.0

    # --since: not ended before (the two runs ended 10 minutes ago); implies every state
    recent = rows(run(["jobs", "--since", "5m"], env).stdout)
    assert set(recent) == {bad[:8]}
    # --until: submitted before it (an ISO datetime, UTC without a zone)
    first = datetime.fromtimestamp(NOW + 0.5, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")
    assert set(rows(run(["jobs", "--until", first], env).stdout)) == {hog[:8]}
    both = rows(run(["jobs", "--since", "2026-11-01", "--until", "now"], env).stdout)
    assert set(both) == {hog[:8], cloudy[:8]}  # bad was submitted at "now": not before


@BOTH
def test_jobs_window_refuses_bad_input_with_one_line(world) -> None:  # type: ignore[no-untyped-def]
    _, _, env = world
    for args, expected in (
        (["--since", "yesterday"], "since: 'yesterday' is not a duration back from now"),
        (["--until", "2026-13-45"], "until: '2026-13-45' is not a duration back from now"),
        (["--since", "1h", "--until", "2h"], "until (2h) must be after since (1h)"),
    ):
        done = run(["jobs", *args], env)
        assert done.exit_code == 1, args
        (line,) = done.stderr.splitlines()
        assert line.startswith("error: ") and expected in line and "(HTTP 422)" in line, line
        assert done.stdout == ""
