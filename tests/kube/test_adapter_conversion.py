"""The adapter's pure conversions, and its import cost.

The adapter parses quantities itself (``kubernetes.utils`` would import the whole client); it
must agree with the stand-in's exact parser, which was written separately from the docs.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from starburst.adapters.kubernetes import conversion as conv
from starburst.adapters.kubernetes.quantity import quantity
from starburst.core.capacity import Part
from tests.kube.adapter_support import on, queued_job
from tests.kubeapi import validation
from tests.kubeapi.quantity import parse_quantity
from tests.support.waiting import wait_for


@pytest.mark.parametrize(
    "text",
    ["0", "2", "500m", "1.5", "16Gi", "512Mi", "1k", "129M", "1e3", "2E-3", "100u", "7Ti", ".5"],
)
def test_both_quantity_parsers_agree(text):
    assert quantity(text) == pytest.approx(float(parse_quantity(text)))


def test_a_limit_stands_in_for_a_missing_request_and_containers_add_up():
    spec = {
        "containers": [
            {"name": "a", "resources": {"limits": {"nvidia.com/gpu": "2", "cpu": "1"}}},
            {
                "name": "b",
                "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"cpu": "4"}},
            },
        ]
    }
    assert conv.pod_resources(spec) == (2.0, 1.5, 1024.0)


def test_a_job_without_gpus_asks_for_none():
    job = conv.job_from_k8s(
        {
            "metadata": {"name": "cpu", "namespace": "ns"},
            "spec": {"parallelism": 3, "template": {"spec": {"containers": [{"name": "m"}]}}},
        },
        conv.Conventions(),
    )
    assert (job.gpus, job.team, job.gpu_type) == (0, "ns", None)


def test_the_pin_joins_every_existing_node_selector_term():
    user_terms = [
        {"matchExpressions": [{"key": "gpu", "operator": "In", "values": ["a100"]}]},
        {"matchExpressions": [{"key": "gpu", "operator": "In", "values": ["h100"]}]},
    ]
    obj = {
        "metadata": {"name": "j", "resourceVersion": "7"},
        "spec": {
            "template": {
                "spec": {
                    "affinity": {
                        "nodeAffinity": {
                            "requiredDuringSchedulingIgnoredDuringExecution": {
                                "nodeSelectorTerms": user_terms
                            }
                        }
                    }
                }
            }
        },
    }
    patch = conv.start_patch(
        obj,
        (Part(0, "n2", 8, 0, 0), Part(1, "n1", 8, 0, 0)),
        "r",
        0.0,
        {"n1": "host-1", "n2": "host-2"},
    )
    template = patch["spec"]["template"]["spec"]
    terms = template["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ]
    # the node set, by hostname label, ANDed into each of the user's (ORed) terms; no node
    # field selector with several values (a real API server refuses it: 422)
    pin = {"key": "kubernetes.io/hostname", "operator": "In", "values": ["host-1", "host-2"]}
    assert [t["matchExpressions"] for t in terms] == [
        [*t["matchExpressions"], pin] for t in user_terms
    ]
    assert all("matchFields" not in t for t in terms)
    assert validation.node_field_selector_errors(template, "spec") == []
    # several nodes: the pods wait behind Starburst's gate until it picks each one's node
    assert template["schedulingGates"] == [{"name": "starburst.io/placement"}]
    assert patch["metadata"]["resourceVersion"] == "7" and patch["spec"]["suspend"] is False
    one = conv.start_patch(obj, (Part(0, "n2", 8, 0, 0),), "r", 0.0)["spec"]["template"]
    assert "schedulingGates" not in one["spec"]  # one node: nothing to count


def test_the_old_multi_value_field_pin_is_what_a_real_server_refuses():
    spec = {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchFields": [
                                {"key": "metadata.name", "operator": "In", "values": ["n1", "n2"]}
                            ]
                        }
                    ]
                }
            }
        }
    }
    (error,) = validation.node_field_selector_errors(spec, "spec.template.spec")
    assert error.endswith(
        "matchFields[0].values: Required value: must be only one value when "
        "`operator` is 'In' or 'NotIn' for node field selector"
    )


def test_the_users_own_node_affinity_survives_the_start(kube, batch, cluster):
    kube.add_node("n1", gpus=8, labels={"zone": "a"})
    kube.add_node("n2", gpus=8, labels={"zone": "b"})
    body = queued_job("zoned", gpus=2)
    body["spec"]["template"]["spec"]["affinity"] = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]}
                ]
            }
        }
    }
    batch.create_namespaced_job("default", body)
    (job,) = wait_for(cluster.submissions)
    wait_for(lambda: len(cluster.snapshot().capacity.nodes) == 2)
    cluster.start(job, on(cluster.snapshot(), ("n1", 2)), "the core chose n1")
    # Both the user's zone and Starburst's pin must hold: no node satisfies both, so the
    # pod stays Pending rather than landing outside the user's zone.
    (pod,) = kube.pods_of("default", "zoned")
    assert not pod["spec"].get("nodeName")


def test_importing_the_adapter_package_does_not_import_the_kubernetes_client():
    code = (
        "import sys, starburst.adapters.kubernetes, starburst.adapters.kubernetes.conversion;"
        "sys.exit('kubernetes' in sys.modules)"
    )
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0
