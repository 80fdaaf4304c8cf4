"""Kubernetes adapter at scale: 1,000 GPU nodes and 10,000 queued Jobs, on the API stand-in
and on a real control plane (kube-apiserver + etcd built by ``tests.support.controlplane``),
side by side.

Prints (figures, not pass/fail), for each server:
- seeding time (stand-in: objects written straight into its store; real: through HTTP, the
  nodes as the fake kubelet registers them, the Jobs by 8 concurrent clients);
- the adapter's *initial sync*: three informers list Nodes, Pods and the labelled Jobs in
  pages of 500 through the official client and hand the submissions over (target: < 30 s);
- the *steady-state cost of one scheduling pass*: ``ended()`` + ``submissions()`` +
  ``snapshot()`` (capacity index over the nodes) + the core's out-of-order ``schedule_pass``
  over the whole queue, and how many API requests those passes made (target: none — a pass
  reads the informers' caches, it never re-lists the cluster);
- the cost of applying starts (one pinning patch + one Event per Job) for a sample;
then the real/stand-in ratios. Requests are counted in the client (every HTTP request the
official client sends, watches included), the same way for both servers.

Run: ``.venv/bin/python bench/k8s_bench.py [--nodes 1000] [--jobs 10000] [--passes 20]
[--servers standin,real] [--scale 0.1]`` (``--scale`` multiplies nodes and Jobs: a quick run).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from starburst.adapters.kubernetes import KubernetesCluster, KubernetesSettings
from starburst.core.cycle import SchedulerConfig, admit, schedule_pass
from starburst.core.policy import PolicyKind, WaitPolicy
from tests.kubeapi import KubeApiServer
from tests.kubeapi.resources import BY_PATH
from tests.kubeapi.server import JOBS

SIZES = [(1, 0.70), (2, 0.15), (4, 0.10), (8, 0.05)]
NAMESPACE = "bench"


class WallClock:
    def now(self) -> float:
        return time.time()


def job_body(i: int, gpus: int) -> dict:
    return {
        "metadata": {
            "name": f"job-{i:05d}",
            "labels": {"starburst.io/queue": "bench", "starburst.io/user": f"u{i % 50}"},
        },
        "spec": {
            "suspend": True,
            "parallelism": 1,
            "completions": 1,
            "backoffLimit": 0,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {
                            "name": "main",
                            "image": "trainer:1",
                            "resources": {
                                "requests": {
                                    "nvidia.com/gpu": str(gpus),
                                    "cpu": str(4 * gpus),
                                    "memory": f"{16 * gpus}Gi",
                                },
                                "limits": {"nvidia.com/gpu": str(gpus)},
                            },
                        }
                    ],
                }
            },
        },
    }


def job_sizes(jobs: int) -> list[int]:
    rng = random.Random(7)
    sizes, weights = zip(*SIZES, strict=True)
    return [rng.choices(sizes, weights)[0] for _ in range(jobs)]


class Counted:
    """An official ``ApiClient`` whose HTTP requests are counted (``.requests``)."""

    def __init__(self, api_client: Any) -> None:
        self.api_client, self.requests = api_client, 0
        inner = api_client.request

        def counting(*args: Any, **kwargs: Any) -> Any:
            self.requests += 1
            return inner(*args, **kwargs)

        api_client.request = counting


@contextmanager
def standin(nodes: int, jobs: int) -> Iterator[tuple[Any, float]]:
    with KubeApiServer(history=4 * jobs + 10_000) as kube:
        start = time.perf_counter()
        kube.store.create(BY_PATH[("", "v1", "namespaces")], "", {"metadata": {"name": NAMESPACE}})
        for i in range(nodes):
            kube.add_node(f"gpu-{i:04d}", gpus=8, cpu="96", memory="768Gi")
        for i, gpus in enumerate(job_sizes(jobs)):
            kube.store.create(JOBS, NAMESPACE, job_body(i, gpus))
        yield kube.api_client, time.perf_counter() - start


@contextmanager
def real(nodes: int, jobs: int) -> Iterator[tuple[Any, float]]:
    from tests.support.controlplane import RealKube
    from tests.support.controlplane_build import binaries
    from tests.support.kubelet import FakeKubelet

    with tempfile.TemporaryDirectory(prefix="starburst-bench-") as workdir:
        kube = RealKube(binaries(), Path(workdir)).start()
        try:
            start = time.perf_counter()
            kube.request("POST", "/api/v1/namespaces", {"metadata": {"name": NAMESPACE}})
            kubelet = FakeKubelet(kube.api_client())
            path = f"/apis/batch/v1/namespaces/{NAMESPACE}/jobs"
            with ThreadPoolExecutor(8) as pool:
                list(
                    pool.map(
                        lambda i: kubelet.add_node(
                            f"gpu-{i:04d}", gpus=8, cpu="96", memory="768Gi"
                        ),
                        range(nodes),
                    )
                )
                list(
                    pool.map(
                        lambda ig: kube.request("POST", path, job_body(*ig)),
                        enumerate(job_sizes(jobs)),
                    )
                )
            kubelet.api_client.close()
            yield kube.api_client, time.perf_counter() - start
        finally:
            kube.stop()


def measure(name: str, server: Callable[..., Any], args: argparse.Namespace) -> dict[str, float]:
    with server(args.nodes, args.jobs) as (make_client, seeded):
        print(
            f"[{name}] seeded {args.nodes} nodes and {args.jobs} suspended Jobs in {seeded:.1f} s"
        )
        counted = Counted(make_client())
        t0 = time.perf_counter()
        cluster = KubernetesCluster(
            counted.api_client, WallClock(), KubernetesSettings(namespace=NAMESPACE)
        ).start_watching()
        assert cluster.wait_synced(600), "informers did not sync"
        submissions = cluster.submissions()
        while len(submissions) < args.jobs and time.perf_counter() - t0 < 600:
            time.sleep(0.05)
            submissions += cluster.submissions()
        sync = time.perf_counter() - t0
        print(
            f"[{name}] initial sync: {sync:.2f} s for {len(submissions)} submissions, "
            f"{len(cluster.snapshot().capacity.nodes)} nodes "
            f"({counted.requests} API requests)  [target < 30 s]"
        )

        config = SchedulerConfig(WaitPolicy(PolicyKind.INFINITE), out_of_order=True)
        now = time.time()
        queue = [admit(job, config.policy, now) for job in submissions]
        queue.sort(key=lambda q: (q.queued_at, q.id))
        reads, decides = [], []
        before = counted.requests
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
        per_pass = (counted.requests - before) / args.passes
        print(
            f"[{name}] one pass over {len(queue)} queued Jobs and {args.nodes} nodes "
            f"(median of {args.passes}): adapter reads {1e3 * statistics.median(reads):.1f} "
            f"ms + decision {1e3 * statistics.median(decides):.1f} ms; "
            f"{len(result.starts)} starts decided; API requests per pass: {per_pass:g}"
        )

        sample = result.starts[: args.starts]
        t4 = time.perf_counter()
        for start in sample:
            cluster.start(start.job, start.placement, start.reason)
        applied = 1e3 * (time.perf_counter() - t4) / max(1, len(sample))
        print(
            f"[{name}] applying {len(sample)} starts (pin + unsuspend patch, Event): "
            f"{applied:.1f} ms each"
        )
        cluster.close()
        counted.api_client.close()
        return {
            "seed": seeded,
            "sync": sync,
            "per_pass": per_pass,
            "start_ms": applied,
            "sync_requests": float(before),
        }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--passes", type=int, default=20)
    parser.add_argument("--starts", type=int, default=200)
    parser.add_argument("--servers", default="standin,real")
    parser.add_argument(
        "--scale", type=float, default=1.0, help="multiply --nodes and --jobs (0.1: a quick run)"
    )
    args = parser.parse_args()
    args.nodes = max(1, round(args.nodes * args.scale))
    args.jobs = max(1, round(args.jobs * args.scale))
    servers = {"standin": standin, "real": real}
    figures = {name: measure(name, servers[name], args) for name in args.servers.split(",")}
    if {"standin", "real"} <= figures.keys():
        a, b = figures["standin"], figures["real"]
        print(
            f"real / stand-in: initial sync {b['sync'] / a['sync']:.1f}× "
            f"({b['sync']:.2f} s vs {a['sync']:.2f} s, {b['sync_requests']:g} vs "
            f"{a['sync_requests']:g} requests), requests per pass {b['per_pass']:g} vs "
            f"{a['per_pass']:g}, a start {b['start_ms'] / max(a['start_ms'], 1e-9):.1f}× "
            f"({b['start_ms']:.1f} ms vs {a['start_ms']:.1f} ms)"
        )


if __name__ == "__main__":
    main()
