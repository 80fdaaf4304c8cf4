"""``KubernetesCluster`` on the stand-in: submissions, capacity, start, burst, cancel, endings.

Every test drives the adapter through the official client against the stand-in, and checks
the effect where Kubernetes shows it (the Job, its Pods, Events) as well as through the port.
"""

from __future__ import annotations

import pytest

from starburst.core.capacity import PlacementStrategy
from starburst.core.errors import PermanentError, TransientError
from tests.kube.adapter_support import on, queued_job, waiting_jobs
from tests.kubeapi import Taint
from tests.support.waiting import wait_for


def test_a_suspended_labelled_job_becomes_a_submission(kube, batch, cluster, clock):
    batch.create_namespaced_job(
        "default",
        queued_job(
            "train",
            gpus=2,
            pods=4,
            gpu_type="A100",
            cpu="4",
            memory="16Gi",
            labels={"starburst.io/user": "ada", "starburst.io/team": "vision"},
        ),
    )
    (job,) = wait_for(cluster.submissions)
    assert job.id == "default/train" and job.name == "train"
    assert (job.gpus, job.pods, job.cpus, job.memory_mb) == (8, 4, 16.0, 4 * 16 * 1024.0)
    # the team label is honoured only where an admin allowed it (tests/security/test_kube_edges)
    assert job.gpu_type == "A100" and job.user == "ada" and job.team == "default"
    assert job.submit_time > 0
    assert cluster.submissions() == []  # each Job is offered once


def test_team_defaults_to_the_namespace_and_the_id_label_wins(core, batch, cluster):
    core.create_namespace({"metadata": {"name": "nlp"}})
    batch.create_namespaced_job("nlp", queued_job("j", labels={"starburst.io/job-id": "sb-42"}))
    (job,) = wait_for(cluster.submissions)
    assert (job.id, job.team) == ("sb-42", "nlp")


def test_unlabelled_or_unsuspended_jobs_are_not_submissions(kube, batch, cluster):
    plain = queued_job("plain")
    del plain["metadata"]["labels"]["starburst.io/queue"]
    batch.create_namespaced_job("default", plain)
    running = queued_job("already")
    running["spec"]["suspend"] = False
    batch.create_namespaced_job("default", running)
    batch.create_namespaced_job("default", queued_job("marker"))
    assert [j.name for j in wait_for(cluster.submissions)] == ["marker"]
    assert [r.job.name for r in cluster.snapshot().running] == ["already"]


def test_capacity_is_allocatable_minus_bound_unfinished_pods(kube, core, cluster):
    kube.add_node("n1", gpus=8)
    kube.add_node("n2", gpus=4)
    body = queued_job("other")["spec"]["template"]
    core.create_namespaced_pod("default", {"metadata": {"name": "other"}, **body})
    wait_for(lambda: cluster.snapshot().capacity.free_gpus == 11)
    snap = cluster.snapshot()
    assert [n.name for n in snap.capacity.nodes] == ["n1", "n2"]
    assert (snap.capacity.free_on(0), snap.capacity.free_on(1)) == (7, 4)
    kube.set_pod_phase("default", "other", "Succeeded")
    wait_for(lambda: cluster.snapshot().capacity.free_gpus == 12)


def test_cordoned_tainted_and_not_ready_nodes_are_not_schedulable(kube, core, cluster):
    kube.add_node("a", gpus=8)
    kube.add_node("b", gpus=8, taints=[Taint("maintenance")])
    kube.add_node("c", gpus=8, ready=False)
    kube.add_node("d", gpus=8, taints=[Taint("nvidia.com/gpu")])  # the usual GPU taint
    wait_for(lambda: len(cluster.snapshot().capacity.nodes) == 4)
    assert cluster.snapshot().capacity.total_gpus == 16
    core.patch_node("a", {"spec": {"unschedulable": True}})
    wait_for(lambda: cluster.snapshot().capacity.total_gpus == 8)
    flags = {n.name: n.schedulable for n in cluster.snapshot().capacity.nodes}
    assert flags == {"a": False, "b": False, "c": False, "d": True}


def test_gpu_type_comes_from_the_node_label(kube, cluster):
    kube.add_node("n1", gpus=8, labels={"nvidia.com/gpu.product": "H100"})
    wait_for(lambda: cluster.snapshot().capacity.nodes)
    assert cluster.snapshot().capacity.nodes[0].gpu_type == "H100"


def started_pods(core, name):
    return core.list_namespaced_pod("default", label_selector=f"job-name={name}").items


def test_start_pins_the_pods_and_unsuspends_in_one_patch(kube, core, batch, cluster):
    for name in ("n1", "n2", "n3"):
        kube.add_node(name, gpus=8)
    batch.create_namespaced_job("default", queued_job("train", gpus=8, pods=2))
    (job,) = wait_for(cluster.submissions)
    wait_for(lambda: len(cluster.snapshot().capacity.nodes) == 3)
    before = batch.read_namespaced_job("train", "default").metadata.resource_version
    cluster.start(job, on(cluster.snapshot(), ("n2", 8), ("n3", 8)), "fits now")
    stored = batch.read_namespaced_job("train", "default")
    assert int(stored.metadata.resource_version) > int(before)
    assert stored.spec.suspend is False
    assert stored.metadata.annotations["starburst.io/placement"] == "n2×8, n3×8"
    assert stored.metadata.annotations["starburst.io/state"] == "running"
    assert wait_for(
        lambda: sorted(p.spec.node_name or "-" for p in started_pods(core, "train")) == ["n2", "n3"]
    )  # released from the gate one per node (pinning.py)
    events = core.list_namespaced_event("default", field_selector="involvedObject.name=train")
    assert [(e.reason, e.message) for e in events.items] == [("Started", "fits now")]


def test_start_takes_the_gpus_at_once_and_is_idempotent(kube, batch, cluster):
    kube.add_node("n1", gpus=8)
    batch.create_namespaced_job("default", queued_job("a", gpus=6))
    (job,) = wait_for(cluster.submissions)
    wait_for(lambda: cluster.snapshot().capacity.nodes)
    placement = on(cluster.snapshot(), ("n1", 6))
    cluster.start(job, placement, "first")
    snap = cluster.snapshot()
    assert snap.capacity.free_on(0) == 2  # before any watch event arrived
    assert [(r.job.id, r.placement[0].gpus) for r in snap.running] == [("default/a", 6)]
    rv = batch.read_namespaced_job("a", "default").metadata.resource_version
    cluster.start(job, placement, "again")
    assert batch.read_namespaced_job("a", "default").metadata.resource_version == rv
    wait_for(lambda: cluster.snapshot().capacity.free_on(0) == 2)  # pods do not count twice


def test_start_of_a_job_changed_meanwhile_is_transient(kube, batch, make_cluster):
    kube.add_node("n1", gpus=8)
    batch.create_namespaced_job("default", queued_job("a"))
    cluster = make_cluster()
    (job,) = wait_for(cluster.submissions)
    cluster.close()  # freeze its view, then change the Job behind its back
    batch.patch_namespaced_job("a", "default", {"spec": {"parallelism": 2, "completions": 1}})
    with pytest.raises(TransientError):
        cluster.start(job, on(cluster.snapshot(), ("n1", 1)), "stale view")
    assert batch.read_namespaced_job("a", "default").spec.suspend is True


def test_start_of_a_job_another_controller_started_is_a_no_op(kube, batch, make_cluster):
    kube.add_node("n1", gpus=8)
    batch.create_namespaced_job("default", queued_job("a"))
    cluster = make_cluster()
    (job,) = wait_for(cluster.submissions)
    cluster.close()
    batch.patch_namespaced_job("a", "default", {"spec": {"suspend": False}})
    cluster.start(job, on(cluster.snapshot(), ("n1", 1)), "late")
    stored = batch.read_namespaced_job("a", "default")
    assert "starburst.io/placement" not in (stored.metadata.annotations or {})
    assert [r.job.id for r in cluster.snapshot().running] == ["default/a"]


def test_start_retries_a_conflict_that_changed_nothing_it_decided_on(kube, batch, make_cluster):
    kube.add_node("n1", gpus=8)
    batch.create_namespaced_job("default", queued_job("a"))
    cluster = make_cluster()
    (job,) = wait_for(cluster.submissions)
    cluster.close()
    batch.patch_namespaced_job("a", "default", {"metadata": {"labels": {"touched": "1"}}})
    cluster.start(job, on(cluster.snapshot(), ("n1", 1)), "still fits")
    stored = batch.read_namespaced_job("a", "default")
    assert stored.spec.suspend is False and stored.metadata.labels["touched"] == "1"


def test_a_placement_that_splits_a_pod_is_refused(kube, batch, cluster):
    for name in ("n1", "n2"):
        kube.add_node(name, gpus=8)
    batch.create_namespaced_job("default", queued_job("odd", gpus=3, pods=3))
    (job,) = wait_for(cluster.submissions)
    wait_for(lambda: len(cluster.snapshot().capacity.nodes) == 2)
    with pytest.raises(PermanentError, match="whole pods"):
        cluster.start(job, on(cluster.snapshot(), ("n1", 8), ("n2", 1)), "the core's split")
    assert batch.read_namespaced_job("odd", "default").spec.suspend is True


def test_start_of_an_unknown_job_is_permanent(kube, cluster):
    from starburst.core.job import Job

    with pytest.raises(PermanentError):
        cluster.start(Job("default/ghost", 0.0, 1), (), "nothing")


def test_completion_is_reported_once_and_frees_the_gpus(kube, batch, cluster):
    kube.add_node("n1", gpus=8)
    batch.create_namespaced_job("default", queued_job("a", gpus=4, pods=2))
    (job,) = wait_for(cluster.submissions)
    wait_for(lambda: cluster.snapshot().capacity.nodes)
    cluster.start(job, on(cluster.snapshot(), ("n1", 8)), "go")
    for pod in kube.pods_of("default", "a"):
        kube.set_pod_phase("default", pod["metadata"]["name"], "Succeeded")
    (end,) = wait_for(cluster.ended)
    assert (end.job_id, end.succeeded) == ("default/a", True)
    wait_for(lambda: cluster.snapshot().capacity.free_gpus == 8)
    assert cluster.snapshot().running == []
    assert cluster.ended() == []


def test_a_failing_pod_ends_the_job_as_failed(kube, batch, cluster):
    kube.add_node("n1", gpus=8)
    batch.create_namespaced_job("default", queued_job("a"))
    (job,) = wait_for(cluster.submissions)
    wait_for(lambda: cluster.snapshot().capacity.nodes)
    cluster.start(job, on(cluster.snapshot(), ("n1", 1)), "go")
    (pod,) = kube.pods_of("default", "a")
    kube.set_pod_phase("default", pod["metadata"]["name"], "Failed", exit_code=1)
    (end,) = wait_for(cluster.ended)
    assert not end.succeeded and "BackoffLimitExceeded" in end.reason


def test_burst_keeps_the_job_suspended_and_says_where(kube, core, batch, cluster):
    batch.create_namespaced_job("default", queued_job("a", gpus=8))
    (job,) = wait_for(cluster.submissions)
    cluster.burst(
        job.id,
        "aws:us-east-1",
        "waited 31m of a 30m budget",
        cloud_job="sky-7",
        price_per_hour=32.77,
    )
    stored = batch.read_namespaced_job("a", "default")
    assert stored.spec.suspend is True
    notes = stored.metadata.annotations
    assert notes["starburst.io/state"] == "burst"
    assert notes["starburst.io/burst-to"] == "aws:us-east-1"
    assert notes["starburst.io/price-per-hour"] == "32.77"
    events = core.list_namespaced_event("default", field_selector="reason=Burst").items
    assert [e.message for e in events] == ["waited 31m of a 30m budget"]
    assert wait_for(lambda: waiting_jobs(cluster) == [])  # the watch sees it burst


def test_waiting_is_visible_on_the_job(kube, core, batch, cluster):
    batch.create_namespaced_job("default", queued_job("a"))
    (job,) = wait_for(cluster.submissions)
    cluster.note_waiting(job.id, 2400, 3600, "waiting 12m of 40m budget")
    notes = batch.read_namespaced_job("a", "default").metadata.annotations
    assert (notes["starburst.io/wait-budget"], notes["starburst.io/predicted-runtime"]) == (
        "2400",
        "3600",
    )
    events = core.list_namespaced_event("default", field_selector="reason=Waiting").items
    assert [e.message for e in events] == ["waiting 12m of 40m budget"]
    assert [j.id for j in waiting_jobs(cluster)] == [job.id]  # still waiting


def test_cancel_suspends_a_running_job_and_frees_its_gpus(kube, batch, cluster):
    kube.add_node("n1", gpus=8)
    batch.create_namespaced_job("default", queued_job("a", gpus=8))
    (job,) = wait_for(cluster.submissions)
    wait_for(lambda: cluster.snapshot().capacity.nodes)
    cluster.start(job, on(cluster.snapshot(), ("n1", 8)), "go")
    assert kube.pods_of("default", "a")
    cluster.cancel(job.id)
    assert batch.read_namespaced_job("a", "default").spec.suspend is True
    assert kube.pods_of("default", "a") == []
    assert cluster.snapshot().running == []
    wait_for(lambda: cluster.snapshot().capacity.free_gpus == 8)
    assert cluster.ended() == []


def test_a_job_deleted_while_running_ends_failed(kube, batch, cluster):
    kube.add_node("n1", gpus=8)
    batch.create_namespaced_job("default", queued_job("a"))
    (job,) = wait_for(cluster.submissions)
    wait_for(lambda: cluster.snapshot().capacity.nodes)
    cluster.start(job, on(cluster.snapshot(), ("n1", 1)), "go")
    batch.delete_namespaced_job("a", "default", propagation_policy="Background")
    (end,) = wait_for(cluster.ended)
    assert (end.succeeded, end.reason) == (False, "its Kubernetes Job was deleted")


def test_the_core_places_on_the_adapters_snapshot(kube, batch, cluster):
    for name in ("n1", "n2"):
        kube.add_node(name, gpus=8)
    batch.create_namespaced_job("default", queued_job("big", gpus=8, pods=2))
    (job,) = wait_for(cluster.submissions)
    wait_for(lambda: cluster.snapshot().capacity.total_gpus == 16)
    placement = cluster.snapshot().capacity.place(job, PlacementStrategy.FIRST_FIT)
    assert placement is not None
    cluster.start(job, placement, "gang of two")
    # the pods are gated, then released onto their nodes by the adapter's pod watch
    assert wait_for(
        lambda: (
            sorted(p["spec"].get("nodeName") or "-" for p in kube.pods_of("default", "big"))
            == ["n1", "n2"]
        )
    )
    assert cluster.snapshot().capacity.free_gpus == 0
