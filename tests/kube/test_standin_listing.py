"""List chunking and selectors, as the API documentation specifies them.

- ``limit``/``continue``: pages of at most ``limit`` items; the continue token reads the same
  consistent snapshot (objects created meanwhile do not appear); an expired token is 410;
  ``remainingItemCount`` counts what is left (lists without selectors only).
- Label selectors: ``=``, ``==``, ``!=``, ``in``, ``notin``, exists, ``!`` not exists.
- Field selectors: the fields each resource supports; any other field is 400 BadRequest.
"""

from __future__ import annotations

import pytest
from kubernetes import client

from tests.kube.builders import pod_body


def quiet(name, labels=None, **spec):
    return pod_body(name, labels, schedulerName="manual", **spec)


def names(pod_list) -> list[str]:
    return [p.metadata.name for p in pod_list.items]


@pytest.fixture
def five(core):
    for i in range(5):
        core.create_namespaced_pod("default", quiet(f"p{i}"))


def test_limit_and_continue_page_through_everything(core, five):
    first = core.list_namespaced_pod("default", limit=2)
    assert names(first) == ["p0", "p1"]
    assert first.metadata.remaining_item_count == 3
    second = core.list_namespaced_pod("default", limit=2, _continue=first.metadata._continue)
    third = core.list_namespaced_pod("default", limit=2, _continue=second.metadata._continue)
    assert names(second) == ["p2", "p3"] and names(third) == ["p4"]
    assert third.metadata._continue is None
    assert first.metadata.resource_version == third.metadata.resource_version


def test_continue_reads_a_consistent_snapshot(core, five):
    first = core.list_namespaced_pod("default", limit=3)
    core.create_namespaced_pod("default", quiet("p9"))
    core.delete_namespaced_pod("p4", "default")
    rest = core.list_namespaced_pod("default", limit=3, _continue=first.metadata._continue)
    assert names(rest) == ["p3", "p4"]


def test_an_expired_continue_token_is_410(kube, core, five):
    first = core.list_namespaced_pod("default", limit=2)
    kube.compact()
    with pytest.raises(client.ApiException) as err:
        core.list_namespaced_pod("default", limit=2, _continue=first.metadata._continue)
    assert err.value.status == 410


def test_a_garbled_continue_token_is_400(core, five):
    with pytest.raises(client.ApiException) as err:
        core.list_namespaced_pod("default", limit=2, _continue="not-a-token")
    assert err.value.status == 400


def test_no_remaining_count_with_selectors(core, five):
    page = core.list_namespaced_pod("default", limit=2, field_selector="status.phase=Pending")
    assert len(page.items) == 2 and page.metadata._continue
    assert page.metadata.remaining_item_count is None


@pytest.fixture
def labelled(core):
    core.create_namespaced_pod("default", quiet("a", {"tier": "gpu", "team": "x"}))
    core.create_namespaced_pod("default", quiet("b", {"tier": "cpu", "team": "y"}))
    core.create_namespaced_pod("default", quiet("c", {"tier": "gpu"}))


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("tier=gpu", ["a", "c"]),
        ("tier==gpu", ["a", "c"]),
        ("tier!=gpu", ["b"]),
        ("team!=x", ["b", "c"]),  # != also matches objects without the label
        ("team in (x, y)", ["a", "b"]),
        ("team notin (x)", ["b", "c"]),
        ("team", ["a", "b"]),
        ("!team", ["c"]),
        ("tier=gpu,team", ["a"]),
        ("tier in (gpu),!team", ["c"]),
        ("", ["a", "b", "c"]),
    ],
)
def test_label_selector_operators(core, labelled, selector, expected):
    assert names(core.list_namespaced_pod("default", label_selector=selector)) == expected


def test_an_unparsable_label_selector_is_400(core):
    with pytest.raises(client.ApiException) as err:
        core.list_namespaced_pod("default", label_selector="tier in gpu)")
    assert err.value.status == 400


def test_pod_field_selectors(kube, core):
    kube.add_node("n1", gpus=8)
    core.create_namespaced_pod("default", pod_body("bound"))
    core.create_namespaced_pod("default", quiet("floating"))
    kube.set_pod_phase("default", "bound", "Running")
    assert names(core.list_namespaced_pod("default", field_selector="spec.nodeName=n1")) == [
        "bound"
    ]
    assert names(core.list_namespaced_pod("default", field_selector="spec.nodeName=")) == [
        "floating"
    ]
    assert names(core.list_namespaced_pod("default", field_selector="status.phase!=Running")) == [
        "floating"
    ]
    assert names(
        core.list_namespaced_pod(
            "default", field_selector="metadata.name=bound,status.phase=Running"
        )
    ) == ["bound"]
    assert names(core.list_pod_for_all_namespaces(field_selector="metadata.namespace=default")) == [
        "bound",
        "floating",
    ]


def test_node_field_selector_on_unschedulable(kube, core):
    kube.add_node("n1")
    kube.add_node("n2", unschedulable=True)
    cordoned = core.list_node(field_selector="spec.unschedulable=true")
    assert names(cordoned) == ["n2"]
    assert names(core.list_node(field_selector="spec.unschedulable!=true")) == ["n1"]


def test_event_field_selectors_on_the_involved_object(core):
    for target in ("job-a", "job-b"):
        core.create_namespaced_event(
            "default",
            {
                "metadata": {"generateName": f"{target}."},
                "involvedObject": {
                    "kind": "Job",
                    "name": target,
                    "namespace": "default",
                    "apiVersion": "batch/v1",
                },
                "reason": "Waiting",
                "message": "waiting 12m of 40m budget",
                "type": "Normal",
            },
        )
    found = core.list_namespaced_event(
        "default", field_selector="involvedObject.kind=Job,involvedObject.name=job-b"
    )
    assert [e.involved_object.name for e in found.items] == ["job-b"]
    assert found.items[0].reason == "Waiting"


def test_an_unsupported_field_is_400(core, batch):
    with pytest.raises(client.ApiException) as err:
        core.list_namespaced_pod("default", field_selector="spec.priority=1")
    assert err.value.status == 400
    assert "field label not supported: spec.priority" in err.value.body
    with pytest.raises(client.ApiException) as err:
        batch.list_namespaced_job("default", field_selector="spec.nodeName=n1")
    assert err.value.status == 400


def test_selectors_apply_to_watches_too(core, labelled):
    from kubernetes import watch

    w, seen = watch.Watch(), []
    for event in w.stream(
        core.list_namespaced_pod, "default", label_selector="tier=gpu", timeout_seconds=10
    ):
        seen.append(event["object"].metadata.name)
        if len(seen) == 2:
            w.stop()
    assert seen == ["a", "c"]
