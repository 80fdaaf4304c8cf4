"""Runtime predictor benchmark: accuracy, effect on scheduling cost, training and prediction speed.

Part 1 — accuracy on the structured synthetic workload (``starburst.predictor.workload``): a
time-ordered split (first 70% train, last 30% test); the model's median absolute log-ratio
(MALR) against the best baseline (global median, user's recent median). Target: ≥ 25% lower.

Part 2 — effect on scheduling: train on the first half, simulate the second half with
Starburst (Compute-Wait, out of order, queue cap 30, budget 0.25) with oracle runtimes,
predicted runtimes (the model's p50) and no estimate (Star-Wait), against No-Wait.
Target: predictions keep ≥ 80% of the oracle's savings.

Part 3 — speed: training on 100,000 jobs (target < 30 s on 2 cores) and one batch prediction
of 10,000 queued jobs over a 100,000-job history (target < 100 ms); the median of several
repetitions is reported, with the machine's load average, since the bench machine is shared.

Run: .venv/bin/python bench/predictor_bench.py [--quick]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from dataclasses import replace

from starburst.predictor.estimator import ModelEstimator
from starburst.predictor.evaluation import evaluate, format_evaluation
from starburst.predictor.history import HistoryIndex
from starburst.predictor.model import TrainParams
from starburst.predictor.scheduling import compare_scheduling, format_comparison
from starburst.predictor.training import train_artifact
from starburst.predictor.workload import WorkloadSpec, generate


def timed(fn: Callable[[], object], repeat: int) -> tuple[float, list[float]]:
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - start)
    return statistics.median(runs), runs


def load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def accuracy(jobs: int) -> float:
    print(f"== 1. accuracy: structured synthetic workload, {jobs} jobs, seed 0 ==")
    ev = evaluate(generate(WorkloadSpec(jobs=jobs, seed=0)), train_share=0.7)
    print(format_evaluation(ev))
    print(f"-> model MALR {ev.model.median_abs_log_ratio:.3f} vs best baseline "
          f"{ev.best_baseline.median_abs_log_ratio:.3f} ({ev.best_baseline.name}): "
          f"{ev.improvement:.1%} lower (target ≥ 25%)\n")
    return ev.improvement


def scheduling(jobs: int) -> float:
    print(f"== 2. effect on scheduling: {jobs} jobs, train on the first half, simulate the rest ==")
    cmp = compare_scheduling(generate(WorkloadSpec(jobs=jobs, seed=1)), train_share=0.5)
    print(format_comparison(cmp))
    print(f"-> predicted runtimes keep {cmp.kept:.1%} of the oracle's savings (target ≥ 80%)\n")
    return cmp.kept


def speed(train_jobs: int, batch: int, repeat: int) -> None:
    print(f"== 3. speed ({os.cpu_count()} cores; {load()}) ==")
    jobs = generate(WorkloadSpec(jobs=train_jobs + batch, users=400, teams=30,
                                 jobs_per_hour=60.0, seed=2))
    history, queued = jobs[:train_jobs], jobs[train_jobs:]
    start = time.perf_counter()
    artifact = train_artifact(history, TrainParams())
    fit_s = time.perf_counter() - start
    print(f"training on {train_jobs} jobs (features, 3 quantile models, calibration, metrics): "
          f"{fit_s:.2f} s (target < 30 s)")
    estimator = ModelEstimator(artifact, HistoryIndex(history))
    queued_jobs = [replace(j, runtime=None) for j in queued]
    estimator.estimate(queued_jobs[:100])  # warm the import and tokeniser caches
    pred_s, pred_runs = timed(lambda: estimator.predict(queued_jobs), repeat)
    est_s, _ = timed(lambda: estimator.estimate(queued_jobs), repeat)
    print(f"predicting {batch} queued jobs in one batch: {pred_s * 1000:.1f} ms as arrays, "
          f"{est_s * 1000:.1f} ms as Estimate objects (median of {repeat}; target < 100 ms); "
          f"all runs: {', '.join(f'{r * 1000:.0f}' for r in sorted(pred_runs))} ms")
    print(f"({load()})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller workloads")
    args = parser.parse_args()
    q = args.quick
    accuracy(8_000 if q else 30_000)
    scheduling(6_000 if q else 30_000)
    speed(20_000 if q else 100_000, 2_000 if q else 10_000, 5 if q else 9)


if __name__ == "__main__":
    main()
