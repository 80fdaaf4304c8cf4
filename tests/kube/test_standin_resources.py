"""Nodes, Events, Leases, quantities, discovery, fault injection and the stand-alone process."""

from __future__ import annotations

import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest
import yaml
from kubernetes import client, config

from tests.kube.builders import call
from tests.kubeapi import Taint
from tests.kubeapi.quantity import parse_quantity

ROOT = Path(__file__).resolve().parents[2]


def test_nodes_carry_allocatable_gpus_labels_taints_and_readiness(kube, core):
    kube.add_node(
        "n1",
        gpus=8,
        cpu="96",
        memory="768Gi",
        labels={"gpu": "a100"},
        taints=[Taint("dedicated", value="ml")],
        ready=False,
    )
    node = core.read_node("n1")
    assert node.status.allocatable["nvidia.com/gpu"] == "8"
    assert node.status.allocatable["cpu"] == "96" and node.status.allocatable["memory"] == "768Gi"
    assert node.metadata.labels["gpu"] == "a100"
    assert node.metadata.labels["kubernetes.io/hostname"] == "n1"
    assert [(t.key, t.value, t.effect) for t in node.spec.taints] == [
        ("dedicated", "ml", "NoSchedule")
    ]
    ready = next(c for c in node.status.conditions if c.type == "Ready")
    assert ready.status == "False"


def test_cordoning_is_a_patch_of_spec_unschedulable(kube, core):
    kube.add_node("n1")
    core.patch_node("n1", {"spec": {"unschedulable": True}})
    assert core.read_node("n1").spec.unschedulable is True


def test_nodes_are_cluster_scoped(core):
    node = core.create_node(
        {"metadata": {"name": "n9"}, "status": {"allocatable": {"nvidia.com/gpu": "4"}}}
    )
    assert node.metadata.namespace is None
    assert node.status.allocatable == {"nvidia.com/gpu": "4"}  # kubelets register with status


def test_core_v1_events(core):
    event = core.create_namespaced_event(
        "default",
        {
            "metadata": {"name": "job-a.1"},
            "involvedObject": {"kind": "Job", "name": "job-a", "namespace": "default"},
            "reason": "Burst",
            "message": "burst to aws:us-east-1 (A100:8, $32.77/h)",
            "type": "Normal",
            "source": {"component": "starburst"},
            "count": 1,
        },
    )
    assert event.metadata.uid
    got = core.list_namespaced_event("default", field_selector="reason=Burst").items
    assert [e.message for e in got] == ["burst to aws:us-east-1 (A100:8, $32.77/h)"]


def test_events_k8s_io_v1_events(api):
    events = client.EventsV1Api(api)
    events.create_namespaced_event(
        "default",
        {
            "metadata": {"name": "e1"},
            "eventTime": "2026-01-01T00:00:00.000000Z",
            "reportingController": "starburst.io/controller",
            "reportingInstance": "starburst-0",
            "action": "Schedule",
            "reason": "Started",
            "type": "Normal",
            "note": "started on n1",
            "regarding": {"kind": "Job", "name": "job-a", "namespace": "default"},
        },
    )
    found = events.list_namespaced_event("default", field_selector="regarding.name=job-a")
    assert [e.note for e in found.items] == ["started on n1"]


def test_leases_for_leader_election(coordination):
    lease = coordination.create_namespaced_lease(
        "default",
        {
            "metadata": {"name": "starburst-leader"},
            "spec": {"holderIdentity": "replica-a", "leaseDurationSeconds": 15},
        },
    )
    lease.spec.holder_identity = "replica-b"
    coordination.replace_namespaced_lease("starburst-leader", "default", lease)
    stale = lease
    stale.spec.holder_identity = "replica-c"
    with pytest.raises(client.ApiException) as err:  # the loser of a race learns it
        coordination.replace_namespaced_lease("starburst-leader", "default", stale)
    assert err.value.status == 409
    got = coordination.read_namespaced_lease("starburst-leader", "default")
    assert got.spec.holder_identity == "replica-b"


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("2", Decimal(2)),
        ("500m", Decimal("0.5")),
        ("16Gi", Decimal(16 * 1024**3)),
        ("1k", Decimal(1000)),
        ("1.5", Decimal("1.5")),
        ("1e3", Decimal(1000)),
        ("128974848", Decimal(128974848)),
        ("129M", Decimal(129_000_000)),
        ("123Mi", Decimal(123 * 1024**2)),
        ("100u", Decimal("0.0001")),
    ],
)
def test_quantities(text, value):
    assert parse_quantity(text) == value


@pytest.mark.parametrize("text", ["", "Gi", "1.2.3", "5 Gi", "1x"])
def test_not_quantities(text):
    with pytest.raises(ValueError):
        parse_quantity(text)


def test_discovery_documents(api):
    assert "v1" in call(api, "GET", "/api")["versions"]
    groups = {g["name"] for g in call(api, "GET", "/apis")["groups"]}
    assert {"batch", "coordination.k8s.io", "events.k8s.io"} <= groups
    names = {r["name"] for r in call(api, "GET", "/apis/batch/v1")["resources"]}
    assert names == {"jobs", "jobs/status"}
    assert client.VersionApi(api).get_code().major == "1"


def test_an_unknown_path_is_404(api):
    with pytest.raises(client.ApiException) as err:
        call(api, "GET", "/apis/apps/v1/namespaces/default/deployments")
    assert err.value.status == 404


def test_injected_429_carries_retry_after(kube, core):
    kube.inject_errors(1, code=429, retry_after=3)
    with pytest.raises(client.ApiException) as err:  # a POST is not retried by urllib3
        core.create_namespace({"metadata": {"name": "x"}})
    assert err.value.status == 429 and err.value.headers["Retry-After"] == "3"
    assert core.create_namespace({"metadata": {"name": "x"}})  # only that request failed


def test_the_official_client_retries_a_get_after_429_with_retry_after(kube, core):
    kube.inject_errors(1, code=429, retry_after=0)
    assert core.list_namespace().items  # urllib3's default Retry honours Retry-After
    assert kube.faults.take() is None


def test_injected_5xx(kube, core):
    kube.inject_errors(2, code=503)
    for _ in range(2):
        with pytest.raises(client.ApiException) as err:
            core.list_namespace()
        assert err.value.status == 503
    assert core.list_namespace().items


def test_runs_as_a_separate_process_with_a_kubeconfig(tmp_path):
    path = tmp_path / "kubeconfig"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.kubeapi",
            "--kubeconfig",
            str(path),
            "--gpu-nodes",
            "2",
        ],
        cwd=ROOT,  # ``tests`` is importable from the checkout's root
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        printed = yaml.safe_load(_read_config(proc.stdout))
        assert printed["clusters"][0]["cluster"]["server"].startswith("http://127.0.0.1:")
        api = config.new_client_from_config(config_file=str(path))
        try:
            nodes = client.CoreV1Api(api).list_node().items
            assert [n.status.allocatable["nvidia.com/gpu"] for n in nodes] == ["8", "8"]
        finally:
            api.close()
    finally:
        proc.terminate()
        assert proc.wait(timeout=10) == 0
        proc.stdout.close()


def _read_config(stream) -> str:
    lines = []
    while True:
        line = stream.readline()
        lines.append(line)
        if not line or line.startswith("users:") or line.strip().startswith("token:"):
            return "".join(lines)
