"""pytest fixtures for the stand-in, for any test directory that needs a Kubernetes API.

Re-export them from a ``conftest.py`` (``kube = fixtures.kube``; a plain import of
the names reads as unused to linters). ``kube`` is a running ``KubeApiServer`` (fresh per test);
``kube_api`` an official ``kubernetes.client.ApiClient`` pointed at it. Both are shut down
cleanly (client first, then server), so no socket or thread outlives the test.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.kubeapi.server import KubeApiServer


@pytest.fixture
def kube() -> Iterator[KubeApiServer]:
    server = KubeApiServer(history=1000, bookmark_interval=60.0).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def kube_api(kube: KubeApiServer) -> Iterator[Any]:
    api_client = kube.api_client()
    try:
        yield api_client
    finally:
        api_client.close()
