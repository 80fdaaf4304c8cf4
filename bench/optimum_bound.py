"""How tight the offline optimum's lower bound is, and why it stops short of a proof.

Part 1 — Table 4's trace (500 jobs, 32 GPUs, load ≈ 1, mean wait 0.051 h, as in
``bench/reproduce_paper.py``): the linear optimum of ``sim.optimum``'s time-indexed relaxation
(``linear_bound``) on finer and finer check points (``--grids SLOT:GROWTH,...``), with its
options and the seconds HiGHS took.

Part 2 — traces small enough for CP-SAT to prove their optimum (``--small-jobs`` jobs on
``--small-gpus`` GPUs, the same generator and mean wait, times rounded to whole seconds so
CP-SAT's one model is exact), one per ``--small-seeds``: the linear optimum 10 s apart, HiGHS's
branch and bound on the same program within ``--seconds``, and CP-SAT's optimum, each in
dollars, with the linear optimum's share of the optimum.

Needs the ``optimum`` extra (OR-Tools) for part 2. The machine is shared: the load average is
printed beside the figures.

Run: .venv/bin/python bench/optimum_bound.py [--grids 60:1.15,30:1.1,15:1.05,10:1.03]
     [--small-seeds 1,2,3] [--seconds 60]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import time

from starburst.core.job import Job
from starburst.sim.optimum import Mode, OptimumOptions, linear_bound, solve_optimum
from starburst.sim.synthetic import Workload, generate

MEAN_WAIT_S = 0.051 * 3600
PRICE = 2.5
FINE = (10.0, 1.03)


def grids(text: str) -> list[tuple[float, float]]:
    pairs = [part.split(":") for part in text.split(",") if part]
    return [(float(slot), float(growth)) for slot, growth in pairs]


def table4(chosen: list[tuple[float, float]]) -> None:
    jobs = generate(Workload(500, 32, load=1.0, seed=5))
    print("1. Table 4's trace: the relaxation's linear optimum on finer check points")
    for slot, growth in chosen:
        began = time.perf_counter()
        options = OptimumOptions(mode=Mode.BOUND, slot=slot, growth=growth, time_limit=1800)
        bound = linear_bound(jobs, 32, MEAN_WAIT_S, options)
        seconds = time.perf_counter() - began
        print(
            f"   check points {slot:>4g} s apart, rungs growing by {growth:<5g} "
            f"linear optimum ${bound * PRICE:>7.2f}   {seconds:>5.0f} s   "
            f"(load average {os.getloadavg()[0]:.1f})",
            flush=True,
        )


def small(count: int, gpus: int, seeds: list[int], seconds: float) -> None:
    from starburst.sim.optimum_cpsat import prove_optimum

    print(
        f"2. {count} jobs on {gpus} GPUs, proven by CP-SAT: the linear optimum "
        f"{FINE[0]:g} s apart and branch and bound ({seconds:g} s) against the optimum"
    )
    options = OptimumOptions(mode=Mode.BOUND, slot=FINE[0], growth=FINE[1], time_limit=seconds)
    for seed in seeds:
        jobs = whole_seconds(generate(Workload(count, gpus, load=1.0, seed=seed)))
        linear = linear_bound(jobs, gpus, MEAN_WAIT_S, options)
        mixed = solve_optimum(jobs, gpus, MEAN_WAIT_S, options).bound_gpu_hours
        exact = prove_optimum(jobs, gpus, MEAN_WAIT_S, time_limit=600, relative_gap=0.0, workers=2)
        verdict = "proven" if exact.proven else f"NOT proven ({exact.status})"
        share = f"{linear / exact.cloud_gpu_hours:.0%}" if exact.cloud_gpu_hours else "-"
        print(
            f"   seed {seed}: linear ${linear * PRICE:>7.2f}, branch and bound "
            f"${mixed * PRICE:>7.2f}, optimum ${exact.cloud_cost_usd:>7.2f} ({verdict}): "
            f"linear {share} of it   (load average {os.getloadavg()[0]:.1f})",
            flush=True,
        )


def whole_seconds(jobs: list[Job]) -> list[Job]:
    return [
        dataclasses.replace(
            j, submit_time=float(round(j.submit_time)), runtime=float(max(1, round(j.runtime or 1)))
        )
        for j in jobs
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--grids", type=grids, default=grids("60:1.15,30:1.1,15:1.05,10:1.03"))
    parser.add_argument("--small-jobs", type=int, default=40)
    parser.add_argument("--small-gpus", type=int, default=8)
    parser.add_argument("--small-seeds", default="1,2,3")
    parser.add_argument("--seconds", type=float, default=60.0, help="branch and bound's limit")
    args = parser.parse_args()
    table4(args.grids)
    seeds = [int(s) for s in args.small_seeds.split(",") if s]
    small(args.small_jobs, args.small_gpus, seeds, args.seconds)


if __name__ == "__main__":
    main()
