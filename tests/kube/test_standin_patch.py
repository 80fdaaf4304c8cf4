"""The three patch formats (merge, JSON, strategic merge) through the official client.

The official client sends a dict body as a strategic merge patch and a list body as a JSON
patch; merge patches go through ``call`` with ``application/merge-patch+json``.
Strategic merge semantics from the API documentation ("Update API Objects in Place Using
kubectl patch"): lists with a patch merge key merge element by element (``containers`` and
``env`` by ``name``), lists without one (``nodeSelectorTerms``, ``tolerations``) are replaced,
``$patch: delete`` removes an element, ``finalizers`` merge as a set.
"""

from __future__ import annotations

import pytest
from kubernetes import client

from tests.kube.builders import call, job_body, pod_body
from tests.kubeapi.patch import strategic_merge_patch

JOB_PATH = "/apis/batch/v1/namespaces/default/jobs/{}"


@pytest.fixture
def job(batch):
    body = job_body("train", suspend=True)
    body["spec"]["template"]["spec"]["containers"][0]["env"] = [
        {"name": "A", "value": "1"},
        {"name": "B", "value": "2"},
    ]
    body["spec"]["template"]["spec"]["containers"].append({"name": "sidecar", "image": "log:1"})
    return batch.create_namespaced_job("default", body)


def test_merge_patch_merges_maps_and_null_deletes(api, batch, job):
    batch.patch_namespaced_job("train", "default", {"metadata": {"labels": {"a": "1", "b": "2"}}})
    out = call(
        api,
        "PATCH",
        JOB_PATH.format("train"),
        {"metadata": {"labels": {"a": None, "c": "3"}}},
        "application/merge-patch+json",
    )
    assert out["metadata"]["labels"] == {"b": "2", "c": "3"}


def test_merge_patch_replaces_lists_whole(api, job):
    out = call(
        api,
        "PATCH",
        JOB_PATH.format("train"),
        {"spec": {"template": {"spec": {"tolerations": [{"key": "gpu", "operator": "Exists"}]}}}},
        "application/merge-patch+json",
    )
    out = call(
        api,
        "PATCH",
        JOB_PATH.format("train"),
        {"spec": {"template": {"spec": {"tolerations": [{"key": "spot", "operator": "Exists"}]}}}},
        "application/merge-patch+json",
    )
    assert out["spec"]["template"]["spec"]["tolerations"] == [{"key": "spot", "operator": "Exists"}]


def test_json_patch_operations(batch, job):
    out = batch.patch_namespaced_job(
        "train",
        "default",
        [
            {"op": "add", "path": "/metadata/annotations", "value": {"starburst.io/x": "1"}},
            {"op": "replace", "path": "/spec/parallelism", "value": 1},
            {"op": "test", "path": "/spec/suspend", "value": True},
            {"op": "add", "path": "/metadata/labels/a~1b", "value": "slash"},
            {"op": "copy", "from": "/metadata/labels/a~1b", "path": "/metadata/labels/c"},
            {"op": "remove", "path": "/metadata/labels/a~1b"},
        ],
    )
    assert out.metadata.annotations == {"starburst.io/x": "1"}
    assert out.metadata.labels == {"c": "slash"}


def test_a_failed_json_patch_test_changes_nothing(batch, job):
    before = batch.read_namespaced_job("train", "default")
    with pytest.raises(client.ApiException) as err:
        batch.patch_namespaced_job(
            "train",
            "default",
            [
                {"op": "add", "path": "/metadata/labels", "value": {"x": "1"}},
                {"op": "test", "path": "/spec/suspend", "value": False},
            ],
        )
    assert err.value.status == 422
    after = batch.read_namespaced_job("train", "default")
    assert after.metadata.resource_version == before.metadata.resource_version


def test_json_patch_on_a_missing_path_is_rejected(batch, job):
    with pytest.raises(client.ApiException) as err:
        batch.patch_namespaced_job(
            "train", "default", [{"op": "remove", "path": "/metadata/annotations/nope"}]
        )
    assert err.value.status == 422


def test_strategic_merge_merges_containers_by_name(core):
    body = pod_body("a", schedulerName="manual")
    body["spec"]["containers"][0]["env"] = [{"name": "A", "value": "1"}]
    body["spec"]["containers"].append({"name": "sidecar", "image": "log:1"})
    core.create_namespaced_pod("default", body)
    out = core.patch_namespaced_pod(
        "a", "default", {"spec": {"containers": [{"name": "sidecar", "image": "log:2"}]}}
    )
    assert [(c.name, c.image) for c in out.spec.containers] == [
        ("main", "busybox"),
        ("sidecar", "log:2"),
    ]
    assert out.spec.containers[0].env[0].name == "A"


def test_strategic_merge_merges_env_by_name_and_deletes_by_directive():
    # Env of a created object is immutable through the API (pods, job templates), so the
    # merge itself is pinned on the patch function the server applies.
    target = {
        "containers": [
            {"name": "main", "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]}
        ]
    }
    patch = {
        "containers": [
            {
                "name": "main",
                "env": [
                    {"name": "B", "value": "20"},
                    {"name": "C", "value": "3"},
                    {"name": "A", "$patch": "delete"},
                ],
            }
        ]
    }
    out = strategic_merge_patch(target, patch)
    assert out["containers"][0]["env"] == [
        {"name": "B", "value": "20"},
        {"name": "C", "value": "3"},
    ]
    assert target["containers"][0]["env"][0] == {"name": "A", "value": "1"}  # input untouched


def test_a_started_jobs_template_is_immutable(batch, job):
    batch.patch_namespaced_job("train", "default", {"spec": {"suspend": False}})
    with pytest.raises(client.ApiException) as err:
        batch.patch_namespaced_job(
            "train", "default", {"spec": {"template": {"spec": {"nodeSelector": {"gpu": "a100"}}}}}
        )
    assert err.value.status == 422
    assert "spec.template" in err.value.body


def test_a_suspended_jobs_template_accepts_only_scheduling_directives(batch, job):
    out = batch.patch_namespaced_job(
        "train",
        "default",
        {
            "spec": {
                "template": {
                    "metadata": {"annotations": {"starburst.io/placement": "n1"}},
                    "spec": {"nodeSelector": {"gpu": "a100"}},
                }
            }
        },
    )
    assert out.spec.template.spec.node_selector == {"gpu": "a100"}
    with pytest.raises(client.ApiException) as err:
        batch.patch_namespaced_job(
            "train",
            "default",
            {
                "spec": {
                    "template": {"spec": {"containers": [{"name": "main", "image": "other:2"}]}}
                }
            },
        )
    assert err.value.status == 422


def test_strategic_merge_replaces_node_affinity_terms(batch, job):
    def pin(nodes):
        return {
            "spec": {
                "template": {
                    "spec": {
                        "affinity": {
                            "nodeAffinity": {
                                "requiredDuringSchedulingIgnoredDuringExecution": {
                                    "nodeSelectorTerms": [
                                        {
                                            "matchExpressions": [
                                                {
                                                    "key": "kubernetes.io/hostname",
                                                    "operator": "In",
                                                    "values": nodes,
                                                }
                                            ]
                                        }
                                    ]
                                }
                            }
                        }
                    }
                }
            }
        }

    batch.patch_namespaced_job("train", "default", pin(["n1", "n2"]))
    out = batch.patch_namespaced_job("train", "default", pin(["n3"]))
    affinity = out.spec.template.spec.affinity.node_affinity
    terms = affinity.required_during_scheduling_ignored_during_execution.node_selector_terms
    assert len(terms) == 1 and terms[0].match_expressions[0].values == ["n3"]


def test_strategic_merge_unions_finalizers(core):
    core.create_namespaced_pod("default", pod_body("a", schedulerName="manual"))
    core.patch_namespaced_pod("a", "default", {"metadata": {"finalizers": ["x/one"]}})
    out = core.patch_namespaced_pod("a", "default", {"metadata": {"finalizers": ["x/two"]}})
    assert out.metadata.finalizers == ["x/one", "x/two"]
    out = core.patch_namespaced_pod(
        "a", "default", {"metadata": {"$deleteFromPrimitiveList/finalizers": ["x/one"]}}
    )
    assert out.metadata.finalizers == ["x/two"]


def test_patch_with_a_stale_resource_version_is_409(batch, job):
    batch.patch_namespaced_job("train", "default", {"metadata": {"labels": {"a": "1"}}})
    with pytest.raises(client.ApiException) as err:
        batch.patch_namespaced_job(
            "train",
            "default",
            {"metadata": {"resourceVersion": job.metadata.resource_version, "labels": {"a": "2"}}},
        )
    assert err.value.status == 409


def test_unsupported_patch_type_is_415(api, job):
    with pytest.raises(client.ApiException) as err:
        call(api, "PATCH", JOB_PATH.format("train"), "a: b", "application/apply-patch+yaml")
    assert err.value.status == 415


def test_patch_of_a_missing_object_is_404(batch):
    with pytest.raises(client.ApiException) as err:
        batch.patch_namespaced_job("nope", "default", {"metadata": {"labels": {"a": "1"}}})
    assert err.value.status == 404
