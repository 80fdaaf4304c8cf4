"""The optimum's bracket (``sim.optimum_bracket``, ``sim.optimum_lns``): every schedule is
checked in real time, and on small traces solved exactly (CP-SAT on whole seconds) the proven
bound never exceeds the optimum and the schedule never beats it."""

from __future__ import annotations

import dataclasses

import pytest

from starburst.core.job import Job
from starburst.sim.optimum_bracket import bracket_optimum
from starburst.sim.optimum_cpsat import prove_optimum
from starburst.sim.optimum_lns import check, improve, zero_wait
from starburst.sim.synthetic import Workload, generate
from tests.builders import make_job

H = 3600.0


def whole_seconds(jobs: list[Job]) -> list[Job]:
    """The trace on whole seconds, so CP-SAT's single model is exact."""
    return [
        dataclasses.replace(
            j, submit_time=float(round(j.submit_time)), runtime=float(round(j.runtime or 0))
        )
        for j in jobs
    ]


def test_check_refuses_an_early_start_an_overfull_instant_and_too_much_wait() -> None:
    jobs = [make_job("a", gpus=2, runtime=H), make_job("b", gpus=2, runtime=H, submit=10.0)]
    assert check(jobs, 4, 0.0, [0.0, 10.0]).cloud_gpu_hours == 0.0
    with pytest.raises(ValueError, match="before its submit"):
        check(jobs, 4, 100.0, [0.0, 5.0])
    with pytest.raises(ValueError, match=r"4 GPUs in use at 10\.0 s"):
        check(jobs, 3, 100.0, [0.0, 10.0])
    with pytest.raises(ValueError, match="over the budget"):
        check(jobs, 3, H - 11, [0.0, H])
    # b starting as a ends is no overlap; the cost counts the cloud job only
    assert check(jobs, 3, H, [0.0, H]).wait_s == H - 10
    assert check(jobs, 3, 0.0, [0.0, None]).cloud_gpu_hours == 2.0


def test_zero_wait_keeps_the_costlier_of_two_conflicting_jobs() -> None:
    jobs = [make_job("a", runtime=H), make_job("b", runtime=2 * H, submit=0.5 * H)]
    assert zero_wait(jobs, 1) == [None, 0.5 * H]


def test_the_window_search_spends_the_budget_where_it_saves_most() -> None:
    """b can wait 1 h for a and stay on-prem; the search must find it from all-cloud."""
    jobs = [make_job("a", runtime=H), make_job("b", runtime=2 * H, submit=0.0)]
    found = improve(jobs, 1, H, [None, None], time_limit=30, window=2)
    assert found.cloud_gpu_hours == 0.0 and found.wait_s == H


@pytest.mark.parametrize("seed", [2, 3, 4])  # seed 1: a bound of 0, 30 s to solve exactly
def test_bound_le_optimum_le_schedule_on_small_traces(seed: int) -> None:
    """A coarse grid (300 s) against waits of minutes: the relaxation's slack is large, and a
    bound above the exact optimum would show here."""
    jobs = whole_seconds(generate(Workload(14, 4, load=1.3, seed=seed)))
    wait = 400.0
    exact = prove_optimum(jobs, 4, wait, time_limit=120, relative_gap=0.0, workers=1)
    assert exact.status == "optimal", exact
    for slot, growth in [(300.0, 1.25), (30.0, 1.1)]:
        found = bracket_optimum(jobs, 4, wait, time_limit=10, workers=1, slot=slot, growth=growth)
        assert found.bound_gpu_hours <= exact.cloud_gpu_hours + 1e-9, (slot, found, exact)
        assert found.cloud_gpu_hours >= exact.cloud_gpu_hours - 1e-9, (slot, found, exact)
        schedule = check(jobs, 4, wait * len(jobs), found.starts)  # a real schedule
        assert schedule.cloud_gpu_hours == found.cloud_gpu_hours


def test_the_bracket_meets_on_a_case_worked_by_hand() -> None:
    """Two 1-GPU jobs on one GPU, b submitted as a starts: waiting 1 h keeps both on-prem."""
    jobs = [make_job("a", runtime=H), make_job("b", runtime=H)]
    found = bracket_optimum(jobs, 1, H / 2, time_limit=10, workers=1, slot=600.0)
    assert (found.cloud_gpu_hours, found.bound_gpu_hours, found.status) == (0.0, 0.0, "optimal")
    short = bracket_optimum(jobs, 1, H / 2 - 1, time_limit=10, workers=1, slot=600.0)
    assert short.cloud_gpu_hours == 1.0  # the schedule must burst one
    assert short.bound_gpu_hours <= 1.0


def test_the_bound_takes_the_linear_program_on_finer_check_points() -> None:
    """b arrives at 50 s while a (100 s) runs, 10 s of wait in all: with check points 300 s
    apart the relaxation lets b wait past a's end for free (a bound of 0); the linear program
    on check points 10 s apart proves that one of them bursts."""
    jobs = [make_job("a", runtime=100.0), make_job("b", runtime=H, submit=50.0)]
    coarse = {"slot": 300.0, "growth": 2.0}
    found = bracket_optimum(jobs, 1, 5.0, time_limit=10, workers=1, **coarse)
    assert found.bound_gpu_hours == pytest.approx(100 / H, abs=1e-6)
    assert found.gap < 1e-4  # proven, less the linear program's tolerance
    assert found.cloud_gpu_hours == pytest.approx(100 / H)
    both_coarse = bracket_optimum(
        jobs, 1, 5.0, time_limit=10, workers=1, linear_slot=300.0, linear_growth=2.0, **coarse
    )
    assert both_coarse.bound_gpu_hours == 0.0
