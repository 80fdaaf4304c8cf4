"""The controller on virtual time against the fast simulator, on the same trace.

``starburst.controller.replay`` runs the live controller's pass (store transitions, queue
view, cloud follower, metering) at every event of a trace; ``starburst.sim.engine`` applies
the same decisions in memory. Both run the trace below (2,000 synthetic jobs on 64 GPUs,
offered load 1.1) under Starburst (Compute-Wait, out of order, queue cap 30, b = 25%) and
Star-Wait; the figures are each engine's CPU seconds, their ratio, the passes the controller
ran and whether both made the same decisions job by job.

Times are CPU seconds of this process (``time.process_time``), so other work on the machine
disturbs them less than wall-clock time; the simulator's figure is the best of three runs.

Run: .venv/bin/python bench/replay_speed.py [--jobs N]
"""

from __future__ import annotations

import argparse
import time

from starburst.controller.replay import ReplayStats, replay
from starburst.core.capacity import uniform_nodes
from starburst.core.cycle import SchedulerConfig
from starburst.core.job import Job
from starburst.core.policy import PolicyKind, WaitPolicy
from starburst.sim.engine import simulate
from starburst.sim.report import SimResult
from starburst.sim.synthetic import Workload, generate


def decisions(result: SimResult) -> dict[str, tuple[object, ...]]:
    return {
        o.job.id: (o.where, o.start, o.placement, o.first_burst, o.end) for o in result.outcomes
    }


def compare(name: str, jobs: list[Job], config: SchedulerConfig) -> None:
    nodes = uniform_nodes(8, 8)
    sim_s = float("inf")
    for _ in range(3):
        started = time.process_time()
        sim = simulate(jobs, nodes, config)
        sim_s = min(sim_s, time.process_time() - started)
    stats = ReplayStats()
    started = time.process_time()
    live = replay(jobs, nodes, config, stats=stats)
    live_s = time.process_time() - started
    same = decisions(sim) == decisions(live)
    print(
        f"{name:<10} simulator {sim_s:7.3f} s   controller {live_s:7.2f} s "
        f"({stats.passes:,} passes, {live_s / stats.passes * 1e3:.2f} ms/pass)   "
        f"ratio {live_s / sim_s:6.0f}×   same decisions: {same}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2000)
    args = parser.parse_args()
    jobs = generate(Workload(args.jobs, 64, load=1.1, seed=1))
    print(f"{args.jobs:,} jobs on 64 GPUs (8 × 8), offered load 1.1, CPU seconds")
    starburst = WaitPolicy.from_budget(PolicyKind.COMPUTE, 0.25, jobs)
    compare("Starburst", jobs, SchedulerConfig(starburst, out_of_order=True, queue_cap=30))
    star = WaitPolicy.from_budget(PolicyKind.STAR, 0.25, jobs)
    compare("Star-Wait", jobs, SchedulerConfig(star, out_of_order=True, queue_cap=30))


if __name__ == "__main__":
    main()
