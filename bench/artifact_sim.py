"""The authors' simulator as a whole command, on one of our traces (run by sim_speed.py).

Runs under the reference's own interpreter (a virtualenv with numpy, pandas, tabulate and
tqdm, outside this repository) with the authors' repository (``michaelzhiluo/starburst``) on
``sys.path``, so that nothing of Starburst is imported: only the standard library here, then
their ``skyburst`` package. The trace is the CSV ``starburst synth`` writes (seconds); the
artifact works in hours, so times are divided by 3,600 (Compute-Wait's coefficient is
dimensionless: the wait is c × GPUs × runtime in either unit). Starburst's configuration in
the artifact's words: ``linear_cost`` waiting, ``loop`` (out of order), FIFO, first-fit, queue
cap 30.

Prints one JSON line: the jobs burst and the cloud GPU-hours, to set beside ours.

Run: VENV/bin/python bench/artifact_sim.py REPO TRACE.csv --nodes 64 --gpus-per-node 8 --c C
"""

from __future__ import annotations

import argparse
import csv
import json
import sys


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo", help="the authors' repository (holds skyburst/)")
    parser.add_argument("trace")
    parser.add_argument("--nodes", type=int, default=64)
    parser.add_argument("--gpus-per-node", type=int, default=8)
    parser.add_argument("--c", type=float, required=True, help="Compute-Wait's coefficient")
    parser.add_argument("--queue-cap", type=int, default=30)
    args = parser.parse_args()
    sys.path.insert(0, args.repo)
    from skyburst import Job, run_simulator

    jobs = []
    with open(args.trace, newline="") as f:
        for idx, row in enumerate(csv.DictReader(f)):
            runtime = float(row["runtime"]) / 3600.0
            gpus = int(row["gpus"])
            resources = {"GPUs": gpus, "CPUs": 0}
            arrival = float(row["submit_time"]) / 3600.0
            jobs.append(
                Job(idx, arrival=arrival, runtime=runtime, resources=resources, cost=gpus * runtime)
            )
    spec = {
        "cluster_size": args.nodes,
        "gpus_per_node": args.gpus_per_node,
        "sched_alg": "fifo",
        "binpack_alg": "first-fit",
        "waiting_policy": "linear_cost",
        "waiting_factor": args.c,
        "loop": True,
        "max_queue_length": args.queue_cap,
        "warmup_jobs": 0,
    }
    result = run_simulator(jobs, spec)
    states = list(result["state"])
    burst = [i for i, s in enumerate(states) if s == "TIMEOUT-CLOUD"]
    gpu_hours = float(sum(result["num_gpus"][i] * result["runtime"][i] for i in burst))
    print(json.dumps({"burst_jobs": len(burst), "cloud_gpu_hours": gpu_hours}))


if __name__ == "__main__":
    main()
