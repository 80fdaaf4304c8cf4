"""Dependencies and array throttles in the live controller: the simulator's decisions on the
same trace, and what only live jobs do (fail, get cancelled, wait with a reason)."""

from __future__ import annotations

import math
import random
from dataclasses import replace
from pathlib import Path

import pytest

from starburst.adapters.db.store import SqlStore
from starburst.controller.loop.scheduling import SchedulingLoop
from starburst.core.capacity import uniform_nodes
from starburst.core.cycle import SchedulerConfig
from starburst.core.dependencies import AfterKind, Dependency
from starburst.core.lifecycle import JobState
from starburst.core.policy import PolicyKind, WaitPolicy
from starburst.core.records import JobSpec
from starburst.sim.cloud import SimCloud
from starburst.sim.cluster import SimCluster
from starburst.sim.engine import SimOptions
from starburst.sim.report import JobOutcome, SimResult
from tests.controller.test_parity import assert_same, trace
from tests.sim.test_dependencies import with_dependencies
from tests.support.clock import ManualClock
from tests.support.databases import upgrade

CASES = [(kind, ooo) for kind in PolicyKind for ooo in (False, True)]


@pytest.mark.parametrize(("kind", "out_of_order"), CASES, ids=lambda v: str(getattr(v, "value", v)))
def test_controller_and_simulator_agree_on_dependencies_and_throttles(
    kind: PolicyKind, out_of_order: bool
) -> None:
    rng = random.Random(f"deps:{kind.value}:{out_of_order}")
    nodes = uniform_nodes(2, 4)
    # no estimate bands and round coefficients: a job let in after a hold is queued at an
    # end instant, and its budget expiry stays on the millisecond grid the store keeps exactly
    plain = [
        replace(j, estimate=None, estimate_low=None, estimate_high=None) for j in trace(rng, 40, 8)
    ]
    jobs = with_dependencies(plain, rng.randrange(1000))
    assert sum(bool(j.after) for j in jobs) > 5 and sum(j.array is not None for j in jobs) > 5
    unit = {PolicyKind.CONSTANT: 600.0, PolicyKind.RESOURCE: 60.0, PolicyKind.STAR: 60.0}
    config = SchedulerConfig(
        WaitPolicy(kind, rng.choice([0.0, 0.5, 2.0]) * unit.get(kind, 1.0)),
        out_of_order,
        rng.choice([None, 2]),
    )
    sim = assert_same(jobs, nodes, config, SimOptions())
    for job in jobs:  # and no job started before what it waits for ended
        for dep in job.after:
            assert outcome(sim, job.id).start >= outcome(sim, dep.job_id).end


def outcome(result: SimResult, job_id: str) -> JobOutcome:
    return next(o for o in result.outcomes if o.job.id == job_id)


EPOCH = 1_780_000_000.0


class Live:
    """A controller on the SQL store and the in-memory cluster and cloud, stepped by hand."""

    def __init__(self, tmp: Path, runtimes: dict[str, float], policy: WaitPolicy) -> None:
        url = f"sqlite:///{tmp / 'live.db'}"
        upgrade(url)
        self.clock = ManualClock(EPOCH)
        self.store = SqlStore.open(url, clock=self.clock)
        self.cluster = SimCluster(uniform_nodes(1, 4), self.clock, runtimes)
        cloud = SimCloud(self.clock, 2.5, runtimes=runtimes)
        self.loop = SchedulingLoop(
            self.store, self.cluster, cloud, self.clock, SchedulerConfig(policy)
        )

    def submit(self, job_id: str, gpus: int = 1, **kw: object) -> str:
        spec = JobSpec(id=job_id, gpus=gpus, declared_runtime=100.0, **kw)  # type: ignore[arg-type]
        return self.store.submissions.submit(spec).job.id

    def at(self, seconds: float) -> None:
        self.clock.set(EPOCH + seconds)
        self.loop.run_pass()


@pytest.fixture
def live(tmp_path: Path):  # type: ignore[no-untyped-def]
    runtimes = {f"j{i}": 100.0 for i in range(20)} | {"a": 100.0, "b": 100.0, "c": 100.0}
    world = Live(tmp_path, runtimes, WaitPolicy(PolicyKind.CONSTANT, 50.0))
    yield world
    world.store.close()


def test_a_held_job_says_why_and_its_budget_starts_when_it_is_let_in(live: Live) -> None:
    live.submit("a", gpus=4)
    live.submit("b", gpus=4, after=(Dependency("a", AfterKind.OK),))
    live.at(0)
    b = live.store.jobs.get("b")
    assert (b.state, b.held) == (JobState.SUBMITTED, "waiting for job a to succeed")
    assert b.wait_budget is None
    live.at(100)  # a ends and succeeds; b enters the queue now and starts on-prem
    b = live.store.jobs.get("b")
    assert (b.state, b.held, b.queued_at) == (JobState.RUNNING_ONPREM, None, EPOCH + 100)


def test_afterok_on_a_failure_cancels_and_afterany_runs(live: Live) -> None:
    live.submit("a")
    live.submit("b", after=(Dependency("a", AfterKind.OK),))
    live.submit("c", after=(Dependency("a"),))
    live.at(0)
    live.store.lifecycle.transition("a", JobState.CANCELLED, reason="cancelled by ann", actor="ann")
    live.at(1)
    b = live.store.jobs.get("b")
    assert b.state is JobState.CANCELLED
    reason = live.store.jobs.events("b")[-1].reason
    assert reason.startswith("dependency never satisfied: job a cancelled")
    assert live.store.jobs.get("c").state is JobState.RUNNING_ONPREM


def test_a_failed_dependency_cancels_the_whole_afterok_chain(live: Live) -> None:
    live.submit("a")
    live.submit("b", after=(Dependency("a", AfterKind.OK),))
    live.submit("c", after=(Dependency("b", AfterKind.OK),))
    live.store.lifecycle.transition(
        "a", JobState.FAILED, reason="its Kubernetes Job was deleted", actor="x"
    )
    live.at(0)
    assert live.store.jobs.states_of(["b", "c"]) == {
        "b": JobState.CANCELLED,
        "c": JobState.CANCELLED,
    }


def test_the_throttle_holds_elements_on_prem_and_in_the_cloud(live: Live) -> None:
    # no budget: without the limit all 10 would run at once (4 on-prem, 6 in the cloud)
    live.loop.config = SchedulerConfig(WaitPolicy(PolicyKind.NO_WAIT))
    for i in range(10):
        live.clock.set(EPOCH + i * 0.001)
        live.submit(f"j{i}", array="sweep", array_limit=3)
    live.at(1)
    states = live.store.jobs.states_of([f"j{i}" for i in range(10)])
    running = [j for j, s in states.items() if s in (JobState.RUNNING_ONPREM, JobState.BURSTING)]
    assert sorted(running) == ["j0", "j1", "j2"]
    held = live.store.jobs.get("j3")
    assert held.held is not None and "at most 3 at once" in held.held
    assert live.store.jobs.array_in_flight(["sweep", "other"]) == {"sweep": 3}
    live.at(101)  # the first three ended: the next three go
    states = live.store.jobs.states_of([f"j{i}" for i in range(10)])
    assert sorted(j for j, s in states.items() if s is JobState.SUCCEEDED) == ["j0", "j1", "j2"]
    assert sum(s is JobState.RUNNING_ONPREM for s in states.values()) == 3
    assert not math.isinf(live.store.jobs.get("j3").queued_at)
