"""A live controller on virtual time: the real ``Controller`` (SQLite store, leader lock,
scheduling loop, metering, recalibration, applied settings) with the simulator's cluster
and cloud, driven from event to event by ``starburst.controller.replay.VirtualTime``, the
event loop the replay runs the scheduling pass alone with.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from starburst.adapters.db import migrate
from starburst.adapters.db.store import SqlStore
from starburst.controller.daemon import Controller
from starburst.controller.metrics import ControllerMetrics
from starburst.controller.replay import VirtualTime
from starburst.controller.report import PassReport
from starburst.core.capacity import Node
from starburst.core.job import Job
from starburst.core.ports import Estimate
from starburst.settings import Settings
from starburst.sim.clock import SimClock
from starburst.sim.cloud import SimCloud
from starburst.sim.cluster import SimCluster
from starburst.sim.synthetic import Workload, generate


class NoisyPredictor:
    """Estimates off by up to ±60%, the same for a job every time: not the oracle."""

    def __init__(self, runtimes: dict[str, float]) -> None:
        self.runtimes = runtimes

    def estimate(self, jobs: Sequence[Job]) -> list[Estimate]:
        out = []
        for job in jobs:
            value = self.runtimes[job.id] * (1 + random.Random(job.id).uniform(-0.6, 0.6))
            out.append(Estimate(value, value / 2, value * 2, "test-model"))
        return out


def workload(prefix: str, start: float, jobs: int, gpus: int, seed: int) -> list[Job]:
    """Synthetic jobs from ``start`` (epoch), times in milliseconds (the store keeps µs)."""
    raw = generate(Workload(jobs, gpus, load=1.3, cv=2.0, mean_runtime=1800, seed=seed))
    teams = ("vision", "nlp")
    return [
        Job(
            f"{prefix}{j.id}",
            start + round(j.submit_time, 3),
            j.gpus,
            runtime=round(j.runtime or 1.0, 3),
            user=f"u{i % 5}",
            team=teams[i % 2],
        )
        for i, j in enumerate(raw)
    ]


@dataclass
class LiveRun:
    controller: Controller
    clock: SimClock
    cluster: SimCluster
    cloud: SimCloud
    runtimes: dict[str, float]

    @property
    def store(self) -> SqlStore:
        return self.controller.store

    def run(self, jobs: Sequence[Job]) -> float:
        """Submit ``jobs`` at their times and pass until all ended; the last instant."""
        for job in jobs:
            self.runtimes[job.id] = job.runtime or 0.0
        VirtualTime(self.clock, self.cluster, self.cloud, self.store, self._pass).run(jobs)
        return self.clock.now()

    def _pass(self) -> PassReport:
        report = self.controller.run_pass()
        assert report is not None, self.controller.health()
        return report


def start_controller(
    tmp: Path, settings: dict[str, object], nodes: Sequence[Node], t0: float
) -> LiveRun:
    url = f"sqlite:///{tmp / 'live.db'}"
    migrate.upgrade(url)
    clock = SimClock(t0)
    runtimes: dict[str, float] = {}
    cluster = SimCluster(nodes, clock, runtimes)
    cloud = SimCloud(clock, 2.5, runtimes=runtimes)
    config = Settings(database_url=url, state_dir=tmp / "state", cloud="none", **settings)  # type: ignore[arg-type]
    store = SqlStore.open(url, clock=clock)
    controller = Controller(
        config,
        store,
        cluster,
        cloud,
        clock=clock,
        estimator=NoisyPredictor(runtimes),
        metrics=ControllerMetrics.create(),
    )
    return LiveRun(controller, clock, cluster, cloud, runtimes)
