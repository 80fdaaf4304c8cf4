"""What a kubectl Job runs, read from its pod template so it can burst (``podtask.py``)."""

from __future__ import annotations

import json

import pytest

from starburst.adapters.kubernetes.conversion import Conventions, job_from_k8s
from starburst.adapters.kubernetes.podtask import cloud_fields
from starburst.core.job import cloud_blocker, job_env
from tests.kube.adapter_support import queued_job


def container(**fields: object) -> dict:
    return {"name": "main", "image": "pytorch/pytorch:2.4", "command": ["python"], **fields}


def test_a_kubectl_job_carries_image_command_args_and_env():
    body = queued_job("q3", gpus=2)
    body["metadata"]["namespace"] = "default"
    body["spec"]["template"]["spec"]["containers"][0].update(
        image="ghcr.io/lab/train:7",
        command=["python", "-m", "train"],
        args=["--lr", "0.1", "--name", "it's mine"],
        workingDir="/work dir",
        env=[{"name": "SEED", "value": "7"}, {"name": "EMPTY"}],
    )
    job = job_from_k8s(body, Conventions())
    assert job.extra["image"] == "ghcr.io/lab/train:7"
    assert job.extra["command"] == (
        "cd '/work dir' && python -m train --lr 0.1 --name 'it'\"'\"'s mine'"
    )
    assert job_env(job) == {"SEED": "7", "EMPTY": ""}
    assert cloud_blocker(job) is None
    assert (job.gpus, job.extra["k8s_name"]) == (2, "q3")


def test_a_template_without_env_sets_none():
    assert cloud_fields({"containers": [container()]}) == {
        "image": "pytorch/pytorch:2.4",
        "command": "python",
    }


@pytest.mark.parametrize(
    ("spec", "why"),
    [
        (
            {"containers": [container(), container(name="sidecar")]},
            "the pod template has 2 containers (main, sidecar); a cloud task runs one",
        ),
        (
            {"containers": [container()], "initContainers": [container(name="init")]},
            "init containers",
        ),
        (
            {"containers": [container(command=None, args=["--fast"])]},
            "sets args but no command: its image's entrypoint is not known",
        ),
        ({"containers": [container(command=None)]}, "sets no command"),
        (
            {
                "containers": [
                    container(
                        env=[
                            {
                                "name": "TOKEN",
                                "valueFrom": {"secretKeyRef": {"name": "s", "key": "t"}},
                            }
                        ]
                    )
                ]
            },
            "env TOKEN of container main comes from secretKeyRef, which exists only in the cluster",
        ),
        ({"containers": [container(envFrom=[{"configMapRef": {"name": "c"}}])]}, "envFrom"),
        (
            {
                "containers": [container()],
                "volumes": [
                    {"name": "scratch", "emptyDir": {}},
                    {"name": "data", "persistentVolumeClaim": {"claimName": "d"}},
                ],
            },
            "volume data (persistentVolumeClaim) exists only in the cluster",
        ),
        ({"containers": [container(image="")]}, "has no image"),
    ],
)
def test_what_a_cloud_cannot_run_is_a_blocker_with_the_reason(spec: dict, why: str):
    fields = cloud_fields(spec)
    assert set(fields) == {"cloud_blocker"}
    assert why in fields["cloud_blocker"]


def test_env_travels_as_the_json_the_backends_read():
    fields = cloud_fields(
        {"containers": [container(env=[{"name": "B", "value": "2"}, {"name": "A", "value": "1"}])]}
    )
    assert json.loads(fields["env"]) == {"A": "1", "B": "2"}
