"""``kubectl`` against the stand-in (skipped when no kubectl binary is on PATH).

``kubectl apply`` validates against the server's OpenAPI documents, which the stand-in does
not serve, so it runs with ``--validate=false``; everything else is plain kubectl.
"""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from tests.kubeapi.server import NODES

KUBECTL = shutil.which("kubectl")
pytestmark = pytest.mark.skipif(KUBECTL is None, reason="no kubectl on PATH")

JOB = """
apiVersion: batch/v1
kind: Job
metadata:
  name: train
  labels: {starburst.io/queue: default}
spec:
  suspend: true
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: trainer:1
        resources: {limits: {nvidia.com/gpu: "2"}}
"""


def test_kubectl_apply_get_patch_cordon_delete(kube, tmp_path):
    config = kube.write_kubeconfig(tmp_path / "kubeconfig")
    kube.add_node("n1", gpus=8)

    def kubectl(*args: str, stdin: str | None = None) -> str:
        command = [
            KUBECTL,
            "--kubeconfig",
            str(config),
            "--cache-dir",
            str(tmp_path / "cache"),
            *args,
        ]
        done = subprocess.run(
            command, input=stdin, capture_output=True, text=True, timeout=30, check=False
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    assert "job.batch/train created" in kubectl("apply", "--validate=false", "-f", "-", stdin=JOB)
    job = json.loads(kubectl("get", "job", "train", "-o", "json"))
    assert job["spec"]["suspend"] is True and job["metadata"]["uid"]
    kubectl("patch", "job", "train", "-p", '{"spec":{"suspend":false}}')
    pods = json.loads(kubectl("get", "pods", "-l", "job-name=train", "-o", "json"))["items"]
    assert [p["spec"]["nodeName"] for p in pods] == ["n1"]
    kubectl("cordon", "n1")
    assert kube.store.find(NODES, "", "n1")["spec"]["unschedulable"] is True
    kubectl("delete", "job", "train", "--cascade=background")
    assert json.loads(kubectl("get", "pods", "-o", "json"))["items"] == []
