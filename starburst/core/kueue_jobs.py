"""Jobs Starburst follows for Kueue (``controller.kueue_burst``): Kueue decides where they
run on-prem, so the scheduling pass leaves them out of its queue (``is_kueues``). Their
``Job.extra`` keys name the Kueue objects; a Starburst-queued Job never has them."""

from __future__ import annotations

from starburst.core.job import Job

#: ``Job.extra`` keys of a job Starburst follows for Kueue
WORKLOAD = "kueue_workload"
CLUSTER_QUEUE = "kueue_cluster_queue"
LOCAL_QUEUE = "kueue_local_queue"


def is_kueues(job: Job) -> bool:
    """Whether Starburst follows ``job`` for Kueue (Kueue decides where it runs on-prem)."""
    return WORKLOAD in job.extra
