"""The synthetic workload: deterministic, learnable, and loadable as a trace."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np

from starburst.core.job import Job
from starburst.predictor.features import declared_runtime
from starburst.predictor.workload import WorkloadSpec, generate, write_trace
from starburst.sim.trace import load_trace


def test_deterministic_per_seed() -> None:
    spec = WorkloadSpec(jobs=300, seed=3)
    assert generate(spec) == generate(spec)
    assert [j.extra for j in generate(spec)] == [j.extra for j in generate(spec)]
    other = generate(WorkloadSpec(jobs=300, seed=4))
    assert [j.runtime for j in other] != [j.runtime for j in generate(spec)]


def test_structure_a_predictor_can_learn(workload: list[Job]) -> None:
    runtimes = np.array([j.runtime for j in workload])
    gpus = np.array([j.gpus for j in workload])
    assert [j.id for j in workload] == sorted(j.id for j in workload)
    assert all(b.submit_time >= a.submit_time for a, b in itertools.pairwise(workload))
    assert runtimes.min() >= 30 and runtimes.max() <= 7 * 86400
    assert np.corrcoef(np.log2(gpus), np.log(runtimes))[0, 1] > 0.2  # bigger jobs run longer
    ratios = [declared_runtime(j) / j.runtime for j in workload if declared_runtime(j)]
    assert 0.1 < len(ratios) / len(workload) < 0.6
    assert np.median(ratios) > 1.5  # declared values are mostly over-estimates
    by_user: dict[str, list[float]] = {}
    for j in workload:
        by_user.setdefault(j.user or "", []).append(float(np.log(j.runtime or 1)))
    within = np.mean([np.var(v) for v in by_user.values() if len(v) > 5])
    assert within < np.var(np.log(runtimes))  # users have characteristic runtimes


def test_trace_round_trip(tmp_path: Path) -> None:
    jobs = generate(WorkloadSpec(jobs=50, seed=1))
    loaded = load_trace(write_trace(jobs, tmp_path / "sub" / "trace.csv"))
    assert [
        (j.id, j.submit_time, j.runtime, j.gpus, j.user, j.team, j.gpu_type, j.name) for j in loaded
    ] == [
        (j.id, j.submit_time, j.runtime, j.gpus, j.user, j.team, j.gpu_type, j.name) for j in jobs
    ]
    assert [j.extra.get("command") for j in loaded] == [j.extra["command"] for j in jobs]
    assert [declared_runtime(j) for j in loaded] == [declared_runtime(j) for j in jobs]
