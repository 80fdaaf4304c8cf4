"""Lease leader election on the real control plane: the stand-in's lease tests, run unchanged
as a ServiceAccount bound by the ClusterRole Starburst ships (``rbac.yaml``)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from tests.kube.test_lease import (  # noqa: F401 (collected here, on the real server)
    NAME,
    test_a_deposed_leaders_writes_are_refused_by_the_store,
    test_a_live_holder_keeps_the_lease_and_a_dead_one_is_replaced_in_bounded_time,
    test_one_replica_holds_the_lease_and_a_release_hands_it_over,
)
from tests.kube.test_lease_failover import (  # noqa: F401
    test_a_lease_elected_standby_takes_over_from_a_dead_leader,
)
from tests.realkube.shipped import shipped_cluster_role
from tests.support.controlplane import RealKube, ServiceAccountCredentials


@dataclass
class _AsServiceAccount:
    """What the failover test asks of ``kube``: a kubeconfig (here: the ServiceAccount's)."""

    creds: ServiceAccountCredentials

    def write_kubeconfig(self, path: Path) -> Path:
        shutil.copy(self.creds.kubeconfig, path)
        return path


@pytest.fixture
def creds(real_kube: RealKube, real_namespace: str) -> Iterator[ServiceAccountCredentials]:
    role = shipped_cluster_role()
    real_kube.apply_cluster_role(role)
    yield real_kube.service_account(
        real_namespace, "starburst", cluster_role=role["metadata"]["name"]
    )
    try:  # the next test starts without a holder
        real_kube.request(
            "DELETE", f"/apis/coordination.k8s.io/v1/namespaces/default/leases/{NAME}"
        )
    except Exception as err:
        if getattr(err, "code", None) != 404:
            raise


@pytest.fixture
def api(real_kube: RealKube, creds: ServiceAccountCredentials) -> Iterator[Any]:
    api_client = real_kube.api_client(creds.token)
    yield api_client
    api_client.close()


@pytest.fixture
def coordination(api: Any) -> client.CoordinationV1Api:
    return client.CoordinationV1Api(api)


@pytest.fixture
def kube(creds: ServiceAccountCredentials) -> _AsServiceAccount:
    return _AsServiceAccount(creds)
