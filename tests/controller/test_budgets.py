"""A team over its monthly cloud budget stops bursting; its jobs wait on-prem with the reason."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

from starburst.adapters.db.store import SqlStore
from starburst.controller.loop.budgets import BudgetGate
from starburst.controller.loop.scheduling import SchedulingLoop
from starburst.core.capacity import Part, uniform_nodes
from starburst.core.cycle import SchedulerConfig
from starburst.core.job import Job
from starburst.core.lifecycle import JobState
from starburst.core.policy import PolicyKind, WaitPolicy
from starburst.core.records import CostEntry, JobSpec
from starburst.sim.cloud import SimCloud
from starburst.sim.cluster import SimCluster
from tests.support.clock import ManualClock
from tests.support.databases import upgrade

NOW = 1_796_000_000.0  # 2026-11-30


def test_a_team_over_budget_is_held_on_prem_while_others_burst(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'b.db'}"
    upgrade(url)
    clock = ManualClock(NOW)
    store = SqlStore.open(url, clock=clock)
    store.submissions.submit(JobSpec(id="old-ml", gpus=1, team="ml"), at=NOW - 3600)
    store.ledger.record_costs([CostEntry("old-ml", NOW - 3600, NOW - 1800, Decimal("300"), "aws")])
    store.accounts.set_team_budget("ml", Decimal("250"))
    store.accounts.set_team_budget("cv", Decimal("1000"))
    store.lifecycle.transition("old-ml", JobState.CANCELLED, reason="test", actor="test")

    gate = BudgetGate(store.accounts, store.ledger, no_team_limit=Decimal(100))
    held = gate(NOW)
    assert set(held) == {"ml"}
    assert "team ml spent $300.00 of its $250.00 cloud budget" in held["ml"]

    cluster = SimCluster(uniform_nodes(1, 8), clock, {"ml-1": 60.0, "cv-1": 60.0})
    cluster.start(Job("busy", NOW, 8, runtime=1e6), (Part(0, "node-0", 8, 0.0, 0.0),))
    loop = SchedulingLoop(
        store,
        cluster,
        SimCloud(clock, 2.5),
        clock,
        SchedulerConfig(WaitPolicy(PolicyKind.NO_WAIT)),
        hold=gate,
    )
    store.submissions.submit(JobSpec(id="ml-1", gpus=1, team="ml"), at=NOW)
    store.submissions.submit(JobSpec(id="cv-1", gpus=1, team="cv"), at=NOW)
    report = loop.run_pass()
    assert report.burst == ["cv-1"]
    assert [job for job, _ in report.held] == ["ml-1"]
    assert store.jobs.get("ml-1").state is JobState.QUEUED
    cluster.cancel("busy")  # GPUs free up: the held job runs on-prem
    clock.advance(1)
    assert loop.run_pass().started == ["ml-1"]
    store.close()
