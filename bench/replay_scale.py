"""How replays scale: serial against every core, and what a year of a large cluster costs.

``tune`` and ``sweep`` replay each candidate setting as one task (``sim.sweep.run_tasks``):
on every core of this machine by default, or on a Ray cluster with ``--ray ADDRESS``. This
bench replays ``--settings`` Starburst settings over synthetic histories of growing size
(64 GPUs per 2,000 jobs, offered load 1.1) serially and on ``--processes`` worker processes,
and prints wall seconds, the speed-up, the CPU seconds of one replay per 1,000 jobs, and the
time a year of a large cluster's history (1,000,000 jobs × 50 settings) would take,
extrapolated linearly in jobs from the largest size measured, per core and on a few cluster
sizes. The machine is shared: the load average is printed beside the figures.

Run: .venv/bin/python bench/replay_scale.py [--sizes 2000,8000] [--settings 8]
"""

from __future__ import annotations

import argparse
import math
import os
import time

from starburst.core.capacity import uniform_nodes
from starburst.core.policy import PolicyKind
from starburst.sim.engine import SimOptions
from starburst.sim.sweep import RunSpec, Task, run_task, run_tasks
from starburst.sim.synthetic import Workload


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="2000,8000")
    parser.add_argument("--settings", type=int, default=8)
    parser.add_argument("--processes", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    print(f"{os.cpu_count()} cores; load average {os.getloadavg()[0]:.1f}")
    per_job, measured = 0.0, []
    for size in (int(s) for s in args.sizes.split(",")):
        gpus = max(8, round(size / 2000 * 64 / 8) * 8)
        source = Workload(size, gpus, load=1.1, cv=2.0, seed=1)
        nodes = tuple(uniform_nodes(gpus // 8, 8))
        budgets = [0.05 * (k + 1) for k in range(args.settings)]
        tasks = [
            Task(
                source,
                nodes,
                RunSpec(f"b={b:g}", PolicyKind.COMPUTE, b, None, True, 30),
                SimOptions(),
            )
            for b in budgets
        ]
        run_task(tasks[0])  # generate the workload once in this process (the workers cache theirs)
        c, w = time.process_time(), time.perf_counter()
        serial = run_tasks(tasks, processes=1)
        serial_cpu, serial_wall = time.process_time() - c, time.perf_counter() - w
        w = time.perf_counter()
        parallel = run_tasks(tasks, processes=args.processes)
        parallel_wall = time.perf_counter() - w
        assert parallel == serial
        per_job = serial_cpu / len(tasks) / size
        measured.append((size, per_job))
        print(
            f"{size:>7} jobs × {len(tasks)} settings: serial {serial_wall:.1f} s wall "
            f"({serial_cpu:.1f} s CPU), {args.processes} processes {parallel_wall:.1f} s wall: "
            f"speed-up {serial_wall / parallel_wall:.2f}x; one replay "
            f"{per_job * 1000 * 1000:.1f} ms CPU per 1,000 jobs (load average "
            f"{os.getloadavg()[0]:.1f})"
        )
    for name, cost in (("linearly", per_job), ("with the measured growth", grown(measured))):
        total = cost * 1_000_000 * 50
        print(
            f"1,000,000 jobs × 50 settings, extrapolated {name} from the largest size: "
            f"{total / 3600:.1f} CPU-hours; {total / 3600 / 2:.1f} h on these 2 cores, "
            f"{total / 60 / 50:.0f} min on a 50-CPU Ray cluster (one replay per CPU)"
        )


def grown(measured: list[tuple[int, float]]) -> float:
    """CPU per job at 1,000,000 jobs if it keeps growing as between the two largest sizes
    (a power law in the number of jobs)."""
    if len(measured) < 2:
        return measured[-1][1]
    (n0, c0), (n1, c1) = measured[-2], measured[-1]
    exponent = math.log(c1 / c0) / math.log(n1 / n0)
    return c1 * (1_000_000 / n1) ** max(exponent, 0.0)


if __name__ == "__main__":
    main()
