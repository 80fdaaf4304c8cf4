"""Cloud metering: what a scheduling pass costs while long cloud launches run.

A pass meters every active launch in fixed chunks (one minute by default). The controller's
first pass of a term meters each launch from its start (a restarted controller cannot know
what the last one wrote; the store ignores the chunks it already has), and before the fix
every pass did so: the work of a pass grew with the launches' age. Later passes of a term now
write only the chunks that are new since the pass before.

The bench bursts ``--launches`` jobs (SQLite store, the simulated cluster with no GPUs and the
simulated cloud), lets them run ``--hours`` and meters them once, then times a new term's first
pass (the baseline: it meters every chunk again, which the store ignores but one, as every pass
did before) and ``--passes`` later passes ten seconds apart, side by side.

Run: .venv/bin/python bench/metering_bench.py [--launches 20] [--hours 24] [--passes 20]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from starburst.adapters.db import migrate
from starburst.adapters.db.store import SqlStore
from starburst.controller.loop.scheduling import SchedulingLoop
from starburst.core.cycle import SchedulerConfig
from starburst.core.policy import PolicyKind, WaitPolicy
from starburst.core.records import JobSpec
from starburst.sim.clock import SimClock
from starburst.sim.cloud import SimCloud
from starburst.sim.cluster import SimCluster

START = 1_800_000_000.0
PASS_INTERVAL_S = 10.0


def timed_pass(loop: SchedulingLoop) -> float:
    began = time.perf_counter()
    loop.run_pass()
    return time.perf_counter() - began


def run(launches: int, hours: float, passes: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'bench.db'}"
        migrate.upgrade(url)
        clock = SimClock(START)
        store = SqlStore.open(url, clock=clock)
        ids = [f"job-{i:03d}" for i in range(launches)]
        cloud = SimCloud(clock, 2.0, runtimes=dict.fromkeys(ids, 30 * 86_400.0))
        config = SchedulerConfig(WaitPolicy(PolicyKind.NO_WAIT), out_of_order=True)

        def loop() -> SchedulingLoop:  # one leader term
            return SchedulingLoop(store, SimCluster([], clock), cloud, clock, config)

        for job_id in ids:
            store.submissions.submit(
                JobSpec(id=job_id, gpus=1, command="true", declared_runtime=60)
            )
        loop().run_pass()  # every job bursts at once: no GPUs on-prem
        clock.advance_to(START + hours * 3600)
        loop().run_pass()  # a term meters every chunk since each launch: all new
        clock.advance_to(clock.now() + PASS_INTERVAL_S)
        term = loop()
        first = timed_pass(term)  # every chunk again, all but one known: what a pass cost before
        later = []
        for _ in range(passes):
            clock.advance_to(clock.now() + PASS_INTERVAL_S)
            later.append(timed_pass(term))
        active = len(store.ledger.launches(active=True))
        store.close()
    median = statistics.median(later)
    print(f"{launches} cloud launches ({active} active) after {hours:g} h, one-minute chunks:")
    rows = [
        ("first pass of a term (every chunk, as every pass before)", first),
        (f"later pass of the term, median of {passes}", median),
    ]
    for label, seconds in rows:
        print(f"  {label:<58} {seconds * 1000:9.1f} ms")
    print(f"  ratio first / later: {first / median:.0f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--launches", type=int, default=20)
    parser.add_argument("--hours", type=float, default=24.0)
    parser.add_argument("--passes", type=int, default=20)
    args = parser.parse_args()
    run(args.launches, args.hours, args.passes)


if __name__ == "__main__":
    main()
