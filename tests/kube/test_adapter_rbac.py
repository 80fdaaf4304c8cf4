"""The RBAC rules file is well-formed and grants every call the adapter makes, nothing more."""

from __future__ import annotations

from importlib import resources

import yaml

NEEDED = {
    ("batch", "jobs"): {"get", "list", "watch", "patch"},
    ("", "nodes"): {"list", "watch"},
    ("", "pods"): {"list", "watch"},
    ("", "pods/log"): {"get"},
    ("", "events"): {"create"},
    ("coordination.k8s.io", "leases"): {"get", "create", "update"},
}


def granted() -> dict[tuple[str, str], set[str]]:
    text = resources.files("starburst.adapters.kubernetes").joinpath("rbac.yaml").read_text()
    role = yaml.safe_load(text)
    assert (role["apiVersion"], role["kind"]) == ("rbac.authorization.k8s.io/v1", "ClusterRole")
    out: dict[tuple[str, str], set[str]] = {}
    for rule in role["rules"]:
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                out.setdefault((group, resource), set()).update(rule["verbs"])
    return out


def test_every_call_the_adapter_makes_is_granted():
    rules = granted()
    for key, verbs in NEEDED.items():
        assert verbs <= rules.get(key, set()), key


def test_nothing_destructive_is_granted():
    for verbs in granted().values():
        assert not verbs & {"delete", "deletecollection", "*", "escalate", "bind"}
