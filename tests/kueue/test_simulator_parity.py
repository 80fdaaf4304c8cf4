"""The same decisions as the simulator: a known workload through Kueue and Starburst on the
real tier splits between on-prem and the cloud exactly as ``starburst simulate`` splits it.

Kueue's quota plays the cluster's capacity (a ClusterQueue of 2 GPUs ↔ one 2-GPU node), the
policy is Compute-Wait with c = 0.5 on both sides, and each job declares its true runtime (the
simulator's oracle). The test plays the trace's time on the controller's clock, from the
last Job's creation (budgets count from a Job's ``creationTimestamp``; the Jobs are created
within seconds, so well inside one of the trace's 50 s steps): a Job that runs on-prem is
finished (by the fake kubelet) when its runtime has passed since Kueue admitted it.
"""

from __future__ import annotations

import csv
import math
import time
from pathlib import Path
from typing import Any

from starburst.core.lifecycle import JobState
from tests.builders import run_cli
from tests.kueue import objects
from tests.kueue.test_burst_policy import OPT_IN, finish, with_kueue
from tests.realkube.rig import controller_rig
from tests.support.waiting import wait_for

QUOTA = 2
#: name, GPUs, runtime (s): all submitted at once, in this order
TRACE = [("a", 1, 600), ("b", 1, 600), ("c", 1, 200), ("d", 1, 2000), ("e", 1, 400)]
STEP = 50.0  # every event of this trace falls on a multiple of it


def simulated(tmp_path: Path, capsys: Any) -> dict[str, tuple[str, float]]:
    trace, out = tmp_path / "trace.csv", tmp_path / "per-job.csv"
    rows = ["job_id,submit_time,gpus,cpus,runtime"]
    rows += [f"{name},0,{gpus},1,{runtime}" for name, gpus, runtime in TRACE]
    trace.write_text("\n".join(rows) + "\n")
    code, _, err = run_cli(
        ["simulate", str(trace), "--nodes", "1", "--gpus-per-node", str(QUOTA),
         "--policy", "compute", "--coefficient", "0.5", "--per-job", str(out)],
        capsys,
    )  # fmt: skip
    assert code == 0, err
    with open(out) as fh:
        return {r["job_id"]: (r["where"], float(r["start"])) for r in csv.DictReader(fh)}


def active(kube: Any, namespace: str) -> tuple[int, int]:
    """(Workloads Kueue admitted and not finished, Workloads still waiting for it)."""
    items = kube.request("GET", f"{objects.GROUP}/namespaces/{namespace}/workloads")["items"]
    running = waiting = 0
    for w in items:
        if objects.has_condition(w, "Finished") or (w.get("spec") or {}).get("active") is False:
            continue
        if objects.has_condition(w, "Admitted"):
            running += 1
        else:
            waiting += 1
    return running, waiting


def settled(kube: Any, namespace: str) -> bool:
    """Kueue has admitted all it can (every job takes 1 GPU of the quota)."""
    running, waiting = active(kube, namespace)
    return running == QUOTA or waiting == 0


def test_the_on_prem_and_cloud_split_is_the_simulators(
    kueue_kube, kueue_queue, tmp_path: Path, capsys
):
    expected = simulated(tmp_path, capsys)
    kube = kueue_kube.kube
    queue = kueue_queue(gpus=QUOTA, annotations=OPT_IN)
    ns = queue.namespace
    with (
        kube.kubelet() as kubelet,
        controller_rig(
            kube, ns, tmp_path / "rig", clock_start=math.floor(time.time()),
            policy="compute", coefficient=0.5,
        ) as rig,
    ):  # fmt: skip
        try:
            kubelet.add_node("gpu-a", gpus=8)
            rig.cloud.runtime = 10_000  # bursts stay in the cloud for the whole scenario
            with_kueue(rig)
            for name, gpus, runtime in TRACE:
                job = objects.kueue_job(name, queue.local_queue, gpus, predicted_runtime=runtime)
                objects.create(kube, job, ns)
                wait_for(lambda n=name: objects.evaluated_workload(kube, ns, n), timeout=60)
            wait_for(lambda: settled(kube, ns), timeout=60)
            t0 = rig.clock.set(max(objects.created(kube, ns, name) for name, _, _ in TRACE))
            started: dict[str, float] = {}
            ends = dict((name, runtime) for name, _, runtime in TRACE)
            for step in range(int(3000 / STEP) + 1):
                now = t0 + step * STEP
                rig.clock.advance(now - rig.clock.now())
                for name, at in started.items():  # runs that end now end on-prem
                    if now - at == ends[name]:
                        finish(kubelet, ns, name)
                        wait_for(lambda n=name: objects.has_condition(
                            objects.workload(kube, ns, n), "Finished"), timeout=60)  # fmt: skip
                wait_for(lambda: settled(kube, ns), timeout=60)
                rig.controller.run_pass()
                for name, _, _ in TRACE:
                    if name not in started and admitted(kube, ns, name):
                        started[name] = now
        finally:
            kube.delete_namespace(ns)

        burst = {j.id.rpartition("/")[2] for j in rig.cloud.launched}
        real = {
            name: ("cloud", None) if name in burst else ("onprem", started[name] - t0)
            for name, _, _ in TRACE
        }
        sim = {name: (where, start if where == "onprem" else None)
               for name, (where, start) in expected.items()}  # fmt: skip
        assert real == sim
        assert {n for n, (w, _) in sim.items() if w == "cloud"} == {"c", "e"}  # both happen
        for name in burst:
            assert rig.state(name) in (JobState.BURSTING, JobState.RUNNING_CLOUD)


def admitted(kube: Any, namespace: str, name: str) -> bool:
    found = objects.workloads_of(kube, namespace, name)
    return bool(found) and objects.has_condition(found[0], "Admitted")
