"""Create, get, list, delete and deletecollection, with the API's server-set fields and errors.

From the API conventions: the server sets ``uid``, ``resourceVersion``, ``creationTimestamp``
and the namespace; ``generateName`` gets a random suffix; a duplicate name is 409
``AlreadyExists`` and a missing object 404 ``NotFound``, both as ``Status`` bodies.
"""

from __future__ import annotations

import json

import pytest
from kubernetes import client

from tests.kube.builders import pod_body


def status_of(err: client.ApiException) -> dict:
    return json.loads(err.body)


def test_create_sets_uid_resource_version_timestamp_and_namespace(core):
    pod = core.create_namespaced_pod("default", pod_body("a"))
    assert pod.metadata.uid and len(pod.metadata.uid) == 36
    assert int(pod.metadata.resource_version) > 0
    assert pod.metadata.creation_timestamp is not None
    assert pod.metadata.namespace == "default"
    assert pod.status.phase == "Pending"


def test_each_write_gets_a_larger_resource_version(core):
    a = core.create_namespaced_pod("default", pod_body("a"))
    b = core.create_namespaced_pod("default", pod_body("b"))
    assert int(b.metadata.resource_version) > int(a.metadata.resource_version)
    assert a.metadata.uid != b.metadata.uid


def test_generate_name_appends_a_random_suffix(core):
    body = pod_body()
    body["metadata"]["generateName"] = "worker-"
    one = core.create_namespaced_pod("default", body)
    two = core.create_namespaced_pod("default", body)
    assert one.metadata.name.startswith("worker-") and len(one.metadata.name) > len("worker-")
    assert one.metadata.name != two.metadata.name


def test_duplicate_name_is_409_already_exists_status(core):
    core.create_namespaced_pod("default", pod_body("a"))
    with pytest.raises(client.ApiException) as err:
        core.create_namespaced_pod("default", pod_body("a"))
    assert err.value.status == 409
    status = status_of(err.value)
    assert status["kind"] == "Status" and status["status"] == "Failure"
    assert status["reason"] == "AlreadyExists" and status["code"] == 409
    assert status["details"] == {"name": "a", "kind": "pods"}  # no empty group, as a real one


def test_same_name_in_another_namespace_is_fine(core):
    core.create_namespace({"metadata": {"name": "team-a"}})
    core.create_namespaced_pod("default", pod_body("a"))
    assert core.create_namespaced_pod("team-a", pod_body("a")).metadata.namespace == "team-a"


def test_get_missing_is_404_not_found_status(core, batch):
    with pytest.raises(client.ApiException) as err:
        core.read_namespaced_pod("nope", "default")
    assert err.value.status == 404
    assert status_of(err.value)["reason"] == "NotFound"
    with pytest.raises(client.ApiException) as err:
        batch.read_namespaced_job("nope", "default")
    assert status_of(err.value)["message"] == 'jobs.batch "nope" not found'


def test_create_in_a_missing_namespace_is_404(core):
    with pytest.raises(client.ApiException) as err:
        core.create_namespaced_pod("ghost", pod_body("a"))
    assert err.value.status == 404
    assert status_of(err.value)["details"]["kind"] == "namespaces"


def test_namespace_in_body_must_match_the_url(core):
    body = pod_body("a")
    body["metadata"]["namespace"] = "kube-system"
    with pytest.raises(client.ApiException) as err:
        core.create_namespaced_pod("default", body)
    assert err.value.status == 400


def test_get_returns_what_was_created(core):
    created = core.create_namespaced_pod("default", pod_body("a", {"app": "x"}))
    got = core.read_namespaced_pod("a", "default")
    assert got.metadata.uid == created.metadata.uid
    assert got.metadata.labels == {"app": "x"}


def test_list_is_namespaced_and_carries_a_list_resource_version(core):
    core.create_namespace({"metadata": {"name": "team-a"}})
    core.create_namespaced_pod("default", pod_body("a"))
    last = core.create_namespaced_pod("team-a", pod_body("b"))
    pods = core.list_namespaced_pod("default")
    assert [p.metadata.name for p in pods.items] == ["a"]
    assert int(pods.metadata.resource_version) >= int(last.metadata.resource_version)
    everywhere = core.list_pod_for_all_namespaces()
    assert sorted(p.metadata.name for p in everywhere.items) == ["a", "b"]


def test_system_namespaces_exist(core):
    names = {n.metadata.name for n in core.list_namespace().items}
    assert {"default", "kube-system", "kube-public", "kube-node-lease"} <= names


def test_delete_removes_and_returns_the_pod(core):
    core.create_namespaced_pod("default", pod_body("a"))
    deleted = core.delete_namespaced_pod("a", "default")
    assert deleted.metadata.name == "a"
    with pytest.raises(client.ApiException) as err:
        core.read_namespaced_pod("a", "default")
    assert err.value.status == 404


def test_delete_missing_is_404(core):
    with pytest.raises(client.ApiException) as err:
        core.delete_namespaced_pod("nope", "default")
    assert err.value.status == 404


def test_delete_with_a_stale_uid_precondition_is_409(core):
    core.create_namespaced_pod("default", pod_body("a"))
    body = client.V1DeleteOptions(preconditions=client.V1Preconditions(uid="other"))
    with pytest.raises(client.ApiException) as err:
        core.delete_namespaced_pod("a", "default", body=body)
    assert err.value.status == 409
    assert core.read_namespaced_pod("a", "default")


def test_deletecollection_deletes_only_what_the_selector_picks(core):
    core.create_namespaced_pod("default", pod_body("a", {"team": "x"}))
    core.create_namespaced_pod("default", pod_body("b", {"team": "x"}))
    core.create_namespaced_pod("default", pod_body("c", {"team": "y"}))
    core.delete_collection_namespaced_pod("default", label_selector="team=x")
    assert [p.metadata.name for p in core.list_namespaced_pod("default").items] == ["c"]


def test_deleting_a_namespace_deletes_its_contents(core):
    core.create_namespace({"metadata": {"name": "team-a"}})
    core.create_namespaced_pod("team-a", pod_body("a"))
    core.delete_namespace("team-a")
    assert core.list_pod_for_all_namespaces().items == []
    with pytest.raises(client.ApiException):
        core.read_namespace("team-a")


@pytest.mark.parametrize("name", ["Upper", "under_score", "-dash", "x" * 254])
def test_names_must_be_rfc1123(core, name):
    with pytest.raises(client.ApiException) as err:
        core.create_namespaced_pod("default", pod_body(name))
    assert err.value.status == 422


def test_job_names_are_at_most_63_characters(batch):
    from tests.kube.builders import job_body

    with pytest.raises(client.ApiException) as err:
        batch.create_namespaced_job("default", job_body("j" * 64, suspend=True))
    assert err.value.status == 422


@pytest.mark.parametrize(
    "labels", [{"bad key": "v"}, {"k": "v" * 64}, {"k": "-v"}, {"Bad_Prefix/k": "v"}]
)
def test_label_keys_and_values_are_validated(core, labels):
    with pytest.raises(client.ApiException) as err:
        core.create_namespaced_pod("default", pod_body("a", labels))
    assert err.value.status == 422


def test_qualified_label_keys_are_fine(core):
    pod = core.create_namespaced_pod(
        "default", pod_body("a", {"starburst.io/queue": "", "app.kubernetes.io/name": "x"})
    )
    assert pod.metadata.labels["starburst.io/queue"] == ""


def test_dry_run_is_refused_rather_than_silently_applied(core):
    with pytest.raises(client.ApiException) as err:
        core.create_namespaced_pod("default", pod_body("a"), dry_run="All")
    assert err.value.status == 400
    assert core.list_namespaced_pod("default").items == []
