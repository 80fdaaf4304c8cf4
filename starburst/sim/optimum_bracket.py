"""The offline optimum bracketed from both sides at once: a proven lower bound and a schedule.

The problem is ``sim.optimum``'s (GPUs pooled, each job in the cloud from its submit or on-prem
from a start ≥ its submit, Σ waits ≤ mean_wait_bound × n, minimise the cloud GPU-hours). Two
searches run side by side, one per core:
- the *bound*: HiGHS on ``sim.optimum``'s time-indexed relaxation (``Mode.BOUND``), twice:
  first its linear program on finer check points (``linear_slot`` seconds apart, rungs growing
  by ``linear_growth``; at most ``LINEAR_SHARE`` of the time), then branch and bound on
  check points ``slot`` seconds apart (rungs growing by ``growth``) for the rest; the larger
  of the two. Each is a lower bound on the optimum: every real schedule maps to a solution of
  the relaxation counting no more wait (see ``sim.optimum``), the linear optimum is below the
  relaxation's, and so is HiGHS's dual bound even where the time limit stops the search.
  Finer is tighter (on Table 4's 500 jobs, branch and bound in 60–240 s: 300 s → $143, 60 s →
  $190, 30 s → $193; the linear program 10 s apart: $202 in 135 s) but larger;
- the *schedule*: the cheapest of the exact zero-wait schedule (``sim.optimum_lns``), HiGHS's
  SCHEDULE mode (a tenth of the time) and ``hint`` seeds CP-SAT's restricted whole-second
  model on the whole trace (``sim.optimum_cpsat.search_schedule``, half the time), whose best
  schedule ``sim.optimum_lns``'s window search then polishes. Every schedule is checked in
  real time before it counts, so the best is an upper bound on the optimum.

Why the bracket is sound: the bound is a relaxation's (every real schedule maps to one of its
solutions with no more cloud GPU-hours, ``sim.optimum``'s docstring), and HiGHS's dual bound
is below that relaxation's optimum even when its time limit stops it; the schedule is a real
one. ``tests/sim/test_optimum_bracket.py`` checks both against traces solved exactly.

``bound_gpu_hours`` ≤ the optimum ≤ ``cloud_gpu_hours``; ``status`` is "optimal" only when they
meet, "stopped" otherwise (the time limit ended both searches).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from typing import TYPE_CHECKING

from starburst.core.errors import ConfigError
from starburst.core.job import Job
from starburst.sim.optimum_cpsat import ProvenOptimum, search_schedule

if TYPE_CHECKING:
    from starburst.sim.optimum_lns import Schedule

#: the share of the schedule's time CP-SAT searches the whole trace (after HiGHS's schedule,
#: a tenth); the window search polishes in the rest
SEARCH_SHARE = 0.5
#: the window search's prices when polishing: a window may give budget back for its price
POLISH_PRICES = (1.5, 0.75, 0.25, 0.0)
#: the most of the bound's time its linear program may take before branch and bound starts
LINEAR_SHARE = 0.5


def bracket_optimum(
    jobs: Sequence[Job],
    cluster_gpus: int,
    mean_wait_bound: float,
    *,
    time_limit: float = 600.0,
    workers: int = 2,
    price_per_gpu_hour: float = 2.5,
    slot: float = 30.0,
    growth: float = 1.1,
    hint: Sequence[float | None] | None = None,
    linear_slot: float = 10.0,
    linear_growth: float = 1.03,
) -> ProvenOptimum:
    """The best schedule and the best proven bound within about ``time_limit`` seconds; with
    ``workers`` ≥ 2 the bound is solved in a second process while the schedule is searched."""
    from starburst.sim import optimum_lns

    if not jobs or cluster_gpus < 1 or not 0 <= mean_wait_bound < float("inf"):
        raise ConfigError("the optimum needs jobs, a cluster of ≥ 1 GPU and a finite mean wait")
    began = time.perf_counter()
    budget = mean_wait_bound * len(jobs)
    grids = ((slot, growth), (linear_slot, linear_growth))
    args = (list(jobs), cluster_gpus, mean_wait_bound, grids)
    # spawn, not fork: the solvers' threads must not be copied half-way
    pool = ProcessPoolExecutor(1, get_context("spawn")) if workers >= 2 else None
    share = time_limit if pool is not None else time_limit / 2
    pending = pool.submit(_bound, *args, share) if pool is not None else None
    seeds = [optimum_lns.zero_wait(jobs, cluster_gpus), _highs_schedule(*args[:3], share * 0.1)]
    if hint is not None:
        seeds.append(list(hint))
    seed = min(
        (
            optimum_lns.check(jobs, cluster_gpus, budget, s)
            for s in seeds
            if _valid(jobs, cluster_gpus, budget, s)
        ),
        key=_cost,
    )
    searched = search_schedule(
        jobs, cluster_gpus, mean_wait_bound, time_limit=share * SEARCH_SHARE, hint=seed.starts
    )
    if _valid(jobs, cluster_gpus, budget, searched):
        seed = min(seed, optimum_lns.check(jobs, cluster_gpus, budget, searched), key=_cost)
    left = share - (time.perf_counter() - began)
    best = optimum_lns.improve(
        jobs, cluster_gpus, budget, seed.starts, time_limit=left, prices=POLISH_PRICES
    )
    if pending is not None and pool is not None:
        bound = pending.result()
        pool.shutdown()
    else:
        bound = _bound(*args, time_limit - (time.perf_counter() - began))
    bound = min(bound, best.cloud_gpu_hours)
    on_prem = sum(1 for j, s in zip(jobs, best.starts, strict=True) if s is not None and j.gpus)
    return ProvenOptimum(
        cloud_gpu_hours=best.cloud_gpu_hours,
        bound_gpu_hours=bound,
        mean_wait_s=best.wait_s / len(jobs),
        burst_jobs=sum(1 for j in jobs if j.gpus) - on_prem,
        status="optimal" if bound >= best.cloud_gpu_hours else "stopped",
        solve_seconds=time.perf_counter() - began,
        price_per_gpu_hour=price_per_gpu_hour,
        starts=best.starts,
    )


def _cost(schedule: Schedule) -> tuple[float, float]:
    return schedule.cloud_gpu_hours, schedule.wait_s


def _valid(jobs: Sequence[Job], gpus: int, budget: float, starts: Sequence[float | None]) -> bool:
    from starburst.sim import optimum_lns

    try:
        optimum_lns.check(jobs, gpus, budget, starts)
    except ValueError:
        return False
    return True


def _highs_schedule(
    jobs: Sequence[Job], gpus: int, mean_wait: float, seconds: float
) -> list[float | None]:
    """HiGHS's schedule on the rungs of ``sim.optimum``'s SCHEDULE mode, a seed."""
    from starburst.sim.optimum import Mode, OptimumOptions, solve_optimum

    options = OptimumOptions(mode=Mode.SCHEDULE, time_limit=max(1.0, seconds))
    found = solve_optimum(jobs, gpus, mean_wait, options)
    return [c.start_s if c.where == "onprem" else None for c in found.choices]


def _bound(
    jobs: Sequence[Job],
    gpus: int,
    mean_wait: float,
    grids: tuple[tuple[float, float], tuple[float, float]],
    seconds: float,
) -> float:
    """HiGHS's proven lower bound on the cloud GPU-hours within ``seconds``: the larger of the
    relaxation's linear optimum on the second grid and branch and bound on the first."""
    from starburst.sim.optimum import Mode, OptimumOptions, best_bound

    (slot, growth), (fine, fine_growth) = grids
    return best_bound(
        jobs,
        gpus,
        mean_wait,
        linear=OptimumOptions(mode=Mode.BOUND, slot=fine, growth=fine_growth),
        mixed=OptimumOptions(mode=Mode.BOUND, slot=slot, growth=growth),
        seconds=seconds,
        linear_share=LINEAR_SHARE,
    )
