"""Budgets act at once and bind everyone (issue 33, findings 2 and 5), tried as each user
would: the real CLI against a served app with auth on, the budget gate the controller builds,
and controller passes on virtual time (SQLite and PostgreSQL).

2. A budget set or lowered (``starburst admin budgets set``, another process on the same
   database) is obeyed by the very next pass: no cache.
5. A user with no team spends only within the no-team budget (``no_team_cloud_budget``, $100
   a month by default); at 0, users with no team never burst.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import ExitStack
from decimal import Decimal
from typing import Any

from starburst.controller.loop.budgets import BudgetGate
from starburst.core.capacity import uniform_nodes
from starburst.core.lifecycle import JobState
from starburst.core.policy import PolicyKind, WaitPolicy
from starburst.core.records import CostEntry, JobSpec, Role
from starburst.pricing import load_price_table
from starburst.settings import Settings
from starburst.sim.cloud import SimCloud
from starburst.sim.cluster import SimCluster
from tests.api.conftest import LiveServer, serve_loop
from tests.api.test_cli import run
from tests.api.test_job_dependencies import EveryJob
from tests.support.clock import ManualClock
from tests.support.databases import BOTH

NOW = 1_796_000_000.0  # 2026-11-30
POLICY = WaitPolicy(PolicyKind.COMPUTE, 600.0)  # a 16-GPU job would wait 2h40m on its budget


def world(  # type: ignore[no-untyped-def]
    db_url: str,
    clock: ManualClock,
    resources: ExitStack,
    open_store: Callable[[str], Any],
    serve: Callable[[Any], LiveServer],
    **settings: Any,
):
    """A 4-GPU private cluster, a simulated cloud, the budget gate as the controller builds
    it, a served API; alice (ml), bob (vision), carol (no team)."""
    clock.set(NOW)
    store = open_store(db_url)
    given = Settings(database_url=db_url, **settings)
    gate = BudgetGate(
        store.accounts,
        store.ledger,
        no_team_limit=Decimal(str(given.no_team_cloud_budget)),
    )
    loop, api, env = serve_loop(
        db_url,
        store,
        clock,
        resources,
        serve,
        SimCluster(uniform_nodes(1, 4), clock, EveryJob()),
        SimCloud(clock, 2.5, runtimes=EveryJob()),
        POLICY,
        {"hold": gate},
        prices=load_price_table(),  # the shipped table: 16 A100s are within the job ceiling
        settings=settings,
    )
    store.accounts.save_user("carol", team=None)
    api.tokens["carol"] = store.accounts.issue_token("carol", Role.USER).secret
    return loop, api, env


def submit(env: dict[str, str], *args: str) -> str:
    made = run(["submit", *args, "--", "true"], env)
    assert made.exit_code == 0, made.stderr
    return str(made.stdout.split()[0])


def as_user(api, who: str) -> dict[str, str]:  # type: ignore[no-untyped-def]
    return {"STARBURST_SERVER": api.url, "STARBURST_TOKEN": api.tokens[who]}


@BOTH
def test_finding_2_a_lowered_budget_stops_bursts_on_the_very_next_pass(  # type: ignore[no-untyped-def]
    db_url, clock, resources, open_store, serve
) -> None:
    loop, api, env = world(db_url, clock, resources, open_store, serve)
    store = api.store
    earlier = store.submissions.submit(
        JobSpec(gpus=1, user="alice", team="ml"), at=NOW - 3600
    ).job.id
    store.ledger.record_costs([CostEntry(earlier, NOW - 3600, NOW - 60, Decimal("0.40"), "aws")])
    loop.run_pass()  # the controller has looked at the budgets: none yet
    lowered = run(["admin", "budgets", "set", "ml", "0.30", "--url", db_url], {})
    assert lowered.exit_code == 0, lowered.stderr
    clock.advance(20)
    job = submit(env, "--gpus", "16")  # never fits the 4-GPU cluster: would burst at once
    report = loop.run_pass()
    assert report.burst == []
    assert store.jobs.get(job).state is JobState.QUEUED
    assert "team ml spent $0.40 of its $0.30 cloud budget" in dict(report.held)[job]
    bobs = submit(as_user(api, "bob"), "--gpus", "16")  # team vision
    clock.advance(1)
    assert loop.run_pass().burst == [bobs]
    raised = run(["admin", "budgets", "set", "ml", "100", "--url", db_url], {})
    assert raised.exit_code == 0, raised.stderr
    clock.advance(1)
    assert loop.run_pass().burst == [job]  # raised: seen by the next pass too


@BOTH
def test_finding_5_a_user_with_no_team_spends_only_within_the_no_team_budget(  # type: ignore[no-untyped-def]
    db_url, clock, resources, open_store, serve
) -> None:
    loop, api, env = world(db_url, clock, resources, open_store, serve)
    store, carol = api.store, as_user(api, "carol")
    first = submit(carol, "--gpus", "16")
    assert loop.run_pass().burst == [first]  # within the default $100 a month
    store.ledger.record_costs([CostEntry(first, NOW, NOW + 60, Decimal("100.00"), "aws")])
    clock.advance(60)
    second = submit(carol, "--gpus", "16")
    report = loop.run_pass()
    assert report.burst == [] and store.jobs.get(second).state is JobState.QUEUED
    why = dict(report.held)[second]
    assert why.startswith("users with no team spent $100.00 of their shared $100.00 cloud")
    explained = json.loads(run(["explain", second, "--json"], carol).stdout)
    assert "no_team_cloud_budget" in explained["summary"]
    alices = submit(env, "--gpus", "16")  # team ml: its own budget (none)
    clock.advance(1)
    assert loop.run_pass().burst == [alices]


@BOTH
def test_finding_5_at_a_no_team_budget_of_0_users_with_no_team_never_burst(  # type: ignore[no-untyped-def]
    db_url, clock, resources, open_store, serve
) -> None:
    loop, api, _ = world(db_url, clock, resources, open_store, serve, no_team_cloud_budget=0)
    job = submit(as_user(api, "carol"), "--gpus", "16")
    report = loop.run_pass()
    assert report.burst == [] and api.store.jobs.get(job).state is JobState.QUEUED
    assert dict(report.held)[job].startswith("you have no team, and users with no team may not")
