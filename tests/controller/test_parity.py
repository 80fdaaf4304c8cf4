"""The live controller on virtual time makes exactly the simulator's decisions.

``starburst.controller.replay`` runs the real ``SchedulingLoop`` (store, queue view, cloud
follower) over the simulator's cluster and cloud on a virtual clock; ``sim.engine.simulate``
applies the same pass's decisions with its own bookkeeping. A differential test over random
traces checks, for every policy in and out of order, every start (instant and nodes), every
burst (first and last instant), every end and the report's totals; a few hand-made traces pin
the cases that once differed.
"""

from __future__ import annotations

import math
import random
from dataclasses import replace

import pytest

from starburst.controller.replay import ReplayStats, replay
from starburst.core.capacity import Node, PlacementStrategy, uniform_nodes
from starburst.core.cycle import SchedulerConfig
from starburst.core.dependencies import Dependency
from starburst.core.job import Job
from starburst.core.ordering import QueueOrder
from starburst.core.policy import PolicyKind, WaitPolicy
from starburst.sim.engine import SimOptions, simulate
from starburst.sim.report import JobOutcome, SimResult
from starburst.sim.synthetic import Workload, generate

H = 3600.0


def decisions(result: SimResult) -> dict[str, tuple[object, ...]]:
    """Per job: where it ran, when it started there, on which nodes, when it first burst and
    when it ended — exactly (the replay's store keeps times as the floats they are)."""
    return {
        o.job.id: (o.where, o.start, o.placement, o.first_burst, o.end) for o in result.outcomes
    }


def launches(outcome: JobOutcome) -> int:
    return outcome.where.count("cloud")


def assert_same(
    jobs: list[Job], nodes: list[Node], config: SchedulerConfig, options: SimOptions
) -> SimResult:
    """The same decisions and totals. Cost: the simulator counts GPU-time run (the paper's
    unit); the controller's ledger also bills each launch's start-up (docs/scheduling.md,
    "Cost and metrics"), so with a start-up delay d it is d × GPUs more per launch."""
    sim = simulate(jobs, nodes, config, options)
    live = replay(jobs, nodes, config, options)
    expected, got = decisions(sim), decisions(live)
    assert got.keys() == expected.keys()
    mismatched = {j: (got[j], expected[j]) for j in expected if got[j] != expected[j]}
    assert not mismatched, f"controller vs simulator: {sorted(mismatched.items())[:3]}"
    delay = options.cloud_startup_delay
    billed = {o.job.id: o.cloud_gpu_seconds for o in live.outcomes}
    for o in sim.outcomes:
        startups = o.job.gpus * delay * launches(o)
        assert billed[o.job.id] == pytest.approx(o.cloud_gpu_seconds + startups, abs=1e-3)
    totals, live_totals = sim.summary(), live.summary()
    assert live_totals.pop("config") == totals.pop("config")
    if delay == 0:
        assert live_totals == pytest.approx(totals, rel=1e-9, abs=1e-6)
    return sim


# -- hand-made cases --------------------------------------------------------------------------


def test_a_pulled_back_star_job_with_no_budget_left_starts_where_there_is_room() -> None:
    # b waits 0 (Star-Wait) and bursts at 10 (a holds the GPU until 500); pulled back at 910
    # with r × max(0, 0 − 900) = 0 budget, it fits the free GPU: it restarts on-prem then,
    # it does not burst again because its (zero) budget ran out. The controller once burst it
    # again: the re-queued job reached the pass as an old queue entry past its deadline.
    jobs = [Job("a", 0.0, 1, runtime=500.0), Job("b", 10.0, 1, runtime=2 * H)]
    star = SchedulerConfig(WaitPolicy(PolicyKind.STAR, coefficient=0.0), out_of_order=True)
    sim = assert_same(jobs, uniform_nodes(1, 1), star, SimOptions())
    b = {o.job.id: o for o in sim.outcomes}["b"]
    assert (b.where, b.first_burst, b.start, b.end) == ("cloud+onprem", 10.0, 910.0, 910 + 2 * H)


def test_a_star_job_is_pulled_back_its_threshold_after_the_burst_start_up_included() -> None:
    # b bursts at 0 into a cloud that takes 300 s to start; L = 900 s after the burst (the
    # core's ``pull_back_at``) it is pulled back; a still holds the only GPU until 1000, so b
    # bursts again. The simulator once pulled back at 0 + 300 + 900, when a had ended.
    jobs = [Job("a", 0.0, 1, runtime=1000.0), Job("b", 0.0, 1, runtime=2 * H)]
    star = SchedulerConfig(WaitPolicy(PolicyKind.STAR, coefficient=0.0), out_of_order=True)
    options = SimOptions(cloud_startup_delay=300.0)
    sim = assert_same(jobs, uniform_nodes(1, 1), star, options)
    b = {o.job.id: o for o in sim.outcomes}["b"]
    assert (b.where, b.first_burst, b.start, b.end) == ("cloud+cloud", 0.0, 900.0, 1200 + 2 * H)


def test_the_estimate_band_reaches_compute_expected_budgets() -> None:
    # the same jobs with and without a wide band: the band lengthens budgets, so decisions
    # differ, and the controller (given the band by its estimator) follows the simulator
    raw = trace(random.Random(7), 40, 24)
    banded = [
        j.with_estimate(j.runtime or 0.0, (j.runtime or 0.0) / 5, (j.runtime or 0.0) * 5)
        for j in raw
    ]
    config = SchedulerConfig(
        WaitPolicy.from_budget(PolicyKind.COMPUTE_EXPECTED, 0.25, raw), True, 6
    )
    nodes = uniform_nodes(3, 8)
    with_band = assert_same(banded, nodes, config, SimOptions())
    assert decisions(with_band) != decisions(simulate(raw, nodes, config))


def test_bad_traces_are_refused_as_the_simulator_refuses_them() -> None:
    from starburst.core.errors import ConfigError

    config = SchedulerConfig(WaitPolicy(PolicyKind.NO_WAIT))
    with pytest.raises(ConfigError, match="no runtime"):
        replay([Job("a", 0.0, 1)], uniform_nodes(1, 1), config)
    with pytest.raises(ConfigError, match="unique"):
        replay([Job("a", 0.0, 1, runtime=1.0)] * 2, uniform_nodes(1, 1), config)
    loop = [
        Job("a", 0.0, 1, runtime=1.0, after=(Dependency("b"),)),
        Job("b", 0.0, 1, runtime=1.0, after=(Dependency("a"),)),
    ]
    with pytest.raises(ConfigError, match="cycle"):
        replay(loop, uniform_nodes(1, 1), config)


# -- the differential test --------------------------------------------------------------------


def trace(
    rng: random.Random, count: int, cluster_gpus: int, cpus_per_gpu: float = 0.0
) -> list[Job]:
    """A bursty random trace, some jobs with an estimate band (what compute-expected budgets
    from). On some traces times are whole minutes, so arrivals, ends and budget expiries fall
    on the same instants (where the order of work matters most); a few jobs run 0 s."""
    load = rng.choice([0.8, 1.3, 2.0])
    raw = generate(
        Workload(
            count,
            cluster_gpus,
            load,
            cv=2.0,
            mean_runtime=1800,
            cpus_per_gpu=cpus_per_gpu,
            seed=rng.randrange(10**6),
        )
    )
    minutes = rng.random() < 0.4
    jobs = []
    for j in raw:
        runtime = 0.0 if rng.random() < 0.03 else j.runtime or 0.0
        submit = j.submit_time
        if minutes:
            submit, runtime = 60.0 * round(submit / 60), 60.0 * round(runtime / 60)
        job = replace(j, submit_time=submit, runtime=runtime)
        if rng.random() < 0.3:
            spread = rng.choice([1.5, 4.0])
            estimate = runtime * rng.uniform(0.5, 1.5)
            job = job.with_estimate(estimate, estimate / spread, estimate * spread)
        jobs.append(job)
    return jobs


CASES = [(kind, ooo) for kind in PolicyKind for ooo in (False, True)]
#: random traces per policy and order: ~0.1 s each
TRACES_PER_CASE = 4


@pytest.mark.parametrize(("kind", "out_of_order"), CASES, ids=lambda v: str(getattr(v, "value", v)))
def test_the_controller_on_virtual_time_decides_as_the_simulator(
    kind: PolicyKind, out_of_order: bool
) -> None:
    for draw in range(TRACES_PER_CASE):
        rng = random.Random(f"{kind.value}:{out_of_order}:{draw}")
        # on one 4-GPU node the 8-GPU jobs never fit: they burst on arrival whatever the policy
        count, per_node = rng.choice([(2, 4), (3, 8), (1, 8), (1, 4)])
        cpus = rng.random() < 0.3  # CPUs counted too: a job may fit the GPUs, not the CPUs
        nodes = uniform_nodes(count, per_node, 16.0 if cpus else 0.0)
        jobs = trace(rng, 60, count * per_node, 3.0 if cpus else 0.0)
        config = SchedulerConfig(
            WaitPolicy.from_budget(kind, rng.choice([0.0, 0.1, 0.5, 2.0]), jobs),
            out_of_order,
            rng.choice([None, 0, 2, 5]),
            rng.choice(list(QueueOrder)),
            rng.choice(list(PlacementStrategy)),
        )
        options = SimOptions(
            estimate_error=rng.choice([0.0, 0.5]),
            seed=rng.randrange(100),
            cloud_startup_delay=rng.choice([0.0, 0.0, 120.0]),
        )
        assert_same(jobs, nodes, config, options)


def test_the_replay_visits_only_event_instants() -> None:
    """One pass per event: no polling interval, so time costs nothing between events."""
    jobs = [Job("a", 0.0, 1, runtime=H), Job("b", 100.0, 1, runtime=H)]
    config = SchedulerConfig(WaitPolicy(PolicyKind.CONSTANT, coefficient=600.0))
    stats = ReplayStats()
    result = replay(jobs, uniform_nodes(1, 1), config, stats=stats)
    # arrivals at 0 and 100, b's budget expiry at 700, a's end at 3600, b's cloud end at 4300
    assert stats.passes == 5 and math.isclose(max(o.end for o in result.outcomes), 700 + H)
