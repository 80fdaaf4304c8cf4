"""Kubernetes adapter at scale: 1,000 GPU nodes and 10,000 queued Jobs on the API stand-in.

Prints (figures, not pass/fail):
- seeding time (objects written straight into the stand-in's store, not through HTTP);
- the adapter's *initial sync*: three informers list Nodes, Pods and the labelled Jobs in
  pages of 500 through the official client and hand the 10,000 submissions over
  (target: < 30 s);
- the *steady-state cost of one scheduling pass*: ``ended()`` + ``submissions()`` +
  ``snapshot()`` (capacity index over 1,000 nodes) + the core's out-of-order
  ``schedule_pass`` over the whole queue, and how many API requests those passes made
  (target: none — a pass reads the informers' caches, it never re-lists the cluster);
- the cost of applying starts (one pinning patch + one Event per Job) for a sample.

Run: ``.venv/bin/python bench/k8s_bench.py [--nodes 1000] [--jobs 10000] [--passes 20]``.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from starburst.adapters.kubernetes import KubernetesCluster, Settings
from starburst.core.cycle import SchedulerConfig, admit, schedule_pass
from starburst.core.policy import PolicyKind, WaitPolicy
from starburst.testing.kubeapi import KubeApiServer
from starburst.testing.kubeapi.server import JOBS

SIZES = [(1, 0.70), (2, 0.15), (4, 0.10), (8, 0.05)]


class WallClock:
    def now(self) -> float:
        return time.time()


def job_body(i: int, gpus: int) -> dict:
    return {
        "metadata": {"name": f"job-{i:05d}", "labels": {"starburst.io/queue": "bench",
                                                        "starburst.io/user": f"u{i % 50}"}},
        "spec": {"suspend": True, "parallelism": 1, "completions": 1, "backoffLimit": 0,
                 "template": {"spec": {"restartPolicy": "Never", "containers": [{
                     "name": "main", "image": "trainer:1", "resources": {
                         "requests": {"nvidia.com/gpu": str(gpus), "cpu": str(4 * gpus),
                                      "memory": f"{16 * gpus}Gi"},
                         "limits": {"nvidia.com/gpu": str(gpus)}}}]}}},
    }


def seed(kube: KubeApiServer, nodes: int, jobs: int, rng: random.Random) -> float:
    start = time.perf_counter()
    for i in range(nodes):
        kube.add_node(f"gpu-{i:04d}", gpus=8, cpu="96", memory="768Gi")
    sizes, weights = zip(*SIZES, strict=True)
    for i in range(jobs):
        kube.store.create(JOBS, "default", job_body(i, rng.choices(sizes, weights)[0]))
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--passes", type=int, default=20)
    parser.add_argument("--starts", type=int, default=200)
    args = parser.parse_args()
    rng = random.Random(7)
    with KubeApiServer(history=4 * args.jobs + 10_000) as kube:
        seeded = seed(kube, args.nodes, args.jobs, rng)
        print(f"seeded {args.nodes} nodes and {args.jobs} suspended Jobs in {seeded:.1f} s "
              f"(store rv {kube.store.resource_version})")

        api_client = kube.api_client()
        before = kube.requests
        t0 = time.perf_counter()
        cluster = KubernetesCluster(api_client, WallClock(), Settings()).start_watching()
        assert cluster.wait_synced(120), "informers did not sync"
        submissions = cluster.submissions()
        sync = time.perf_counter() - t0
        print(f"initial sync: {sync:.2f} s for {len(submissions)} submissions, "
              f"{len(cluster.snapshot().capacity.nodes)} nodes "
              f"({kube.requests - before} API requests)  [target < 30 s]")

        config = SchedulerConfig(WaitPolicy(PolicyKind.INFINITE), out_of_order=True)
        now = time.time()
        queue = [admit(job, config.policy, now) for job in submissions]
        queue.sort(key=lambda q: (q.queued_at, q.id))
        reads, decides = [], []
        before = kube.requests
        result = None
        for _ in range(args.passes):
            t1 = time.perf_counter()
            cluster.ended()
            arrivals = [admit(job, config.policy, now) for job in cluster.submissions()]
            snap = cluster.snapshot()
            t2 = time.perf_counter()
            result = schedule_pass(now, queue, arrivals, snap.capacity, config)
            t3 = time.perf_counter()
            reads.append(t2 - t1)
            decides.append(t3 - t2)
        assert result is not None
        requests = kube.requests - before
        print(f"one pass over {len(queue)} queued Jobs and {args.nodes} nodes "
              f"(median of {args.passes}): adapter reads {1e3 * statistics.median(reads):.1f} ms"
              f" + decision {1e3 * statistics.median(decides):.1f} ms; "
              f"{len(result.starts)} starts decided; API requests during passes: {requests}")

        sample = result.starts[: args.starts]
        t4 = time.perf_counter()
        for start in sample:
            cluster.start(start.job, start.placement, start.reason)
        applied = time.perf_counter() - t4
        print(f"applying {len(sample)} starts (pin + unsuspend patch, Event; the stand-in "
              f"creates and binds the Pods in the same request): "
              f"{1e3 * applied / max(1, len(sample)):.1f} ms each")
        t5 = time.perf_counter()
        snap = cluster.snapshot()
        print(f"snapshot after the starts: {snap.capacity.free_gpus} of "
              f"{snap.capacity.total_gpus} GPUs free, {len(list(snap.running))} running "
              f"({1e3 * (time.perf_counter() - t5):.1f} ms)")
        cluster.close()
        api_client.close()


if __name__ == "__main__":
    main()
