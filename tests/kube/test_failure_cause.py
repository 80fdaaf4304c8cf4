"""A Job Starburst started that fails on Kubernetes ends with the cause its pods tell, as on
the other backends: the container's exit code and the last lines of its output
(``failures.py``), and a hit ``activeDeadlineSeconds`` reads "time limit 2h reached", not
"DeadlineExceeded". On the API stand-in, through the real client."""

from __future__ import annotations

from datetime import UTC, datetime

from starburst.core.failure import cause_of, exit_code_in, tail_of
from tests.kube.adapter_support import on, queued_job
from tests.support.waiting import wait_for


def started(kube, batch, cluster, body):  # type: ignore[no-untyped-def]
    """Create ``body``, start it on n1 through the adapter; its one pod's name."""
    kube.add_node("n1", gpus=8)
    batch.create_namespaced_job("default", body)
    (job,) = wait_for(cluster.submissions)
    wait_for(lambda: cluster.snapshot().capacity.nodes)
    cluster.start(job, on(cluster.snapshot(), ("n1", 1)), "go")
    (pod,) = wait_for(lambda: kube.pods_of("default", body["metadata"]["name"]))
    name = pod["metadata"]["name"]
    kube.set_pod_phase("default", name, "Running")
    return name


def test_a_failed_pod_gives_its_exit_code_and_last_output(kube, batch, cluster) -> None:  # type: ignore[no-untyped-def]
    pod = started(kube, batch, cluster, queued_job("train"))
    lines = "".join(f"step {i}\n" for i in range(1, 16)) + "RuntimeError: CUDA out of memory\n"
    kube.write_pod_log("default", pod, lines)
    kube.set_pod_phase("default", pod, "Failed", exit_code=7)
    (end,) = wait_for(cluster.ended)
    assert not end.succeeded and exit_code_in(end.reason) == 7
    assert cause_of(end.reason) == f"exit code 7 in pod {pod} (BackoffLimitExceeded)"
    tail = tail_of(end.reason).splitlines()
    assert tail[-1] == "RuntimeError: CUDA out of memory" and tail[0] == "step 7"  # last 10
    assert cluster.ended() == []  # reported once


def test_a_hit_deadline_reads_as_the_time_limit_it_was(kube, batch, cluster) -> None:  # type: ignore[no-untyped-def]
    body = queued_job("slow")
    body["spec"]["activeDeadlineSeconds"] = 7200
    pod = started(kube, batch, cluster, body)
    kube.write_pod_log("default", pod, "epoch 1\nepoch 2\n")
    fail(batch, "slow", "DeadlineExceeded", "Job was active longer than specified deadline")
    (end,) = wait_for(cluster.ended)
    assert cause_of(end.reason) == "time limit 2h reached: killed"
    assert tail_of(end.reason) == "epoch 1\nepoch 2"
    assert "DeadlineExceeded" not in end.reason


def test_a_pod_that_tells_nothing_leaves_the_jobs_own_reason(kube, batch, core, cluster) -> None:  # type: ignore[no-untyped-def]
    pod = started(kube, batch, cluster, queued_job("gone"))
    core.delete_namespaced_pod(pod, "default")  # the Job controller makes a new, Pending one
    fail(batch, "gone", "BackoffLimitExceeded", "Job has reached the specified backoff limit")
    (end,) = wait_for(cluster.ended)
    assert end.reason == "BackoffLimitExceeded: Job has reached the specified backoff limit"
    assert exit_code_in(end.reason) is None


def fail(batch, name: str, reason: str, message: str) -> None:  # type: ignore[no-untyped-def]
    """What the Job controller writes when it gives up on a Job."""
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    condition = {
        "type": "Failed",
        "status": "True",
        "reason": reason,
        "message": message,
        "lastTransitionTime": now,
    }
    batch.patch_namespaced_job_status(name, "default", {"status": {"conditions": [condition]}})
