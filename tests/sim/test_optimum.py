"""The offline optimum: hand-computed tiny instances, the bound/schedule sandwich, and the
promise that no simulated policy beats it at the same mean wait."""

from __future__ import annotations

import math

import pytest

from starburst.core.capacity import uniform_nodes
from starburst.core.cycle import SchedulerConfig
from starburst.core.errors import ConfigError
from starburst.core.job import Job
from starburst.core.policy import PolicyKind, WaitPolicy
from starburst.sim.engine import simulate
from starburst.sim.optimum import (
    Mode,
    OptimumOptions,
    OptimumResult,
    best_bound,
    linear_bound,
    solve_optimum,
)
from starburst.sim.synthetic import Workload, generate

H = 3600.0
FINE = {"slot": 600.0, "growth": 1.0}  # rungs every 10 min, so 1 h after submit is one


def make_job(job_id: str, submit: float, runtime: float, gpus: int = 1) -> Job:
    return Job(id=job_id, submit_time=submit, gpus=gpus, runtime=runtime)


def where(result: OptimumResult) -> dict[str, str]:
    return {c.job_id: c.where for c in result.choices}


def conflicting(first_runtime: float, second_runtime: float) -> list[Job]:
    """Both on one GPU; b arrives at 0.5 h while a still runs."""
    return [make_job("a", 0.0, first_runtime), make_job("b", 0.5 * H, second_runtime)]


@pytest.mark.parametrize("mode", list(Mode))
@pytest.mark.parametrize(
    ("runtimes", "burst", "gpu_hours"),
    [
        ((1 * H, 2 * H), "a", 1.0),
        ((2 * H, 1 * H), "b", 1.0),
    ],
)
def test_without_waiting_the_cheaper_of_two_conflicting_jobs_bursts(
    mode: Mode, runtimes: tuple[float, float], burst: str, gpu_hours: float
) -> None:
    result = solve_optimum(conflicting(*runtimes), 1, 0.0, OptimumOptions(mode=mode, **FINE))
    assert result.status == "optimal"
    assert where(result)[burst] == "cloud"
    assert result.burst_jobs == 1
    assert result.cloud_gpu_hours == pytest.approx(gpu_hours)
    assert result.cloud_cost_usd == pytest.approx(gpu_hours * 2.5)
    assert result.mean_wait_s == 0.0


@pytest.mark.parametrize("mode", list(Mode))
def test_a_wait_bound_that_covers_the_gap_keeps_both_on_prem(mode: Mode) -> None:
    # b must wait 0.5 h for a to end: total 1800 s, mean 900 s.
    result = solve_optimum(conflicting(H, 2 * H), 1, 900.0, OptimumOptions(mode=mode, **FINE))
    assert result.cloud_gpu_hours == 0.0
    assert result.burst_jobs == 0
    b = next(c for c in result.choices if c.job_id == "b")
    assert b.where == "onprem"
    if mode is Mode.SCHEDULE:
        assert (b.start_s, b.wait_s) == (H, 1800.0)
    else:  # the relaxation counts b from the check point before a's end
        assert b.wait_s == 1200.0


def test_bound_and_schedule_sandwich_the_truth_between_grid_points() -> None:
    """Mean 700 s is too little for the real wait (mean 900 s), but the relaxation lets b start
    anywhere in (3000 s, 3200 s] counted as 1200 s, and no check point sees it overlap a."""
    jobs = conflicting(H, 2 * H)
    low = solve_optimum(jobs, 1, 700.0, OptimumOptions(mode=Mode.BOUND, **FINE))
    high = solve_optimum(jobs, 1, 700.0, OptimumOptions(mode=Mode.SCHEDULE, **FINE))
    assert low.cloud_gpu_hours == 0.0
    assert high.cloud_gpu_hours == pytest.approx(1.0)
    assert where(high) == {"a": "cloud", "b": "onprem"}


def test_too_little_wait_bursts_even_in_the_relaxation() -> None:
    result = solve_optimum(conflicting(H, 2 * H), 1, 500.0, OptimumOptions(**FINE))
    assert where(result) == {"a": "cloud", "b": "onprem"}
    assert result.bound_gpu_hours == pytest.approx(1.0)


def test_a_job_larger_than_the_cluster_always_bursts_and_others_stay() -> None:
    jobs = [make_job("big", 0.0, H, gpus=16), make_job("small", 0.0, H, gpus=8)]
    result = solve_optimum(jobs, 8, 0.0, OptimumOptions(price_per_gpu_hour=3.0))
    assert where(result) == {"big": "cloud", "small": "onprem"}
    assert result.cloud_cost_usd == pytest.approx(48.0)


def test_capacity_is_pooled_across_gpus() -> None:
    """Three 1-GPU jobs at once on 2 GPUs: exactly one bursts, the shortest."""
    jobs = [make_job("x", 0.0, 3 * H), make_job("y", 0.0, H), make_job("z", 0.0, 2 * H)]
    result = solve_optimum(jobs, 2, 0.0)
    assert where(result) == {"x": "onprem", "y": "cloud", "z": "onprem"}


def _max_usage(jobs: list[Job], result: OptimumResult) -> int:
    by_id = {j.id: j for j in jobs}
    events: list[tuple[float, int]] = []
    for choice in result.choices:
        if choice.where == "onprem" and choice.start_s is not None:
            job = by_id[choice.job_id]
            events += [(choice.start_s, job.gpus), (choice.start_s + (job.runtime or 0), -job.gpus)]
    usage = peak = 0
    for _, delta in sorted(events, key=lambda e: (e[0], e[1])):  # ends before starts
        usage += delta
        peak = max(peak, usage)
    return peak


def test_schedule_mode_returns_a_schedule_that_fits_and_meets_the_bound() -> None:
    jobs = generate(Workload(jobs=40, cluster_gpus=8, load=1.3, seed=3))
    result = solve_optimum(jobs, 8, 300.0, OptimumOptions(mode=Mode.SCHEDULE))
    assert result.status == "optimal"
    assert 0 < result.burst_jobs < len(jobs)
    assert _max_usage(jobs, result) <= 8
    assert result.mean_wait_s <= 300.0 + 1e-6


def _simulated(
    jobs: list[Job], policy: WaitPolicy, out_of_order: bool, cap: int | None
) -> dict[str, float | int | str]:
    config = SchedulerConfig(policy, out_of_order=out_of_order, queue_cap=cap)
    return simulate(jobs, uniform_nodes(1, 8), config).summary()


@pytest.mark.parametrize("name", ["no-wait", "starburst"])
def test_no_simulated_policy_beats_the_optimum_at_its_own_mean_wait(name: str) -> None:
    jobs = generate(Workload(jobs=40, cluster_gpus=8, load=1.3, seed=3))
    if name == "no-wait":
        run = _simulated(jobs, WaitPolicy(PolicyKind.NO_WAIT), False, None)
    else:
        run = _simulated(jobs, WaitPolicy.from_budget(PolicyKind.COMPUTE, 0.25, jobs), True, 30)
    assert float(run["cloud_gpu_hours"]) > 0  # the trace has contention to judge
    low = solve_optimum(jobs, 8, float(run["mean_wait_s"]))
    high = solve_optimum(jobs, 8, float(run["mean_wait_s"]), OptimumOptions(mode=Mode.SCHEDULE))
    assert low.status == "optimal" and low.gap <= 1e-3
    assert low.bound_gpu_hours <= low.cloud_gpu_hours + 1e-9
    assert low.cloud_gpu_hours <= float(run["cloud_gpu_hours"]) + 1e-6
    assert low.cloud_gpu_hours <= high.cloud_gpu_hours + 1e-6
    if name == "no-wait":  # no waiting: both programs are the exact zero-wait problem
        assert low.cloud_gpu_hours == pytest.approx(high.cloud_gpu_hours)
        assert low.cloud_gpu_hours < float(run["cloud_gpu_hours"])  # FIFO is not optimal


@pytest.mark.parametrize(
    ("jobs", "gpus", "bound", "message"),
    [
        ([], 8, 0.0, "at least one job"),
        ([make_job("a", 0.0, H)], 8, -1.0, "mean wait bound"),
        ([make_job("a", 0.0, H)], 8, math.nan, "mean wait bound"),
        ([Job(id="a", submit_time=0.0, gpus=1)], 8, 0.0, "job a has no usable runtime"),
        ([make_job("a", 0.0, H)], 0, 0.0, "at least one GPU"),
        ([make_job("a", 0.0, H), make_job("a", 1.0, H)], 8, 0.0, "unique"),
    ],
)
def test_bad_input_is_a_config_error(
    jobs: list[Job], gpus: int, bound: float, message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        solve_optimum(jobs, gpus, bound)


def test_bad_options_are_config_errors() -> None:
    with pytest.raises(ConfigError):
        OptimumOptions(slot=0.0)
    with pytest.raises(ConfigError):
        OptimumOptions(time_limit=-1.0)


def test_the_linear_bound_is_below_the_program_and_tighter_on_finer_check_points() -> None:
    """Two 2-GPU jobs at once on 3 GPUs without waiting: one bursts (2 GPU-h), but half of each
    fits the linear program (1 GPU-h). b arriving at 50 s while a runs 100 s, 10 s of wait in
    all: check points 300 s apart let b wait past a's end for free (0), 10 s apart they do not,
    and the linear optimum is the exact one (a bursts)."""
    wide = [make_job("a", 0.0, H, gpus=2), make_job("b", 0.0, H, gpus=2)]
    assert linear_bound(wide, 3, 0.0) == pytest.approx(1.0, abs=1e-6)
    assert linear_bound(wide, 3, 0.0) <= 1.0
    assert solve_optimum(wide, 3, 0.0).bound_gpu_hours == 2.0
    both = {"linear": OptimumOptions(), "mixed": OptimumOptions(), "seconds": 10.0}
    assert best_bound(wide, 3, 0.0, **both) == 2.0  # the larger: branch and bound's
    late = [make_job("a", 0.0, 100.0), make_job("b", 50.0, H)]
    assert linear_bound(late, 1, 5.0, OptimumOptions(slot=300.0, growth=2.0)) == 0.0
    fine = linear_bound(late, 1, 5.0, OptimumOptions(slot=10.0, growth=1.0))
    assert fine == pytest.approx(100 / H, abs=1e-6) and fine <= 100 / H


def test_the_linear_bound_proves_nothing_when_stopped_and_refuses_a_schedule() -> None:
    jobs = generate(Workload(200, 16, load=1.2, seed=3))
    stopped = OptimumOptions(slot=10.0, growth=1.03, time_limit=1e-3)
    assert linear_bound(jobs, 16, 120.0, stopped) == 0.0
    assert linear_bound(jobs, 16, 120.0, OptimumOptions(slot=600.0)) > 0.0
    with pytest.raises(ConfigError, match="BOUND"):
        linear_bound(jobs, 16, 120.0, OptimumOptions(mode=Mode.SCHEDULE))
    schedule, bound = OptimumOptions(mode=Mode.SCHEDULE), OptimumOptions(slot=600.0)
    with pytest.raises(ConfigError, match="BOUND"):
        best_bound(jobs, 16, 120.0, linear=bound, mixed=schedule, seconds=5.0)
    with pytest.raises(ConfigError, match="unique"):
        linear_bound([make_job("a", 0.0, H), make_job("a", 1.0, H)], 8, 0.0)
