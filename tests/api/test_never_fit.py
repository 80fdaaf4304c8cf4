"""A job the private cluster could never hold bursts at once, with the reason in ``explain``
— also when its team was held (cloud budget spent) at submission: it bursts on the first
pass after the hold lifts, not at the end of its budget. Through the real CLI against a
served app and a controller pass on virtual time (SQLite and PostgreSQL)."""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import ExitStack
from decimal import Decimal
from typing import Any

import pytest

from starburst.controller.loop.budgets import BudgetGate
from starburst.core.capacity import uniform_nodes
from starburst.core.kueue_jobs import WORKLOAD
from starburst.core.lifecycle import JobState
from starburst.core.policy import PolicyKind, WaitPolicy
from starburst.core.records import CostEntry, JobSpec
from starburst.sim.cloud import SimCloud
from starburst.sim.cluster import SimCluster
from tests.api.conftest import LiveServer, serve_loop
from tests.api.test_cli import run
from tests.api.test_job_dependencies import EveryJob
from tests.support.clock import ManualClock
from tests.support.databases import BOTH

DAY = 86400.0
#: a budget of 10 days for a 1000-GPU job: what it used to wait
POLICY = WaitPolicy(PolicyKind.CONSTANT, coefficient=10 * DAY)
NEVER = (
    "needs 1000 GPUs and the private cluster has 4 GPUs in all: bursts at once instead of "
    "waiting its budget"
)


@pytest.fixture
def world(  # type: ignore[no-untyped-def]
    db_url: str,
    clock: ManualClock,
    resources: ExitStack,
    open_store: Callable[[str], Any],
    serve: Callable[[Any], LiveServer],
):
    clock.set(1_800_000_000.0)
    store = open_store(db_url)
    cluster = SimCluster(uniform_nodes(1, 4), clock, EveryJob())
    cloud = SimCloud(clock, 2.5, runtimes=EveryJob())
    gate = BudgetGate(store.accounts, store.ledger, no_team_limit=Decimal(100))
    loop, api, env = serve_loop(
        db_url,
        store,
        clock,
        resources,
        serve,
        cluster,
        cloud,
        POLICY,
        {"hold": gate},
        settings={"team_job_cloud_price": {"ml": 5000.0}},  # a 1000-GPU job is $3000/h
    )
    return loop, api, env


def submit(env: dict[str, str], *args: str) -> str:
    made = run(["submit", *args, "--", "python", "train.py"], env)
    assert made.exit_code == 0, made.stderr
    return made.stdout.split()[0]


def burst_reason(env: dict[str, str], job: str) -> str:
    explained = json.loads(run(["explain", job, "--json"], env).stdout)
    return next(e["reason"] for e in explained["events"] if e["to_state"] == "bursting")


@BOTH
def test_a_job_larger_than_the_cluster_bursts_at_once_with_the_reason(world) -> None:  # type: ignore[no-untyped-def]
    loop, api, env = world
    giant = submit(env, "--gpus", "1000")
    small = submit(env, "--gpus", "4")
    loop.run_pass()
    assert api.store.jobs.get(giant).state is JobState.BURSTING
    assert api.store.jobs.get(small).state is JobState.RUNNING_ONPREM
    assert burst_reason(env, giant).startswith(NEVER + ": burst to sim")
    shown = run(["explain", giant], env).stdout
    assert NEVER in shown


@BOTH
def test_a_held_teams_never_fitting_job_bursts_once_the_hold_lifts(world) -> None:  # type: ignore[no-untyped-def]
    loop, api, env = world
    store, now = api.store, api.clock.now()
    spent = store.submissions.submit(JobSpec(gpus=1, user="alice", team="ml")).job.id
    store.ledger.record_costs([CostEntry(spent, now - 60, now, Decimal("50"), "aws")])
    store.accounts.set_team_budget("ml", Decimal("40"))  # spent: team ml may not burst
    giant = submit(env, "--gpus", "1000")
    loop.run_pass()
    assert store.jobs.get(giant).state is JobState.QUEUED
    api.clock.advance(3600)
    loop.run_pass()
    assert store.jobs.get(giant).state is JobState.QUEUED  # still held: waits on-prem
    store.accounts.set_team_budget("ml", Decimal("400"))  # raised: the hold lifts
    api.clock.advance(60)
    loop.run_pass()
    assert store.jobs.get(giant).state is JobState.BURSTING  # now, not 10 days after submitting
    assert burst_reason(env, giant).startswith(NEVER)


@BOTH
def test_a_kueue_job_is_never_judged_by_our_nodes(world) -> None:  # type: ignore[no-untyped-def]
    # a job Starburst follows for Kueue fits Kueue's quota or not: our 4-GPU node view has
    # no say, so its outlook names Kueue and no shortfall
    _, api, env = world
    store = api.store
    spec = JobSpec(gpus=16, user="alice", team="ml", extra={WORKLOAD: "team-a/big"})
    job = store.submissions.submit(spec, actor="kueue").job.id
    store.lifecycle.transition(
        job, JobState.QUEUED, reason="queued by the Kueue pass", actor="test", wait_budget=600.0
    )
    shown = run(["explain", job], env).stdout
    assert "on-prem when Kueue admits it, else the cloud in" in shown
    assert "never fits on-prem" not in shown
