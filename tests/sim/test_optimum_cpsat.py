"""The offline optimum proven by CP-SAT (``sim.optimum_cpsat``) on cases worked by hand."""

from __future__ import annotations

import pytest

from starburst.core.errors import ConfigError
from starburst.sim.optimum import Mode, OptimumOptions, solve_optimum
from starburst.sim.optimum_cpsat import prove_optimum
from starburst.sim.synthetic import Workload, generate
from tests.builders import make_job

H = 3600.0


def test_no_wait_allowed_bursts_the_job_that_does_not_fit() -> None:
    jobs = [make_job("a", gpus=4, runtime=H), make_job("b", gpus=4, runtime=H)]
    result = prove_optimum(jobs, 4, 0.0, time_limit=30)
    assert (result.status, result.cloud_gpu_hours, result.bound_gpu_hours) == ("optimal", 4, 4)
    assert result.burst_jobs == 1 and result.gap == 0.0


def test_a_wait_budget_of_one_runtime_keeps_both_on_prem() -> None:
    jobs = [make_job("a", gpus=4, runtime=H), make_job("b", gpus=4, runtime=H)]
    result = prove_optimum(jobs, 4, H / 2, time_limit=30)  # Σ waits ≤ 1 h: b waits for a
    assert (result.cloud_gpu_hours, result.burst_jobs, result.mean_wait_s) == (0.0, 0, H / 2)
    short = prove_optimum(jobs, 4, H / 2 - 1, time_limit=30)  # one second short: one bursts
    assert short.cloud_gpu_hours == 4.0


def test_a_job_wider_than_the_cluster_always_bursts_and_bad_input_is_refused() -> None:
    jobs = [make_job("wide", gpus=16, runtime=H), make_job("b", gpus=2, runtime=H)]
    assert prove_optimum(jobs, 8, 0.0, time_limit=30).cloud_gpu_hours == 16.0
    with pytest.raises(ConfigError, match="a cluster of ≥ 1 GPU"):
        prove_optimum(jobs, 0, 0.0)


def test_it_lies_between_the_highs_bound_and_the_highs_schedule() -> None:
    """On a small synthetic trace: HiGHS's relaxation ≤ CP-SAT's proven optimum ≤ the HiGHS
    schedule (a feasible pooled schedule rounded to its rungs)."""
    jobs = generate(Workload(25, 8, load=1.2, seed=3))
    wait = 600.0
    low = solve_optimum(jobs, 8, wait, OptimumOptions(mode=Mode.BOUND, time_limit=30))
    high = solve_optimum(jobs, 8, wait, OptimumOptions(mode=Mode.SCHEDULE, time_limit=30))
    cp = prove_optimum(jobs, 8, wait, time_limit=60, relative_gap=0.0)
    # fractional seconds: a relaxed and a restricted whole-second model, both solved
    assert cp.status == "rounding" and 0 < cp.gap < 1e-3
    assert low.bound_gpu_hours - 1e-6 <= cp.cloud_gpu_hours <= high.cloud_gpu_hours + 1e-6
    assert low.bound_gpu_hours - 1e-6 <= cp.bound_gpu_hours <= cp.cloud_gpu_hours
    assert cp.mean_wait_s <= wait


def test_the_bound_stays_below_the_optimum_when_times_have_fractions_of_a_second() -> None:
    """b may wait exactly a's 3600.5 s and both run on-prem: the optimum is 0. Rounding
    runtimes up and the budget down (the restricted model) would "prove" 1 GPU-h instead."""
    jobs = [make_job("a", gpus=1, runtime=3600.5), make_job("b", gpus=1, runtime=3600.5)]
    result = prove_optimum(jobs, 1, 3600.5 / 2, time_limit=30, relative_gap=0.0)
    assert result.bound_gpu_hours == 0.0 < result.cloud_gpu_hours
    assert result.status == "rounding" and not result.proven


def test_the_schedule_counts_the_fraction_of_a_second_its_submit_was_rounded_up() -> None:
    """b, submitted at 0.5 s, must wait 3599.5 s for a; the budget is 3599.1 s, so b bursts.
    Counting b's wait from its submit rounded up (3599 s ≤ ⌊3599.1⌋) would keep it on-prem
    and report 0 GPU-h, below the optimum."""
    jobs = [make_job("a", runtime=H), make_job("b", runtime=H, submit=0.5)]
    result = prove_optimum(jobs, 1, (H - 0.9) / 2, time_limit=30, relative_gap=0.0)
    assert result.cloud_gpu_hours == 1.0
    assert result.starts == (0.0, None)
