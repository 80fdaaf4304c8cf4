"""A live controller on virtual time: the real ``Controller`` (SQLite store, leader lock,
scheduling loop, metering, recalibration, applied settings) with the simulator's cluster
and cloud, driven from event to event by ``starburst.controller.replay.VirtualTime``, the
event loop the replay runs the scheduling pass alone with.

Recalibration: the daemon refits the coefficient on a wall-clock period (an APScheduler job
beside the passes). On virtual time, ``run(..., recalibrate_every=P)`` does it in the pass
wrapper: before the first pass at or after each tick t0 + k·P, once however many ticks passed
since the last pass (nothing happened in between, so the recent window is the same). A
refit changes only the budgets of later arrivals, and arrivals come only at passes, so this
is what the daemon's tick between two events would have done.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from starburst.adapters.db.store import SqlStore
from starburst.controller.daemon import Controller
from starburst.controller.loop.report import PassReport
from starburst.controller.metrics import ControllerMetrics
from starburst.controller.replay import VirtualTime
from starburst.controller.wiring import wire_controller
from starburst.core.capacity import Node
from starburst.core.job import Job
from starburst.core.ports import Estimate
from starburst.settings import Settings
from starburst.sim.clock import SimClock
from starburst.sim.cloud import SimCloud
from starburst.sim.cluster import SimCluster
from starburst.sim.synthetic import Workload, generate
from tests.support.databases import upgrade


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
    #: recalibrations the pass wrapper ran (``recalibrate_every``)
    recalibrations: int = 0
    _period: float | None = field(default=None, repr=False)
    _tick: float = field(default=math.inf, repr=False)

    @property
    def store(self) -> SqlStore:
        return self.controller.store

    def run(self, jobs: Sequence[Job], recalibrate_every: float | None = None) -> float:
        """Submit ``jobs`` at their times and pass until all ended; the last instant.
        ``recalibrate_every``: refit the coefficient on that virtual period, as the daemon's
        ``recalibrate_interval_s`` job does (the module docstring says when)."""
        if recalibrate_every is not None and not recalibrate_every > 0:
            raise ValueError(f"recalibrate_every must be > 0, got {recalibrate_every}")
        for job in jobs:
            self.runtimes[job.id] = job.runtime or 0.0
        self._period = recalibrate_every
        self._tick = self.clock.now() + recalibrate_every if recalibrate_every else math.inf
        try:
            VirtualTime(
                self.clock, self.cluster, self.cloud, self.store.submissions, self._pass
            ).run(jobs)
        finally:
            self._period, self._tick = None, math.inf
        return self.clock.now()

    def _pass(self) -> PassReport:
        now = self.clock.now()
        if self._period is not None and self._tick <= now:
            self.controller.recalibrate()
            self.recalibrations += 1
            self._tick += self._period * (math.floor((now - self._tick) / self._period) + 1)
        report = self.controller.run_pass()
        assert report is not None, self.controller.health()
        return report


def start_controller(
    tmp: Path, settings: dict[str, object], nodes: Sequence[Node], t0: float
) -> LiveRun:
    url = f"sqlite:///{tmp / 'live.db'}"
    upgrade(url)
    clock = SimClock(t0)
    runtimes: dict[str, float] = {}
    cluster = SimCluster(nodes, clock, runtimes)
    cloud = SimCloud(clock, 2.5, runtimes=runtimes)
    config = Settings(database_url=url, state_dir=tmp / "state", cloud="none", **settings)  # type: ignore[arg-type]
    store = SqlStore.open(url, clock=clock)
    controller = wire_controller(
        config,
        store,
        cluster,
        cloud,
        clock=clock,
        estimator=NoisyPredictor(runtimes),
        metrics=ControllerMetrics.create(),
    )
    return LiveRun(controller, clock, cluster, cloud, runtimes)
