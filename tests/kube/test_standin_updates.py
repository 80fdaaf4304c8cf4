"""Updates: the status subresource, optimistic concurrency, finalizers and garbage collection.

From the API documentation: ``/status`` changes only ``status`` and the main resource ignores
``status``; a PUT whose ``resourceVersion`` is stale is 409 Conflict; an update that changes
nothing keeps the resourceVersion; deleting an object with finalizers only sets
``deletionTimestamp`` until the last finalizer is removed; dependents named by
``ownerReferences`` are deleted in the background (or orphaned: the batch/v1 Job default).
"""

from __future__ import annotations

import pytest
from kubernetes import client

from tests.kube.builders import job_body, pod_body


def quiet(name, labels=None):
    return pod_body(name, labels, schedulerName="manual")


def test_status_subresource_changes_only_status(batch):
    batch.create_namespaced_job("default", job_body("j", suspend=True))
    job = batch.read_namespaced_job("j", "default")  # the controller has written status since
    job.status.active = 7
    job.metadata.labels = {"sneaky": "yes"}
    out = batch.replace_namespaced_job_status("j", "default", job)
    assert out.status.active == 7
    assert not (out.metadata.labels or {}).get("sneaky")


def test_main_resource_ignores_status(batch):
    batch.create_namespaced_job("default", job_body("j", suspend=True))
    out = batch.patch_namespaced_job(
        "j", "default", {"metadata": {"labels": {"a": "1"}}, "status": {"active": 9}}
    )
    assert out.metadata.labels["a"] == "1"
    assert out.status.active is None


def test_patch_status_through_the_subresource(core):
    core.create_namespaced_pod("default", quiet("p"))
    out = core.patch_namespaced_pod_status("p", "default", {"status": {"phase": "Running"}})
    assert out.status.phase == "Running"
    assert core.read_namespaced_pod_status("p", "default").status.phase == "Running"


def test_create_resets_status(batch):
    body = job_body("j", suspend=True)
    body["status"] = {"succeeded": 5}
    assert batch.create_namespaced_job("default", body).status.succeeded is None


def test_put_with_a_stale_resource_version_is_409_conflict(batch):
    batch.create_namespaced_job("default", job_body("j", suspend=True))
    job = batch.read_namespaced_job("j", "default")
    fresh = batch.read_namespaced_job("j", "default")
    fresh.metadata.labels = {"first": "1"}
    batch.replace_namespaced_job("j", "default", fresh)
    job.metadata.labels = {"second": "2"}
    with pytest.raises(client.ApiException) as err:
        batch.replace_namespaced_job("j", "default", job)
    assert err.value.status == 409
    assert '"reason":"Conflict"' in err.value.body
    assert batch.read_namespaced_job("j", "default").metadata.labels["first"] == "1"


def test_put_with_the_current_resource_version_succeeds_and_bumps_it(core):
    pod = core.create_namespaced_pod("default", quiet("p"))
    pod.metadata.labels = {"a": "1"}
    out = core.replace_namespaced_pod("p", "default", pod)
    assert int(out.metadata.resource_version) > int(pod.metadata.resource_version)


def test_an_update_that_changes_nothing_keeps_the_resource_version(core):
    pod = core.create_namespaced_pod("default", quiet("p", {"a": "1"}))
    out = core.patch_namespaced_pod("p", "default", {"metadata": {"labels": {"a": "1"}}})
    assert out.metadata.resource_version == pod.metadata.resource_version


def test_server_owned_metadata_cannot_be_overwritten(core):
    pod = core.create_namespaced_pod("default", quiet("p"))
    out = core.patch_namespaced_pod(
        "p",
        "default",
        {"metadata": {"uid": pod.metadata.uid, "creationTimestamp": "2000-01-01T00:00:00Z"}},
    )
    assert out.metadata.creation_timestamp == pod.metadata.creation_timestamp


def test_spec_changes_bump_the_generation_status_changes_do_not(batch):
    job = batch.create_namespaced_job("default", job_body("j", suspend=True, parallelism=2))
    assert job.metadata.generation == 1
    job = batch.patch_namespaced_job("j", "default", {"spec": {"parallelism": 1}})
    assert job.metadata.generation == 2
    job = batch.patch_namespaced_job_status("j", "default", {"status": {"active": 3}})
    assert job.metadata.generation == 2


def test_delete_with_finalizers_only_sets_deletion_timestamp(core):
    body = quiet("p")
    body["metadata"]["finalizers"] = ["starburst.io/cleanup"]
    core.create_namespaced_pod("default", body)
    core.delete_namespaced_pod("p", "default")
    pod = core.read_namespaced_pod("p", "default")
    assert pod.metadata.deletion_timestamp is not None
    assert pod.metadata.finalizers == ["starburst.io/cleanup"]


def test_removing_the_last_finalizer_deletes(core):
    body = quiet("p")
    body["metadata"]["finalizers"] = ["a/one", "a/two"]
    core.create_namespaced_pod("default", body)
    core.delete_namespaced_pod("p", "default")
    core.patch_namespaced_pod("p", "default", [{"op": "remove", "path": "/metadata/finalizers/0"}])
    assert core.read_namespaced_pod("p", "default").metadata.finalizers == ["a/two"]
    core.patch_namespaced_pod("p", "default", [{"op": "remove", "path": "/metadata/finalizers"}])
    with pytest.raises(client.ApiException) as err:
        core.read_namespaced_pod("p", "default")
    assert err.value.status == 404


def test_no_new_finalizers_on_an_object_being_deleted(core):
    body = quiet("p")
    body["metadata"]["finalizers"] = ["a/one"]
    core.create_namespaced_pod("default", body)
    core.delete_namespaced_pod("p", "default")
    with pytest.raises(client.ApiException) as err:
        core.patch_namespaced_pod("p", "default", {"metadata": {"finalizers": ["a/new"]}})
    assert err.value.status == 422


def owned_pod(name: str, owner) -> dict:
    body = quiet(name)
    body["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "name": owner.metadata.name,
            "uid": owner.metadata.uid,
        }
    ]  # not the controller: the Job controller leaves it alone
    return body


def test_background_deletion_removes_dependents(core, batch):
    owner = batch.create_namespaced_job("default", job_body("j", suspend=True))
    core.create_namespaced_pod("default", owned_pod("dep", owner))
    core.create_namespaced_pod("default", quiet("bystander"))
    batch.delete_namespaced_job("j", "default", propagation_policy="Background")
    assert [p.metadata.name for p in core.list_namespaced_pod("default").items] == ["bystander"]


def test_foreground_deletion_removes_dependents_too(core, batch):
    owner = batch.create_namespaced_job("default", job_body("j", suspend=True))
    core.create_namespaced_pod("default", owned_pod("dep", owner))
    batch.delete_namespaced_job("j", "default", propagation_policy="Foreground")
    assert core.list_namespaced_pod("default").items == []
    assert batch.list_namespaced_job("default").items == []


def test_jobs_orphan_their_dependents_by_default(core, batch):
    owner = batch.create_namespaced_job("default", job_body("j", suspend=True))
    core.create_namespaced_pod("default", owned_pod("dep", owner))
    status = batch.delete_namespaced_job("j", "default")
    assert status.status == "Success"
    orphan = core.read_namespaced_pod("dep", "default")
    assert not orphan.metadata.owner_references


def test_a_dependent_with_another_live_owner_survives(core, batch):
    a = batch.create_namespaced_job("default", job_body("a", suspend=True))
    b = batch.create_namespaced_job("default", job_body("b", suspend=True))
    body = owned_pod("shared", a)
    body["metadata"]["ownerReferences"].append(
        {"apiVersion": "batch/v1", "kind": "Job", "name": "b", "uid": b.metadata.uid}
    )
    core.create_namespaced_pod("default", body)
    batch.delete_namespaced_job("a", "default", propagation_policy="Background")
    survivor = core.read_namespaced_pod("shared", "default")
    assert [r.name for r in survivor.metadata.owner_references] == ["b"]


def test_cascade_waits_for_the_owners_finalizers(core, batch):
    body = job_body("j", suspend=True)
    body["metadata"]["finalizers"] = ["starburst.io/keep"]
    owner = batch.create_namespaced_job("default", body)
    core.create_namespaced_pod("default", owned_pod("dep", owner))
    batch.delete_namespaced_job("j", "default", propagation_policy="Background")
    assert core.read_namespaced_pod("dep", "default")
    batch.patch_namespaced_job(
        "j", "default", {"metadata": {"$deleteFromPrimitiveList/finalizers": ["starburst.io/keep"]}}
    )
    assert core.list_namespaced_pod("default").items == []
