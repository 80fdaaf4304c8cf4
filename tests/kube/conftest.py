"""Fixtures: a Kubernetes API stand-in per test, and the official client pointed at it.

``kube`` is the running ``KubeApiServer`` (its helpers move pods, add nodes, inject faults);
``api`` is an official ``kubernetes.client.ApiClient`` talking to it over loopback HTTP;
``core``/``batch``/``coordination`` are the typed APIs on that client. Every test gets a fresh
server, and both are shut down cleanly so no socket or thread outlives the test.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from starburst.testing.kubeapi import KubeApiServer


@pytest.fixture
def kube() -> Iterator[KubeApiServer]:
    server = KubeApiServer(history=1000, bookmark_interval=60.0).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def api(kube: KubeApiServer) -> Iterator[client.ApiClient]:
    api_client = kube.api_client()
    try:
        yield api_client
    finally:
        api_client.close()


@pytest.fixture
def core(api: client.ApiClient) -> client.CoreV1Api:
    return client.CoreV1Api(api)


@pytest.fixture
def batch(api: client.ApiClient) -> client.BatchV1Api:
    return client.BatchV1Api(api)


@pytest.fixture
def coordination(api: client.ApiClient) -> client.CoordinationV1Api:
    return client.CoordinationV1Api(api)


def pod_body(name: str | None = None, labels: dict[str, str] | None = None,
             gpus: int = 0, **spec: Any) -> dict[str, Any]:
    resources = {"requests": {"nvidia.com/gpu": str(gpus)}} if gpus else {}
    meta: dict[str, Any] = {"labels": labels or {}}
    if name:
        meta["name"] = name
    return {
        "apiVersion": "v1", "kind": "Pod", "metadata": meta,
        "spec": {"containers": [{"name": "main", "image": "busybox", "resources": resources}],
                 **spec},
    }


def job_body(name: str, gpus: int = 1, parallelism: int = 1, suspend: bool = False,
             labels: dict[str, str] | None = None, **pod_spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {
            "parallelism": parallelism, "completions": parallelism, "suspend": suspend,
            "backoffLimit": 0,
            "template": {"spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "main", "image": "trainer:1", "resources": {
                    "requests": {"nvidia.com/gpu": str(gpus), "cpu": "1", "memory": "1Gi"},
                    "limits": {"nvidia.com/gpu": str(gpus)}}}],
                **pod_spec,
            }},
        },
    }
