"""Fixtures of the Kueue tier: per test a namespace and a Kueue queue (ResourceFlavor,
ClusterQueue, LocalQueue in that namespace) on the session's ``kueue_kube``, removed after."""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest

from tests.kueue import objects
from tests.support.kueue import KueueKube


@dataclass(frozen=True)
class KueueQueue:
    namespace: str
    local_queue: str
    cluster_queue: str
    flavor: str


@pytest.fixture
def kueue_queue(kueue_kube: KueueKube) -> Iterator[Callable[..., KueueQueue]]:
    """``kueue_queue(gpus=2, annotations=None)`` makes a fresh namespace with a LocalQueue on
    a new ClusterQueue of ``gpus`` GPUs (one ResourceFlavor); all removed after the test."""
    kube = kueue_kube.kube
    made: list[KueueQueue] = []

    def make(gpus: int = 2, annotations: dict[str, str] | None = None) -> KueueQueue:
        suffix = secrets.token_hex(3)
        queue = KueueQueue(kube.create_namespace("kq"), "lq", f"cq-{suffix}", f"rf-{suffix}")
        objects.create(kube, objects.resource_flavor(queue.flavor))
        objects.create(kube, objects.cluster_queue(queue.cluster_queue, queue.flavor, gpus,
                                                   annotations))  # fmt: skip
        objects.create(kube, objects.local_queue("lq", queue.cluster_queue), queue.namespace)
        made.append(queue)
        return queue

    yield make
    for queue in made:
        kube.delete_namespace(queue.namespace)
        objects.delete_quietly(kube, f"{objects.GROUP}/clusterqueues/{queue.cluster_queue}")
        objects.delete_quietly(kube, f"{objects.GROUP}/resourceflavors/{queue.flavor}")
