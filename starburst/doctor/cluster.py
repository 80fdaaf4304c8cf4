"""Kubernetes checks: the API server answers, the controller's RBAC verbs are granted to this
identity (a SelfSubjectAccessReview per rule of ``rbac.yaml``), and GPU nodes are seen."""

from __future__ import annotations

from importlib import resources
from typing import Any

import yaml

from starburst.doctor.checks import Check, failed
from starburst.settings import Settings

RBAC_FILE = "starburst/adapters/kubernetes/rbac.yaml"
GPU = "nvidia.com/gpu"


def rbac_rules() -> list[tuple[str, str, str]]:
    """(API group, resource[/subresource], verb) of every rule the controller needs."""
    text = resources.files("starburst.adapters.kubernetes").joinpath("rbac.yaml").read_text()
    wanted: list[tuple[str, str, str]] = []
    for doc in yaml.safe_load_all(text):
        if not doc or doc.get("kind") != "ClusterRole":
            continue
        for rule in doc.get("rules", []):
            for group in rule.get("apiGroups", [""]):
                for resource in rule.get("resources", []):
                    wanted += [(group, resource, verb) for verb in rule.get("verbs", [])]
    return wanted


def configured(settings: Settings) -> Check:
    """Which cluster the settings select, whatever it is (nothing is contacted here)."""
    if settings.cluster == "kubernetes":
        where = settings.kubeconfig or "the in-cluster service account"
        return Check("cluster", True, f"kubernetes, through {where}")
    slots = settings.local_gpus
    detail = f"local, {slots} GPU slot{'' if slots == 1 else 's'} ({settings.local_gpu_type})"
    detail += ": jobs run as processes on this machine"
    if slots == 0:
        return Check("cluster", True, detail, "set local_gpus: no GPU job starts here", True)
    return Check("cluster", True, detail)


def kubernetes(settings: Settings) -> list[Check]:
    from starburst.controller.wiring import kube_api_client

    try:
        api = kube_api_client(settings)
    except Exception as exc:
        return [failed("kubernetes", exc, "set kubeconfig (or run in the cluster)")]
    try:
        return _checks(api)
    finally:
        api.close()


def _checks(api: Any) -> list[Check]:
    from kubernetes import client

    try:
        version = client.VersionApi(api).get_code(_request_timeout=10)
    except Exception as exc:
        return [failed("kubernetes", exc, "check the kubeconfig's server and credentials")]
    host = api.configuration.host
    found = [Check("kubernetes", True, f"{host} answers (Kubernetes {version.git_version})")]
    return [*found, _rbac(client.AuthorizationV1Api(api)), _gpu_nodes(client.CoreV1Api(api))]


def _rbac(auth: Any) -> Check:
    from kubernetes import client

    denied = []
    rules = rbac_rules()
    for group, resource, verb in rules:
        plural, _, sub = resource.partition("/")
        review = client.V1SelfSubjectAccessReview(
            spec=client.V1SelfSubjectAccessReviewSpec(
                resource_attributes=client.V1ResourceAttributes(
                    group=group, resource=plural, subresource=sub or None, verb=verb
                )
            )
        )
        try:
            answer = auth.create_self_subject_access_review(review, _request_timeout=10)
        except Exception as exc:
            return failed(
                "kubernetes rbac",
                exc,
                "grant create on selfsubjectaccessreviews (every authenticated user has it)",
            )
        if not answer.status.allowed:
            denied.append(f"{verb} {resource}{'.' + group if group else ''}")
    if denied:
        return Check(
            "kubernetes rbac",
            False,
            "not granted: " + ", ".join(denied),
            f"kubectl apply -f {RBAC_FILE} (or the Helm chart) for this identity",
        )
    return Check("kubernetes rbac", True, f"all {len(rules)} verbs of {RBAC_FILE} granted")


def _gpu_nodes(core: Any) -> Check:
    try:
        nodes = core.list_node(_request_timeout=10).items
    except Exception as exc:
        return failed("kubernetes gpu nodes", exc, f"grant list nodes ({RBAC_FILE})")
    gpus = {n.metadata.name: int((n.status.allocatable or {}).get(GPU, "0") or 0) for n in nodes}
    with_gpus = {name: count for name, count in gpus.items() if count > 0}
    if not with_gpus:
        return Check(
            "kubernetes gpu nodes",
            False,
            f"{len(nodes)} node(s), none with allocatable {GPU}",
            "install the NVIDIA device plugin (or GPU operator) on the GPU nodes",
        )
    total = sum(with_gpus.values())
    return Check(
        "kubernetes gpu nodes",
        True,
        f"{len(with_gpus)} of {len(nodes)} node(s) with GPUs, {total} GPUs allocatable",
    )
