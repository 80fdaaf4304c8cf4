"""The team ceiling on cloud $/h holds at burst time too: jobs that each passed it at
submission, while their team ran nothing in the cloud, may not burst together above it. The
one that would waits on-prem with the reason (``explain``, the pass report) and runs once
there is room. Through the real CLI against a served app, a controller pass on virtual time
(SQLite and PostgreSQL)."""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import ExitStack
from typing import Any

from starburst.core.capacity import uniform_nodes
from starburst.core.lifecycle import JobState
from starburst.core.policy import PolicyKind, WaitPolicy
from starburst.sim.cloud import SimCloud
from starburst.sim.cluster import SimCluster
from tests.api.conftest import LiveServer, serve_loop
from tests.api.test_cli import run
from tests.api.test_job_dependencies import RUNTIME, EveryJob
from tests.support.clock import ManualClock
from tests.support.databases import BOTH

CEILING = 12.0  # $/h; a 2-GPU job costs $5/h in the simulated cloud
HELD = (
    "team ml runs $10.00/h in the cloud; bursting this job ($5.00/h, gpu:2 at sim) would take "
    "it above its ceiling of $12.00/h, so it waits on-prem until the team's cloud jobs end or "
    "GPUs free up"
)


@BOTH
def test_jobs_that_passed_the_team_ceiling_one_by_one_do_not_burst_above_it(  # type: ignore[no-untyped-def]
    db_url: str,
    clock: ManualClock,
    resources: ExitStack,
    open_store: Callable[[str], Any],
    serve: Callable[[Any], LiveServer],
) -> None:
    store = open_store(db_url)
    cluster = SimCluster(uniform_nodes(1, 2), clock, EveryJob())
    cloud = SimCloud(clock, 2.5, runtimes=EveryJob())
    loop, _, env = serve_loop(
        db_url,
        store,
        clock,
        resources,
        serve,
        cluster,
        cloud,
        WaitPolicy(PolicyKind.CONSTANT, coefficient=60.0),
        {"team_ceiling": CEILING},
        settings={"max_team_cloud_price": CEILING},
        quote=lambda: cloud.quote,
    )

    def submit(name: str) -> str:
        clock.advance(1)  # one after the other: the queue's order is theirs
        made = run(["submit", "--gpus", "2", "--name", name, "--", "python", "train.py"], env)
        assert made.exit_code == 0, made.stderr  # alone, each is $5/h under $12/h
        return made.stdout.split()[0]

    blocker = submit("blocker")
    loop.run_pass()
    assert store.jobs.get(blocker).state is JobState.RUNNING_ONPREM
    jobs = [submit(f"j{i}") for i in range(3)]
    loop.run_pass()
    clock.advance(60)  # every budget has expired by this pass
    report = loop.run_pass()
    states = [store.jobs.get(j).state for j in jobs]
    assert states == [JobState.BURSTING, JobState.BURSTING, JobState.QUEUED]
    assert report.held == [(jobs[2], HELD)]
    explained = json.loads(run(["explain", "j2", "--json"], env).stdout)
    assert explained["summary"] == (
        f"waiting 1m of a 1m budget; on-prem when GPUs free; held from the cloud ({HELD})"
    )
    clock.advance(1)
    assert loop.run_pass().burst == []  # still over the ceiling: held, not burst

    clock.advance(40)  # the blocker ended, the cloud jobs still run: it starts on-prem
    loop.run_pass()
    assert store.jobs.get(blocker).state is JobState.SUCCEEDED
    assert store.jobs.get(jobs[2]).state is JobState.RUNNING_ONPREM


@BOTH
def test_a_job_held_by_the_team_ceiling_bursts_once_its_cloud_jobs_end(  # type: ignore[no-untyped-def]
    db_url: str,
    clock: ManualClock,
    resources: ExitStack,
    open_store: Callable[[str], Any],
    serve: Callable[[Any], LiveServer],
) -> None:
    store = open_store(db_url)
    cluster = SimCluster(uniform_nodes(1, 1), clock, EveryJob())  # 2-GPU jobs never fit here
    cloud = SimCloud(clock, 2.5, runtimes=EveryJob())
    loop, _, env = serve_loop(
        db_url,
        store,
        clock,
        resources,
        serve,
        cluster,
        cloud,
        PolicyKind.NO_WAIT,
        {"team_ceiling": 6.0},
    )
    jobs = []
    for _ in range(2):
        clock.advance(1)
        jobs.append(run(["submit", "--gpus", "2", "--", "true"], env).stdout.split()[0])
    loop.run_pass()
    assert [store.jobs.get(j).state for j in jobs] == [JobState.BURSTING, JobState.QUEUED]
    clock.advance(RUNTIME / 2)
    assert loop.run_pass().next_wakeup > clock.now()  # a held job is no reason to spin
    assert store.jobs.get(jobs[1]).state is JobState.QUEUED
    clock.advance(RUNTIME)  # the first one ended in the cloud: room under the ceiling
    loop.run_pass()
    assert store.jobs.get(jobs[0]).state is JobState.SUCCEEDED
    assert store.jobs.get(jobs[1]).state is JobState.BURSTING
