"""Kueue itself on the real tier: its manager, built from ``sigs.k8s.io/kueue`` v0.17.0, admits
a Job sent to a LocalQueue (Workload admitted, Job unsuspended) through its webhooks, and
leaves a Job without its queue label alone (``manageJobsWithoutQueueName: false``)."""

from __future__ import annotations

from typing import Any

from tests.kueue import objects
from tests.realkube.jobs import suspended_job
from tests.support.waiting import wait_for


def test_a_job_for_a_local_queue_is_admitted_and_unsuspended(kueue_kube, kueue_queue):
    kube = kueue_kube.kube
    queue = kueue_queue(gpus=2)
    objects.create(kube, objects.kueue_job("train", queue.local_queue, gpus=2), queue.namespace)

    def admitted() -> dict[str, Any] | None:
        workload = objects.evaluated_workload(kube, queue.namespace, "train")
        return workload if workload and objects.has_condition(workload, "Admitted") else None

    workload = wait_for(
        admitted,
        timeout=60,
        what="Kueue to admit the Job's Workload",
    )
    assert workload["status"]["admission"]["clusterQueue"] == queue.cluster_queue
    wait_for(
        lambda: objects.job(kube, queue.namespace, "train")["spec"]["suspend"] is False,
        timeout=60,
        what="Kueue to unsuspend the admitted Job",
    )


def test_a_job_beyond_the_quota_stays_suspended_and_pending(kueue_kube, kueue_queue):
    kube = kueue_kube.kube
    queue = kueue_queue(gpus=1)
    objects.create(kube, objects.kueue_job("big", queue.local_queue, gpus=2), queue.namespace)

    workload = wait_for(
        lambda: objects.evaluated_workload(kube, queue.namespace, "big"),
        timeout=60,
        what="Kueue to evaluate the Job's Workload",
    )
    assert not objects.has_condition(workload, "Admitted")
    assert objects.has_condition(workload, "QuotaReserved") is False
    assert objects.job(kube, queue.namespace, "big")["spec"]["suspend"] is True


def test_a_job_without_the_queue_label_is_not_kueues(kueue_kube, kueue_queue):
    kube = kueue_kube.kube
    queue = kueue_queue()
    # a suspended Job of Starburst's (its label, not Kueue's) next to a Kueue-managed one
    objects.create(kube, suspended_job("mine"), queue.namespace)
    objects.create(kube, objects.kueue_job("theirs", queue.local_queue), queue.namespace)

    wait_for(lambda: objects.workloads_of(kube, queue.namespace, "theirs"), timeout=60)
    assert objects.workloads_of(kube, queue.namespace, "mine") == []
    assert objects.job(kube, queue.namespace, "mine")["spec"]["suspend"] is True
