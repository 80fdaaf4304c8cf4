"""The adapter under the failures the issue names: no Job lost, none started twice.

Scenarios: a watch stream cut mid-way (resume from the last resourceVersion, no relist); an
expired resourceVersion while changes were missed (relist, deletions noticed); the adapter
restarted while Jobs are admitted; a node cordoned while Jobs wait; 5xx answers (backoff).
"""

from __future__ import annotations

from tests.kube.adapter_support import on, queued_job, submitted, waiting_jobs
from tests.support.waiting import wait_for


def informer(cluster, name):
    return next(i for i in cluster.informers if i.name == name)


def test_a_cut_watch_resumes_without_relisting(kube, batch, cluster):
    batch.create_namespaced_job("default", queued_job("a"))
    assert [j.name for j in wait_for(cluster.submissions)] == ["a"]
    jobs = informer(cluster, "jobs")
    wait_for(lambda: kube.cut_watches() >= 3 or None)
    batch.create_namespaced_job("default", queued_job("b"))
    assert [j.name for j in wait_for(cluster.submissions)] == ["b"]
    assert jobs.lists == 1  # resumed from its resourceVersion


def test_an_expired_resource_version_relists_and_notices_missed_changes(kube, batch, cluster):
    kube.add_node("n1", gpus=8)
    batch.create_namespaced_job("default", queued_job("queued-then-deleted"))
    batch.create_namespaced_job("default", queued_job("running-then-deleted"))
    offered = submitted(cluster, 2)
    wait_for(lambda: cluster.snapshot().capacity.nodes)
    cluster.start(offered["running-then-deleted"], on(cluster.snapshot(), ("n1", 1)), "go")
    jobs = informer(cluster, "jobs")
    # The watches break and cannot come back while the cluster changes...
    kube.inject_errors(10_000, code=503, only_watches=True)
    wait_for(lambda: kube.cut_watches() >= 3 or None)
    wait_for(lambda: jobs.errors >= 1)
    batch.delete_namespaced_job("queued-then-deleted", "default")
    batch.delete_namespaced_job("running-then-deleted", "default", propagation_policy="Background")
    batch.create_namespaced_job("default", queued_job("new"))
    kube.compact()  # ...and the history they would resume from is gone.
    kube.faults.clear()
    ends: list = []
    wait_for(lambda: ends.extend(cluster.ended()) or len(ends) == 2)
    # both records end, the queued one too (a deleted Job is never started or burst)
    assert sorted((e.job_id, e.succeeded, e.reason) for e in ends) == [
        ("default/queued-then-deleted", False, "its Kubernetes Job was deleted"),
        ("default/running-then-deleted", False, "its Kubernetes Job was deleted"),
    ]
    assert [j.name for j in wait_for(cluster.submissions)] == ["new"]
    assert jobs.lists == 2
    assert [j.name for j in waiting_jobs(cluster)] == ["new"]


def test_a_restarted_adapter_neither_loses_nor_restarts_admitted_jobs(kube, batch, make_cluster):
    kube.add_node("n1", gpus=8)
    first = make_cluster()
    batch.create_namespaced_job("default", queued_job("running", gpus=6))
    batch.create_namespaced_job("default", queued_job("waiting", gpus=4))
    offered = submitted(first, 2)
    wait_for(lambda: first.snapshot().capacity.nodes)
    first.start(offered["running"], on(first.snapshot(), ("n1", 6)), "go")
    first.close()

    second = make_cluster()
    snap = second.snapshot()
    assert [(r.job.id, [(p.node_name, p.gpus) for p in r.placement]) for r in snap.running] == [
        ("default/running", [("n1", 6)])
    ]
    assert snap.capacity.free_on(0) == 2  # taken once, not once per pod and once per placement
    assert [j.name for j in second.submissions()] == ["waiting"]
    rv = batch.read_namespaced_job("running", "default").metadata.resource_version
    second.start(offered["running"], on(snap, ("n1", 6)), "again")
    assert batch.read_namespaced_job("running", "default").metadata.resource_version == rv
    assert len(kube.pods_of("default", "running")) == 1
    for pod in kube.pods_of("default", "running"):
        kube.set_pod_phase("default", pod["metadata"]["name"], "Succeeded")
    (end,) = wait_for(second.ended)
    assert (end.job_id, end.succeeded) == ("default/running", True)


def test_a_node_cordoned_while_jobs_wait_leaves_the_capacity(kube, core, batch, cluster):
    kube.add_node("n1", gpus=8)
    kube.add_node("n2", gpus=8)
    batch.create_namespaced_job("default", queued_job("waits", gpus=8))
    (job,) = wait_for(cluster.submissions)
    wait_for(lambda: cluster.snapshot().capacity.total_gpus == 16)
    core.patch_node("n1", {"spec": {"unschedulable": True}})
    wait_for(lambda: cluster.snapshot().capacity.total_gpus == 8)
    from starburst.core.capacity import PlacementStrategy

    placement = cluster.snapshot().capacity.place(job, PlacementStrategy.FIRST_FIT)
    assert [p.node_name for p in placement] == ["n2"]
    cluster.start(job, placement, "n1 is cordoned")
    assert [p["spec"]["nodeName"] for p in kube.pods_of("default", "waits")] == ["n2"]


def test_server_errors_are_retried_with_backoff(kube, batch, make_cluster):
    batch.create_namespaced_job("default", queued_job("a"))
    kube.inject_errors(3, code=500)
    cluster = make_cluster()  # syncs despite the failures
    assert sum(i.errors for i in cluster.informers) == 3
    assert [j.name for j in cluster.submissions()] == ["a"]


def test_bookmarks_keep_a_quiet_watch_resumable_after_compaction(kube, core, batch, make_cluster):
    kube.bookmark_interval = 0.05
    cluster = make_cluster()
    jobs = informer(cluster, "jobs")
    for i in range(5):  # traffic the jobs watch does not see, only its bookmarks
        kube.add_node(f"n{i}")
    latest = kube.store.resource_version
    wait_for(lambda: int(jobs.resource_version) >= latest)
    kube.compact()
    wait_for(lambda: kube.cut_watches() >= 3 or None)
    batch.create_namespaced_job("default", queued_job("after"))
    assert [j.name for j in wait_for(cluster.submissions)] == ["after"]
    assert jobs.lists == 1  # resumed from the bookmark: no 410, no relist
