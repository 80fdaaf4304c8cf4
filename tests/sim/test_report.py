"""A run's summary, read from the outcomes' columns as the engine records them, and the
outcomes themselves, built only when asked for."""

import math
from collections.abc import Sequence

import pytest

from starburst.core.capacity import uniform_nodes
from starburst.core.cycle import SchedulerConfig
from starburst.core.policy import PolicyKind, WaitPolicy
from starburst.sim.engine import SimOptions, simulate
from starburst.sim.report import JobOutcome, OutcomeColumns, SimResult, percentile
from starburst.sim.synthetic import Workload, generate


def summary_loop(result: SimResult) -> dict[str, float | int | str]:
    """The summary as a plain loop over ``JobOutcome`` values (the code before the columns)."""
    outs = list(result.outcomes)
    jcts = [o.jct for o in outs]
    waits = [o.wait for o in outs]
    submits = [o.job.submit_time for o in outs]
    offered = [o.job.gpus * (o.job.runtime or 0.0) for o in outs]
    onprem = [g for g, o in zip(offered, outs, strict=True) if not o.burst]
    first = min(submits) if submits else 0.0
    span = (max(o.end for o in outs) if outs else 0.0) - first
    submit_span = (max(submits) if submits else 0.0) - first
    gpus = max(result.cluster_gpus, 1)
    cloud_h = math.fsum(o.cloud_gpu_seconds for o in outs) / 3600.0
    return {
        "config": result.config,
        "jobs": len(outs),
        "burst_jobs": sum(1 for o in outs if o.cloud_gpu_seconds > 0),
        "pulled_back": sum(1 for o in outs if o.where.startswith("cloud+")),
        "cloud_gpu_hours": cloud_h,
        "cloud_cost_usd": cloud_h * result.price_per_gpu_hour,
        "mean_jct_s": math.fsum(jcts) / len(jcts) if jcts else 0.0,
        "p90_jct_s": percentile(jcts, 90),
        "p99_jct_s": percentile(jcts, 99),
        "mean_wait_s": math.fsum(waits) / len(waits) if waits else 0.0,
        "p90_wait_s": percentile(waits, 90),
        "p99_wait_s": percentile(waits, 99),
        "cluster_utilization": math.fsum(onprem) / (gpus * span) if span > 0 else 0.0,
        "offered_load": math.fsum(offered) / (gpus * submit_span) if submit_span > 0 else 0.0,
        "cluster_gpus": result.cluster_gpus,
        "price_per_gpu_hour": result.price_per_gpu_hour,
    }


@pytest.mark.parametrize(
    "kind", [PolicyKind.COMPUTE, PolicyKind.STAR, PolicyKind.NO_WAIT, PolicyKind.INFINITE]
)
def test_the_summary_of_the_columns_is_the_summary_of_the_outcomes(kind: PolicyKind) -> None:
    jobs = generate(Workload(jobs=400, cluster_gpus=32, load=1.3, seed=3))
    policy = WaitPolicy.from_budget(kind, 0.25, jobs)
    result = simulate(
        jobs, uniform_nodes(4, 8), SchedulerConfig(policy, True, 10), SimOptions(3.0, 60.0)
    )
    assert isinstance(result.outcomes, OutcomeColumns)
    summary = result.summary()
    assert result.outcomes._built is None  # (a summary builds no outcome)
    assert summary == summary_loop(result)
    # the same outcomes as a list of values: the same summary, exactly
    as_list = SimResult(list(result.outcomes), 32, 3.0, result.config)
    assert as_list.summary() == summary
    if kind is PolicyKind.STAR:
        assert summary["pulled_back"] > 0  # (the case is covered)
        pulled = [o for o in result.outcomes if o.where.startswith("cloud+")]
        assert all(o.reason.count("; ") >= 2 for o in pulled)  # (its reasons, joined)
    if kind is PolicyKind.NO_WAIT:
        assert summary["burst_jobs"] > 0


def test_a_run_of_no_jobs_sums_to_zero() -> None:
    policy = WaitPolicy(PolicyKind.COMPUTE, 1.0)
    result = simulate([], uniform_nodes(1, 8), SchedulerConfig(policy))
    assert len(result.outcomes) == 0 and list(result.outcomes) == []
    summary = result.summary()
    assert summary["jobs"] == 0 and summary["mean_jct_s"] == 0.0
    assert summary == summary_loop(result)


def test_outcome_columns_read_as_the_outcomes_they_hold() -> None:
    jobs = generate(Workload(jobs=50, cluster_gpus=8, load=1.2, seed=1))
    policy = WaitPolicy.from_budget(PolicyKind.COMPUTE, 0.25, jobs)
    result = simulate(jobs, uniform_nodes(1, 8), SchedulerConfig(policy, True))
    outcomes = result.outcomes
    values: Sequence[JobOutcome] = list(outcomes)
    assert len(outcomes) == 50 and all(isinstance(o, JobOutcome) for o in values)
    assert outcomes[0] is values[0] and list(outcomes[1:3]) == list(values[1:3])
    assert outcomes == values and values == outcomes and outcomes != values[1:]
    # the fields recorded raw (a placement, the list of reasons) are built as their text
    onprem = [o for o in values if o.where == "onprem"]
    assert onprem and all(o.placement.endswith(f"×{o.job.gpus}") for o in onprem)
    assert all(isinstance(o.reason, str) and o.reason for o in values)
    # two runs alike are equal results; another run is not
    again = simulate(jobs, uniform_nodes(1, 8), SchedulerConfig(policy, True))
    assert again == result
    other = simulate(jobs, uniform_nodes(2, 8), SchedulerConfig(policy, True))
    assert other != result
    with pytest.raises(TypeError):
        hash(outcomes)
