"""Fixtures of the real tier: the session's real control plane, a restricted namespace per
test, a fake kubelet per test (its nodes deleted afterwards), admin clients, and the
controller rig (``tests.realkube.rig``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from tests.realkube.rig import rig  # noqa: F401 (the controller rig, see its module)
from tests.support.controlplane import RealKube
from tests.support.kubelet import FakeKubelet


@pytest.fixture
def kubelet(real_kube: RealKube, real_namespace: str) -> Iterator[FakeKubelet]:
    """A fake kubelet; after the test the namespace's pods are finished before its nodes go."""
    with real_kube.kubelet() as fake:
        yield fake
        real_kube.delete_namespace(real_namespace)


@pytest.fixture
def admin(real_kube: RealKube) -> Iterator[Any]:
    api = real_kube.api_client()
    yield api
    api.close()


@pytest.fixture
def core(admin: Any) -> client.CoreV1Api:
    return client.CoreV1Api(admin)


@pytest.fixture
def batch(admin: Any) -> client.BatchV1Api:
    return client.BatchV1Api(admin)
