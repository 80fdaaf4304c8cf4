"""The chart's ClusterRole grants exactly the rules of the adapter's single RBAC source (and,
with ``settings.kubernetes_auth``, the API's ``TOKEN_REVIEW_RULE``, nothing more).

``helm/starburst/files/rbac.yaml`` is a copy of ``starburst/adapters/kubernetes/rbac.yaml``
(Helm cannot read files outside the chart). When the source changes, refresh the copy with
``python -m tests.helm.test_rbac_source`` (or ``cp``); this test fails until then.
"""

from __future__ import annotations

import shutil
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from starburst.adapters.kubernetes.tokenreview import TOKEN_REVIEW_RULE
from tests.helm.conftest import CASES, CHART, Render, by_kind

COPY = CHART / "files" / "rbac.yaml"


def source_path() -> Path:
    return Path(str(resources.files("starburst.adapters.kubernetes").joinpath("rbac.yaml")))


def source_rules() -> list[dict[str, Any]]:
    rules: list[dict[str, Any]] = []
    for doc in yaml.safe_load_all(source_path().read_text()):
        if doc and doc.get("kind") == "ClusterRole":
            rules += doc["rules"]
    return rules


def test_the_chart_copy_is_the_source_byte_for_byte() -> None:
    assert COPY.read_bytes() == source_path().read_bytes(), (
        "helm/starburst/files/rbac.yaml is stale: run python -m tests.helm.test_rbac_source"
    )


def test_the_rendered_cluster_role_has_exactly_the_source_rules(render: Render) -> None:
    objects = render(CASES["defaults"])
    (role,) = by_kind(objects, "ClusterRole")
    assert role["rules"] == source_rules()
    (binding,) = by_kind(objects, "ClusterRoleBinding")
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    (account,) = by_kind(objects, "ServiceAccount")
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": account["metadata"]["name"], "namespace": "starburst"}
    ]


def test_kubernetes_auth_adds_exactly_the_token_review_rule(render: Render) -> None:
    (role,) = by_kind(render(CASES["kubernetes-auth"]), "ClusterRole")
    assert role["rules"] == [*source_rules(), TOKEN_REVIEW_RULE]
    off = {**CASES["kubernetes-auth"], "settings": {"kubernetes_auth": False}}
    (plain,) = by_kind(render(off), "ClusterRole")
    assert plain["rules"] == source_rules()


def test_rbac_can_be_left_to_the_admin(render: Render) -> None:
    objects = render({**CASES["defaults"], "rbac": {"create": False}})
    assert not by_kind(objects, "ClusterRole") and not by_kind(objects, "ClusterRoleBinding")


if __name__ == "__main__":
    shutil.copyfile(source_path(), COPY)
    print(f"{COPY} refreshed from {source_path()}")
