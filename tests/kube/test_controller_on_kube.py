"""The controller end to end on Kubernetes: suspended Jobs in, pinned and unsuspended Jobs out.

The real controller (``Controller.run_pass``: leadership, ingestion, admission, the core's
pass, writes) runs against the adapter on the API stand-in, with the SQL store on SQLite and
the simulator's cloud as the cloud edge. Jobs are created with the official client exactly as
users would (suspended, labelled ``starburst.io/queue``).
"""

from __future__ import annotations

from pathlib import Path

from kubernetes import client

from starburst.adapters.db.store import SqlStore
from starburst.controller.wiring import wire_controller
from starburst.core.lifecycle import JobState
from starburst.settings import Settings
from starburst.sim.cloud import SimCloud
from tests.kube.adapter_support import queued_job, waiting_jobs
from tests.support.databases import upgrade
from tests.support.waiting import wait_for


def test_the_controller_admits_starts_and_bursts_kubernetes_jobs(
    kube, make_cluster, clock, batch: client.BatchV1Api, tmp_path: Path
) -> None:
    kube.add_node("gpu-a", gpus=8)
    kube.add_node("gpu-b", gpus=8)
    url = f"sqlite:///{tmp_path / 'sb.db'}"
    upgrade(url)
    store = SqlStore.open(url, clock=clock)
    cluster = make_cluster()
    settings = Settings(database_url=url, state_dir=tmp_path, policy="no-wait", cloud="none")
    controller = wire_controller(settings, store, cluster, SimCloud(clock, 2.5), clock=clock)
    try:
        batch.create_namespaced_job("default", queued_job("alpha", gpus=8, pods=2))
        batch.create_namespaced_job("default", queued_job("beta", gpus=4))
        wait_for(lambda: len(waiting_jobs(cluster)) == 2)
        report = controller.run_pass()
        assert report is not None
        assert report.started == ["default/alpha"]  # 2 pods of 8 GPUs: one on each node
        assert report.burst == ["default/beta"]  # no room left and no budget: burst

        alpha = batch.read_namespaced_job("alpha", "default")
        assert alpha.spec.suspend is False
        affinity = alpha.spec.template.spec.affinity.node_affinity
        terms = affinity.required_during_scheduling_ignored_during_execution.node_selector_terms
        pinned = {
            v
            for t in terms
            for e in t.match_expressions or []
            if e.key == "kubernetes.io/hostname"
            for v in e.values or []
        }
        assert pinned == {"gpu-a", "gpu-b"}
        assert not any(t.match_fields for t in terms)  # a real server allows one value only
        wait_for(
            lambda: (
                sorted(p["spec"].get("nodeName") or "-" for p in kube.pods_of("default", "alpha"))
                == ["gpu-a", "gpu-b"]
            )
        )
        beta = wait_for(
            lambda: (
                (batch.read_namespaced_job("beta", "default").metadata.annotations or {}).get(
                    "starburst.io/burst-to"
                )
                and batch.read_namespaced_job("beta", "default")
            )
        )
        assert beta.spec.suspend is True
        assert store.jobs.get("default/beta").state is JobState.BURSTING
        budget = (alpha.metadata.annotations or {}).get("starburst.io/wait-budget")
        assert budget == "0"

        for pod in kube.pods_of("default", "alpha"):
            kube.set_pod_phase("default", pod["metadata"]["name"], "Succeeded")
        clock.advance(60)
        wait_for(
            lambda: (
                controller.run_pass() is not None
                and store.jobs.get("default/alpha").state is JobState.SUCCEEDED
            )
        )
        reasons = [e.reason for e in store.jobs.events("default/alpha")]
        assert any(r.startswith("fits on gpu-a×8, gpu-b×8") for r in reasons)

        # 3 pods of 3 GPUs start as whole pods, [6, 3], not as [8, 1] (which no node could run)
        batch.create_namespaced_job("default", queued_job("trio", gpus=3, pods=3))
        # one 16-GPU pod fits no 8-GPU node: it never fits on-prem, so it bursts, with why
        batch.create_namespaced_job("default", queued_job("mono", gpus=16))
        wait_for(lambda: len(waiting_jobs(cluster)) == 2)
        clock.advance(1)
        report = controller.run_pass()
        assert report is not None and report.started == ["default/trio"]
        assert report.burst == ["default/mono"]
        assert store.jobs.get("default/trio").state is JobState.RUNNING_ONPREM
        assert any(
            "fits on gpu-a×6, gpu-b×3" in e.reason for e in store.jobs.events("default/trio")
        )

        # unequal counts: the adapter releases each gated pod onto a node with room left
        def placed() -> list[str]:
            return sorted(p["spec"].get("nodeName") or "-" for p in kube.pods_of("default", "trio"))

        assert wait_for(lambda: placed() == ["gpu-a", "gpu-a", "gpu-b"])
        assert store.jobs.get("default/mono").state is JobState.BURSTING
        print([e.reason for e in store.jobs.events("default/mono")])
    finally:
        controller.stop()
        store.close()


def test_a_job_arriving_or_ending_wakes_the_controller_at_once(
    kube, make_cluster, batch: client.BatchV1Api, tmp_path: Path
) -> None:
    from starburst.wallclock import WallClock

    kube.add_node("gpu-a", gpus=8)
    url = f"sqlite:///{tmp_path / 'sb.db'}"
    upgrade(url)
    clock = WallClock()
    store = SqlStore.open(url, clock=clock)
    cluster = make_cluster()
    # passes every 10 minutes: anything quicker than that was woken by the watch
    settings = Settings(
        database_url=url, state_dir=tmp_path, policy="no-wait", cloud="none", pass_interval_s=600
    )
    controller = wire_controller(settings, store, cluster, None, clock=clock)
    controller.start()
    try:
        wait_for(lambda: controller.health().detail == "leading")
        batch.create_namespaced_job("default", queued_job("prompt", gpus=2))
        wait_for(lambda: store.jobs.count(JobState.RUNNING_ONPREM) == 1, timeout=5)
        for pod in wait_for(lambda: kube.pods_of("default", "prompt")):
            kube.set_pod_phase("default", pod["metadata"]["name"], "Succeeded")
        wait_for(lambda: store.jobs.count(JobState.SUCCEEDED) == 1, timeout=5)
    finally:
        controller.stop()
        store.close()
