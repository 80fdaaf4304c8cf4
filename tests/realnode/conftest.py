"""Fixtures of the real-node tier: the machine's real node (``tests.support.realnode``, one
per session, in a control plane of its own), a restricted namespace per test in that control
plane, and ``Pods``: busybox pods on the real node, as a user would run them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.realnode.pods import Pods
from tests.support.realnode import RealNode


@pytest.fixture
def node_namespace(real_node: RealNode) -> Iterator[str]:
    name = real_node.kube.create_namespace("node")
    yield name
    real_node.kube.delete_namespace(name)


@pytest.fixture
def pods(real_node: RealNode, node_namespace: str) -> Pods:
    return Pods(real_node.kube, node_namespace)
