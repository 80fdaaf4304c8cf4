"""The doctor's Kubernetes lines on the real control plane, as the shipped ServiceAccount:
RBAC answered by the real authorizer (SelfSubjectAccessReview), GPU nodes from the fake
kubelet."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from starburst.doctor import run_checks
from starburst.doctor.cluster import rbac_rules
from starburst.settings import load_settings
from tests.doctor import lease_scenario
from tests.support.controlplane import (  # noqa: F401 (fixtures)
    RealKube,
    real_kube,
    real_namespace,
)
from tests.support.databases import upgrade

RBAC = Path(__file__).parents[2] / "starburst" / "adapters" / "kubernetes" / "rbac.yaml"


@pytest.fixture
def db(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'sb.db'}"
    upgrade(url)
    return url


def kube_checks(db: str, kubeconfig: Path) -> dict[str, Any]:
    settings = load_settings(database_url=db, cluster="kubernetes", kubeconfig=str(kubeconfig))
    return {c.name: c for c in run_checks(settings) if c.name.startswith("kubernetes")}


def test_the_shipped_service_account_has_every_verb_and_sees_gpus(
    real_kube: RealKube,  # noqa: F811
    real_namespace: str,  # noqa: F811
    db: str,
) -> None:
    (role,) = [d for d in yaml.safe_load_all(RBAC.read_text()) if d and d["kind"] == "ClusterRole"]
    role["metadata"]["name"] = f"starburst-doctor-{real_namespace}"
    real_kube.apply_cluster_role(role)
    granted = real_kube.service_account(
        real_namespace, "starburst", cluster_role=role["metadata"]["name"]
    )
    with real_kube.kubelet() as kubelet:
        kubelet.add_node(f"{real_namespace}-gpu", gpus=4)
        checks = kube_checks(db, granted.kubeconfig)
    assert checks["kubernetes"].ok and real_kube.version.lstrip("v") in checks["kubernetes"].detail
    assert checks["kubernetes rbac"].ok, checks["kubernetes rbac"]
    assert f"all {len(rbac_rules())} verbs" in checks["kubernetes rbac"].detail
    gpus = checks["kubernetes gpu nodes"]
    assert gpus.ok and "4 GPUs allocatable" in gpus.detail


def test_a_service_account_without_the_binding_is_told_what_is_missing(
    real_kube: RealKube,  # noqa: F811
    real_namespace: str,  # noqa: F811
    db: str,
) -> None:
    bare = real_kube.service_account(real_namespace, "nobody")
    checks = kube_checks(db, bare.kubeconfig)
    rbac = checks["kubernetes rbac"]
    assert not rbac.ok and "create jobs.batch" in rbac.detail and "get pods/log" in rbac.detail
    assert "rbac.yaml" in (rbac.fix or "")
    nodes = checks["kubernetes gpu nodes"]  # listing nodes is forbidden too: said, not raised
    assert not nodes.ok and "list nodes" in (nodes.fix or "")


def test_the_leader_line_reads_the_lease_under_lease_election(
    real_kube: RealKube,  # noqa: F811
    real_namespace: str,  # noqa: F811
    db: str,
) -> None:
    """As the Helm chart runs it: the shipped ServiceAccount takes the Lease (``rbac.yaml``
    grants get/create/update on leases) and the doctor, as the same identity, reads it."""
    (role,) = [d for d in yaml.safe_load_all(RBAC.read_text()) if d and d["kind"] == "ClusterRole"]
    role["metadata"]["name"] = f"starburst-doctor-lease-{real_namespace}"
    real_kube.apply_cluster_role(role)
    granted = real_kube.service_account(
        real_namespace, "starburst", cluster_role=role["metadata"]["name"]
    )
    lease_scenario.run(lease_scenario.lease_settings(db, granted.kubeconfig, real_namespace))
