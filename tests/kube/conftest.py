"""Fixtures: a Kubernetes API stand-in per test, and the official client pointed at it.

``kube`` is the running ``KubeApiServer`` (its helpers move pods, add nodes, inject faults);
``api`` is an official ``kubernetes.client.ApiClient`` talking to it over loopback HTTP;
``core``/``batch``/``coordination`` are the typed APIs on that client. Every test gets a fresh
server, and both are shut down cleanly so no socket or thread outlives the test.
"""

from __future__ import annotations

from collections.abc import Iterator

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
