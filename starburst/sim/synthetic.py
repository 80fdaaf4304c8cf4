"""Synthetic workloads like the paper artifact's: the generator the reproduction runs on.

- Arrivals: Poisson (exponential inter-arrival times) or, for burstiness cv > 1, Gamma
  inter-arrival times with shape 1/cv² (same mean, coefficient of variation cv).
- Runtimes: exponential with the given mean (1 h by default).
- GPUs: drawn from {1: 70%, 2: 15%, 4: 10%, 8: 5%} (the paper artifact's; docs/simulator.md).
- Offered load s = arrival rate × mean(gpus × runtime) ÷ cluster GPUs; the arrival rate is
  derived from the target s.

Deterministic: the same arguments and seed give the same jobs.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from starburst.core.errors import ConfigError
from starburst.core.job import Job

#: (GPUs, probability) pairs; a tuple so a workload is hashable and can key a cache.
DEFAULT_GPU_MIX: tuple[tuple[int, float], ...] = ((1, 0.70), (2, 0.15), (4, 0.10), (8, 0.05))


@dataclass(frozen=True, slots=True)
class Workload:
    jobs: int
    cluster_gpus: int
    load: float = 1.0
    cv: float = 1.0
    mean_runtime: float = 3600.0
    gpu_mix: tuple[tuple[int, float], ...] = DEFAULT_GPU_MIX
    cpus_per_gpu: float = 0.0
    seed: int = 0

    def __post_init__(self) -> None:
        if self.jobs < 0 or self.cluster_gpus <= 0:
            raise ConfigError("a workload needs jobs ≥ 0 and a cluster with GPUs")
        if self.load <= 0 or self.cv <= 0 or self.mean_runtime <= 0:
            raise ConfigError("load, cv and mean runtime must be > 0")
        if abs(sum(p for _, p in self.gpu_mix) - 1.0) > 1e-6:
            raise ConfigError("GPU mix probabilities must add up to 1")

    @property
    def mean_gpus(self) -> float:
        return sum(g * p for g, p in self.gpu_mix)

    @property
    def arrival_rate(self) -> float:
        """Jobs per second giving the target offered load."""
        return self.load * self.cluster_gpus / (self.mean_gpus * self.mean_runtime)


def generate(workload: Workload) -> list[Job]:
    rng = random.Random(workload.seed)
    sizes = [g for g, _ in workload.gpu_mix]
    weights = [p for _, p in workload.gpu_mix]
    mean_gap = 1.0 / workload.arrival_rate
    shape = 1.0 / workload.cv**2
    width = len(str(max(workload.jobs - 1, 0)))
    t = 0.0
    jobs = []
    for i in range(workload.jobs):
        if i:
            t += (
                rng.expovariate(1.0 / mean_gap)
                if workload.cv == 1.0
                else rng.gammavariate(shape, mean_gap / shape)
            )
        gpus = rng.choices(sizes, weights)[0]
        runtime = rng.expovariate(1.0 / workload.mean_runtime)
        jobs.append(
            Job(
                id=f"j{i:0{width}d}",
                submit_time=t,
                gpus=gpus,
                cpus=gpus * workload.cpus_per_gpu,
                runtime=runtime,
            )
        )
    return jobs
