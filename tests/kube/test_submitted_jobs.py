"""Jobs submitted through Starburst (CLI, REST API) on a Kubernetes cluster: starting one
creates its ``batch/v1`` Job, pinned and unsuspended in one create, exactly once."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from kubernetes import client

from starburst.adapters.db.store import SqlStore
from starburst.adapters.kubernetes.conversion import Conventions, job_from_k8s, job_id
from starburst.adapters.kubernetes.manifest import job_manifest, job_name
from starburst.controller.job_output import JobLogs
from starburst.controller.wiring import wire_controller
from starburst.core.capacity import Part
from starburst.core.errors import PermanentError
from starburst.core.job import Job
from starburst.core.lifecycle import JobState
from starburst.core.records import JobSpec
from starburst.settings import Settings
from tests.kube.adapter_support import on
from tests.support.databases import upgrade
from tests.support.waiting import wait_for

DNS_1123 = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def submitted(job_id: str = "5f2c", **kw: object) -> Job:
    extra = {
        "command": "python train.py",
        "image": "pytorch/pytorch:2.4",
        "env": json.dumps({"SEED": "7"}),
    }
    fields: dict = {
        "gpus": 4,
        "pods": 2,
        "cpus": 8.0,
        "memory_mb": 16384.0,
        "gpu_type": "A100",
        "user": "ana",
        "team": "ml",
        "extra": extra,
        **kw,
    }
    return Job(job_id, 0.0, **fields)


def test_the_manifest_carries_the_spec_the_pin_and_the_identity() -> None:
    placement = (Part(0, "n1", 2, 4.0, 8192.0), Part(1, "n2", 2, 4.0, 8192.0))
    body = job_manifest(
        submitted(), placement, "fits on n1×2, n2×2", 100.0, "default", Conventions()
    )
    spec, pod = body["spec"], body["spec"]["template"]["spec"]
    assert (spec["suspend"], spec["parallelism"], spec["completions"]) == (False, 2, 2)
    (container,) = pod["containers"]
    assert container["image"] == "pytorch/pytorch:2.4"
    assert container["command"] == ["/bin/sh", "-c", "python train.py"]
    assert {e["name"]: e["value"] for e in container["env"]} == {
        "SEED": "7",
        "STARBURST_JOB_ID": "5f2c",
    }
    assert container["resources"]["limits"] == {"nvidia.com/gpu": "2"}  # per pod
    assert container["resources"]["requests"] == {
        "nvidia.com/gpu": "2",
        "cpu": "4",
        "memory": "8192Mi",
    }
    terms = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert terms["nodeSelectorTerms"] == [
        {
            "matchExpressions": [
                {"key": "kubernetes.io/hostname", "operator": "In", "values": ["n1", "n2"]}
            ]
        }
    ]
    assert pod["schedulingGates"] == [{"name": "starburst.io/placement"}]
    assert pod["nodeSelector"] == {"nvidia.com/gpu.product": "A100"}
    # read back as the watches will: the same job, already running
    assert job_id(body) == "5f2c"
    back = job_from_k8s(body, Conventions())
    assert (back.gpus, back.pods, back.user, back.team) == (4, 2, "ana", "ml")
    odd = job_manifest(submitted("ns/odd id"), placement, "r", 0.0, "default", Conventions())
    assert "starburst.io/job-id" not in odd["metadata"]["labels"]  # not a label value
    assert job_id(odd) == "ns/odd id"  # the annotation carries it
    for name in (job_name("5f2c"), job_name("ns/Odd ID " * 20), job_name("///")):
        assert DNS_1123.match(name) and len(name) <= 52
    assert job_name("a/b") == job_name("a/b") != job_name("a-b")
    with pytest.raises(PermanentError, match="needs an image"):
        job_manifest(submitted(extra={"command": "x"}), placement, "r", 0.0, "d", Conventions())


def test_starting_a_submission_creates_its_job_once(
    kube, batch: client.BatchV1Api, make_cluster
) -> None:
    for name in ("n1", "n2"):
        kube.add_node(name, gpus=8, labels={"nvidia.com/gpu.product": "A100"})
    cluster = make_cluster()
    wait_for(lambda: len(cluster.snapshot().capacity.nodes) == 2)
    job = submitted(gpus=16)  # two pods of 8: one per node
    placement = on(cluster.snapshot(), ("n1", 8), ("n2", 8))
    cluster.start(job, placement, "fits on n1×8, n2×8")
    cluster.start(job, placement, "again")  # idempotent
    (made,) = batch.list_namespaced_job("default").items
    assert made.metadata.name == job_name("5f2c") and made.spec.suspend is False

    def bound() -> list[str]:
        pods = kube.pods_of("default", made.metadata.name)
        return sorted(p["spec"].get("nodeName") or "" for p in pods)

    assert wait_for(lambda: len(bound()) == 2 and all(bound()) and bound()) == ["n1", "n2"]
    (running,) = cluster.snapshot().running
    assert running.job.id == "5f2c" and [p.node_name for p in running.placement] == ["n1", "n2"]
    assert cluster.snapshot().capacity.free_gpus == 0
    # a new controller life re-issues the start it had recorded: the Job is found, not doubled
    again = make_cluster()
    wait_for(lambda: again.snapshot().running)
    again.start(job, placement, "resumed")
    assert len(batch.list_namespaced_job("default").items) == 1
    with pytest.raises(PermanentError, match="has no command"):
        cluster.start(Job("plain", 0.0, 1), on(cluster.snapshot(), ("n1", 1)), "r")


def test_the_controller_runs_a_cli_submission_on_kubernetes(
    kube, make_cluster, clock, tmp_path: Path
) -> None:
    kube.add_node("gpu-a", gpus=8)
    url = f"sqlite:///{tmp_path / 'sb.db'}"
    upgrade(url)
    store = SqlStore.open(url, clock=clock)
    cluster = make_cluster()
    settings = Settings(database_url=url, state_dir=tmp_path, policy="no-wait", cloud="none")
    controller = wire_controller(settings, store, cluster, None, clock=clock)
    try:
        ok = store.submissions.submit(
            JobSpec(gpus=2, user="ana", image="python:3.11", command="python -c 'print(42)'")
        ).job.id
        no_image = store.submissions.submit(JobSpec(gpus=1, user="ana", command="true")).job.id
        report = controller.run_pass()
        assert report is not None and report.started == [ok]
        assert store.jobs.get(ok).state is JobState.RUNNING_ONPREM
        failed = store.jobs.get(no_image)
        assert failed.state is JobState.FAILED
        assert "needs an image" in store.jobs.events(no_image)[-1].reason
        name = job_name(ok)
        (pod,) = wait_for(lambda: kube.pods_of("default", name))
        kube.set_pod_phase("default", pod["metadata"]["name"], "Running")
        kube.write_pod_log("default", pod["metadata"]["name"], "42\n")
        logs = JobLogs(cluster, None).read(store.jobs.get(ok), [], None)
        assert logs.endswith("42\n")
        kube.set_pod_phase("default", pod["metadata"]["name"], "Succeeded")
        clock.advance(30)
        wait_for(
            lambda: (
                controller.run_pass() is not None and store.jobs.get(ok).state is JobState.SUCCEEDED
            )
        )
    finally:
        controller.stop()
        store.close()
