"""Schedules for the offline optimum by large-neighbourhood search: the upper side of its bracket.

The problem is ``sim.optimum``'s (GPUs pooled; each job in the cloud from its submit, or on-prem
from a start ≥ its submit; Σ waits ≤ the budget; minimise the cloud GPU-hours). A *schedule*
gives each job a start (on-prem) or none (cloud); ``check`` verifies one in real time — the
running GPUs never exceed the cluster's at any instant, no start before its submit, the waits
within the budget — so every figure this module returns is a schedule's, never a guess.

The search:
- *seed*: the least-cost schedule with no wait at all (each job at its submit or in the
  cloud), solved exactly by HiGHS: capacity need only hold at the submit times, and the
  program is small;
- *windows*: the jobs in submit order, a window of ``window`` consecutive ones at a time
  (sliding by half a window) are freed while every other job keeps its place; CP-SAT
  (optional intervals, a cumulative with the fixed jobs as fixed intervals) re-places them for
  a few seconds, its hint the current schedule, and the answer is kept when it is no worse;
- *a price on waiting*: the window's objective is its cloud GPU-seconds plus ``price`` GPU-s per
  second of wait, and each sweep over the trace lowers the price (``prices``). A window that
  could spend the whole remaining budget then buys only the waits worth their price, and the
  budget goes first where a second of wait saves the most; a price is swept again (the
  windows' edges moved by a third of a stride) until a sweep gains less than 0.1%, and the
  last (price 0) spends what is left. The budget itself is a hard constraint in every window.

Whole seconds, safely: a fixed job occupies the whole seconds [⌊start⌋, ⌈start + runtime⌉), a
freed job starts on a whole second ≥ its submit and occupies ⌈runtime⌉ seconds, and its wait
counts from its real submit: every window's answer is a real schedule of the original jobs
(``check`` confirms it before it is kept).

Invariants: the schedule only ever improves (cloud GPU-hours, then waits at the price); it is
deterministic for a given time limit only where no window is stopped by its own time limit.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from starburst.core.job import Job

#: GPU-seconds of cloud per second of wait charged in each sweep (the last ones spend freely)
PRICES = (2.0, 1.5, 1.2, 1.0, 0.8, 0.6, 0.4, 0.2, 0.0)


@dataclass(frozen=True, slots=True)
class Schedule:
    """A checked schedule: a start per job (None: the cloud), its cloud GPU-hours and waits."""

    starts: tuple[float | None, ...]
    cloud_gpu_hours: float
    wait_s: float


def check(
    jobs: Sequence[Job], gpus: int, budget: float, starts: Sequence[float | None]
) -> Schedule:
    """The schedule's cost, after verifying it in real time; ValueError when it breaks a
    constraint (a start before its submit, an instant over ``gpus``, waits over ``budget``)."""
    events: list[tuple[float, int]] = []
    wait = 0.0
    for job, start in zip(jobs, starts, strict=True):
        if start is None or job.gpus == 0 or not job.runtime:
            continue
        if start < job.submit_time:
            raise ValueError(f"job {job.id} starts at {start} before its submit")
        wait += start - job.submit_time
        events += [(start, job.gpus), (start + job.runtime, -job.gpus)]
    used = 0
    for at, change in sorted(events, key=lambda e: (e[0], e[1])):  # ends before starts
        used += change
        if used > gpus:
            raise ValueError(f"{used} GPUs in use at {at} s, over the cluster's {gpus}")
    if wait > budget + 1e-6:
        raise ValueError(f"waits total {wait:.1f} s, over the budget of {budget:.1f} s")
    cloud = math.fsum(
        j.gpus * (j.runtime or 0.0) for j, s in zip(jobs, starts, strict=True) if s is None
    )
    return Schedule(tuple(starts), cloud / 3600.0, wait)


def zero_wait(jobs: Sequence[Job], gpus: int) -> list[float | None]:
    """The cheapest schedule in which no job waits, solved exactly by HiGHS (capacity at every
    submit time is capacity at every instant when each job starts at its submit)."""
    import numpy as np
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import coo_matrix

    points = sorted({j.submit_time for j in jobs})
    rows: list[int] = []
    cols: list[int] = []
    vals: list[int] = []
    for i, job in enumerate(jobs):
        runtime = job.runtime or 0.0
        if 0 < job.gpus <= gpus and runtime > 0:
            lo = np.searchsorted(points, job.submit_time, "left")
            hi = np.searchsorted(points, job.submit_time + runtime, "left")
            rows += range(lo, hi)
            cols += [i] * (hi - lo)
            vals += [job.gpus] * (hi - lo)
    work = np.array([j.gpus * (j.runtime or 0.0) for j in jobs])
    fits = np.array([0 < j.gpus <= gpus for j in jobs])
    capacity = coo_matrix((vals, (rows, cols)), shape=(len(points), len(jobs))).tocsr()
    res: Any = milp(
        -work,
        constraints=[LinearConstraint(capacity, -np.inf, gpus)],
        integrality=np.ones(len(jobs)),
        bounds=Bounds(0, fits.astype(float)),
    )
    if res.x is None:  # cannot happen: everything in the cloud is feasible
        return [None] * len(jobs)
    return [j.submit_time if v > 0.5 else None for j, v in zip(jobs, res.x, strict=True)]


def improve(
    jobs: Sequence[Job],
    gpus: int,
    budget: float,
    starts: Sequence[float | None],
    *,
    time_limit: float,
    window: int = 30,
    step_seconds: float = 3.0,
    prices: Sequence[float] = PRICES,
) -> Schedule:
    """The best schedule the window search reaches from ``starts`` within ``time_limit`` s."""
    best = check(jobs, gpus, budget, starts)
    order = sorted(range(len(jobs)), key=lambda i: (jobs[i].submit_time, jobs[i].id))
    stride = max(1, window // 2)
    deadline = time.perf_counter() + time_limit
    for price in prices:
        for sweep in itertools.count():
            before = _score(best, price)
            offset = (sweep * stride) // 3 % stride  # the windows' edges move each sweep
            for first in range(-offset, max(1, len(order) - stride), stride):
                remaining = deadline - time.perf_counter()
                if remaining <= 0:
                    return best
                freed = order[max(0, first) : first + window]
                best = _kept(jobs, gpus, budget, best, freed, price, min(step_seconds, remaining))
            if _score(best, price) > before * (1 - 1e-3):
                break  # this price has converged: lower it
    return best


def _kept(
    jobs: Sequence[Job],
    gpus: int,
    budget: float,
    best: Schedule,
    freed: Sequence[int],
    price: float,
    seconds: float,
) -> Schedule:
    """The better of ``best`` and the window's answer, at ``price``."""
    found = _window(jobs, gpus, budget, best.starts, freed, price, seconds)
    if found is None:
        return best
    try:
        candidate = check(jobs, gpus, budget, found)
    except ValueError:
        return best
    return candidate if _score(candidate, price) <= _score(best, price) + 1e-9 else best


def _score(schedule: Schedule, price: float) -> float:
    return schedule.cloud_gpu_hours * 3600.0 + price * schedule.wait_s


def _window(
    jobs: Sequence[Job],
    gpus: int,
    budget: float,
    starts: Sequence[float | None],
    freed: Sequence[int],
    price: float,
    seconds: float,
) -> list[float | None] | None:
    """Re-place the ``freed`` jobs around the others with CP-SAT; None when nothing is found."""
    from ortools.sat.python import cp_model

    model = cp_model.CpModel()
    free = set(freed)
    intervals, demands = [], []
    spent = 0.0
    for i, (job, start) in enumerate(zip(jobs, starts, strict=True)):
        if i in free or start is None or job.gpus == 0 or not job.runtime:
            continue
        spent += start - job.submit_time
        lo, hi = math.floor(start), math.ceil(start + job.runtime)
        intervals.append(model.new_fixed_size_interval_var(lo, hi - lo, f"f{i}"))
        demands.append(job.gpus)
    movable = [i for i in freed if 0 < jobs[i].gpus <= gpus and (jobs[i].runtime or 0) > 0]
    rounding = math.fsum(math.ceil(jobs[i].submit_time) - jobs[i].submit_time for i in movable)
    left = math.floor(budget - spent - rounding + 1e-7)  # check allows 1e-6 over
    if left < 0 or not movable:
        return None
    present, waits, begins, cloud = [], [], [], []
    for i in movable:
        job, start = jobs[i], starts[i]
        submit, work = math.ceil(job.submit_time), job.gpus * (job.runtime or 0.0)
        reach = left if price <= 0 else min(left, math.floor(work / price))
        on = model.new_bool_var(f"on{i}")
        begin = model.new_int_var(submit, submit + reach, f"s{i}")
        model.add(begin == submit).only_enforce_if(~on)
        intervals.append(
            model.new_optional_fixed_size_interval_var(
                begin, math.ceil(job.runtime or 0), on, f"i{i}"
            )
        )
        demands.append(job.gpus)
        present.append(on)
        waits.append(begin - submit)
        begins.append(begin)
        cloud.append(round(work) * (1 - on))
        model.add_hint(on, start is not None)
        hinted = submit if start is None else min(max(math.ceil(start), submit), submit + reach)
        model.add_hint(begin, hinted)
    model.add_cumulative(intervals, demands, gpus)
    model.add(sum(waits) <= left)
    model.minimize(100 * sum(cloud) + round(100 * price) * sum(waits))
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = seconds
    solver.parameters.num_workers = 1
    if solver.solve(model) not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None
    placed = list(starts)
    for i, on, begin in zip(movable, present, begins, strict=True):
        placed[i] = float(solver.value(begin)) if solver.value(on) else None
    return placed
