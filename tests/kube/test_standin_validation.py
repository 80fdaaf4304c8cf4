"""Validation rules the stand-in shares with a real API server (``kubeapi/validation.py``).

Each rule is one a real kube-apiserver enforces and Starburst's requests touch: a node field
selector takes exactly one value; a Pod's scheduling gates can only be removed, and while it is
gated its node selector may only gain keys. The messages are Kubernetes' own.
"""

from __future__ import annotations

import json

import pytest
from kubernetes import client

from tests.kube.builders import job_body, pod_body

AFFINITY = "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
ONE_VALUE = (
    "Required value: must be only one value when `operator` is 'In' or 'NotIn' for "
    "node field selector"
)


def field_pin(*nodes: str) -> dict:
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchFields": [
                            {"key": "metadata.name", "operator": "In", "values": list(nodes)}
                        ]
                    }
                ]
            }
        }
    }


def refused(call, *args) -> dict:
    with pytest.raises(client.ApiException) as caught:
        call(*args)
    assert caught.value.status == 422
    body: dict = json.loads(caught.value.body)
    assert body["reason"] == "Invalid"
    return body


def test_a_node_field_selector_with_two_values_is_invalid(core, batch):
    body = refused(
        core.create_namespaced_pod, "default", pod_body("p", affinity=field_pin("n1", "n2"))
    )
    assert body["message"] == (
        f'Pod "p" is invalid: spec.{AFFINITY}.nodeSelectorTerms[0]'
        f".matchFields[0].values: {ONE_VALUE}"
    )
    body = refused(
        batch.create_namespaced_job, "default", job_body("j", affinity=field_pin("n1", "n2"))
    )
    assert body["message"].startswith('Job.batch "j" is invalid: spec.template.spec.' + AFFINITY)
    # one value is fine, and so is a different key... which is not a valid field key at all
    core.create_namespaced_pod("default", pod_body("ok", affinity=field_pin("n1")))
    bad_key = field_pin("n1")
    bad_key["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][
        0
    ]["matchFields"][0]["key"] = "metadata.labels"
    assert (
        "not a valid field selector key"
        in refused(core.create_namespaced_pod, "default", pod_body("k", affinity=bad_key))[
            "message"
        ]
    )


def test_pinning_a_suspended_job_to_two_nodes_by_name_is_refused(batch):
    """What Starburst used to send for a multi-node start: a real server answers 422."""
    batch.create_namespaced_job("default", job_body("train", suspend=True))
    patch = {"spec": {"suspend": False, "template": {"spec": {"affinity": field_pin("a", "b")}}}}
    body = refused(batch.patch_namespaced_job, "train", "default", patch)
    assert ONE_VALUE in body["message"]
    assert batch.read_namespaced_job("train", "default").spec.suspend is True


def test_a_gated_pod_waits_and_may_only_lose_gates_and_gain_node_selectors(kube, core):
    kube.add_node("n1", gpus=8, labels={"x": "1"})
    kube.add_node("n2", gpus=8, labels={"x": "1"})
    core.create_namespaced_pod(
        "default",
        pod_body(
            "g", gpus=1, schedulingGates=[{"name": "a"}, {"name": "b"}], nodeSelector={"x": "1"}
        ),
    )
    assert not core.read_namespaced_pod("g", "default").spec.node_name  # gated: not scheduled
    added = [{"op": "add", "path": "/spec/schedulingGates/-", "value": {"name": "c"}}]
    assert (
        "only deletion is allowed"
        in refused(core.patch_namespaced_pod, "g", "default", added)["message"]
    )
    changed = [{"op": "replace", "path": "/spec/nodeSelector/x", "value": "2"}]
    assert (
        "only additions" in refused(core.patch_namespaced_pod, "g", "default", changed)["message"]
    )
    core.patch_namespaced_pod(
        "g",
        "default",
        [
            {"op": "remove", "path": "/spec/schedulingGates/0"},
            {"op": "add", "path": "/spec/nodeSelector/kubernetes.io~1hostname", "value": "n2"},
        ],
    )
    assert not core.read_namespaced_pod("g", "default").spec.node_name  # gate b remains
    core.patch_namespaced_pod("g", "default", [{"op": "remove", "path": "/spec/schedulingGates/0"}])
    assert core.read_namespaced_pod("g", "default").spec.node_name == "n2"  # not first-fit n1
    # no longer gated: its node selector is as frozen as the rest of its spec
    assert refused(
        core.patch_namespaced_pod,
        "g",
        "default",
        [{"op": "add", "path": "/spec/nodeSelector/y", "value": "1"}],
    )
