"""Fixtures: a Kubernetes API stand-in per test, and the official client pointed at it.

``kube`` is the running ``KubeApiServer`` (its helpers move pods, add nodes, inject faults);
``api`` is an official ``kubernetes.client.ApiClient`` talking to it over loopback HTTP;
``core``/``batch``/``coordination`` are the typed APIs on that client. Every test gets a fresh
server, and both are shut down cleanly so no socket or thread outlives the test.
"""

from __future__ import annotations

import pytest
from kubernetes import client

from tests.kubeapi import KubeApiServer
from tests.kubeapi import fixtures as standin

kube = standin.kube
kube_api = standin.kube_api


@pytest.fixture
def api(kube_api: client.ApiClient) -> client.ApiClient:
    return kube_api


@pytest.fixture
def core(api: client.ApiClient) -> client.CoreV1Api:
    return client.CoreV1Api(api)


@pytest.fixture
def batch(api: client.ApiClient) -> client.BatchV1Api:
    return client.BatchV1Api(api)


@pytest.fixture
def coordination(api: client.ApiClient) -> client.CoordinationV1Api:
    return client.CoordinationV1Api(api)


@pytest.fixture
def clock():
    from tests.support.clock import ManualClock

    return ManualClock(1_800_000_000.0)


@pytest.fixture
def make_cluster(kube: KubeApiServer, clock):
    """Start ``KubernetesCluster`` adapters on the stand-in (each closed after the test)."""
    from starburst.adapters.kubernetes import KubernetesCluster, KubernetesSettings
    from starburst.adapters.kubernetes.retry import Backoff

    made = []

    def make(**settings):
        api_client = kube.api_client()
        settings.setdefault("backoff", Backoff(base=0.05, cap=0.5))
        adapter = KubernetesCluster(
            api_client, clock, KubernetesSettings(**settings)
        ).start_watching()
        made.append((adapter, api_client))
        assert adapter.wait_synced(10)
        return adapter

    yield make
    for adapter, api_client in made:
        adapter.close()
        api_client.close()


@pytest.fixture
def cluster(make_cluster):
    return make_cluster()
