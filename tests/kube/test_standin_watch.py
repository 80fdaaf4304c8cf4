"""Watches, as the API documentation describes them ("Efficient detection of changes").

- from a resourceVersion: only changes after it, in order;
- without one: the current objects as ADDED, then changes;
- ``allowWatchBookmarks``: BOOKMARK events carrying only a resourceVersion;
- ``timeoutSeconds``: the server ends the stream;
- a resourceVersion older than the history window: an ERROR event with a 410 ``Expired``
  Status (the official client raises ``ApiException(410)``);
- selectors: an object that starts or stops matching arrives as ADDED or DELETED.
"""

from __future__ import annotations

import json
import threading
import time

import pytest
from kubernetes import client, watch

from tests.kube.builders import pod_body as scheduled_pod_body


def pod_body(name=None, labels=None):
    """A pod no scheduler takes (``schedulerName: manual``), so only the test changes it."""
    return scheduled_pod_body(name, labels, schedulerName="manual")


def events(func, *args, **kwargs):
    return [(e["type"], e["raw_object"]) for e in watch.Watch().stream(func, *args, **kwargs)]


def until_marker(core, *args, **kwargs):
    """The events before the ``zz-marker`` pod's ADDED (which the caller creates last).

    The marker proves the stream is caught up without waiting for a timeout.
    """
    core.create_namespaced_pod("default", pod_body("zz-marker", {"queue": "yes"}))
    w, seen = watch.Watch(), []
    for event in w.stream(core.list_namespaced_pod, *args, timeout_seconds=10, **kwargs):
        if event["raw_object"]["metadata"].get("name") == "zz-marker":
            w.stop()
            continue
        seen.append((event["type"], event["raw_object"]))
    return seen


def test_watch_from_a_resource_version_sends_only_newer_changes(core):
    core.create_namespaced_pod("default", pod_body("old"))
    rv = core.list_namespaced_pod("default").metadata.resource_version
    core.create_namespaced_pod("default", pod_body("new"))
    core.delete_namespaced_pod("old", "default")
    seen = until_marker(core, "default", resource_version=rv)
    assert [(t, o["metadata"]["name"]) for t, o in seen] == [("ADDED", "new"), ("DELETED", "old")]
    rvs = [int(o["metadata"]["resourceVersion"]) for _, o in seen]
    assert rvs == sorted(rvs) and rvs[0] > int(rv)


def test_watch_without_a_resource_version_starts_with_the_current_state(core):
    core.create_namespaced_pod("default", pod_body("a"))
    core.create_namespaced_pod("default", pod_body("b"))
    w = watch.Watch()
    seen = []
    for event in w.stream(core.list_namespaced_pod, "default", timeout_seconds=10):
        seen.append((event["type"], event["object"].metadata.name))
        if len(seen) == 2:
            w.stop()
    assert seen == [("ADDED", "a"), ("ADDED", "b")]


def test_watch_delivers_changes_made_while_it_waits(core):
    rv = core.list_namespaced_pod("default").metadata.resource_version
    w = watch.Watch()
    seen: list[str] = []

    def make_pods() -> None:
        core.create_namespaced_pod("default", pod_body("live"))

    stream = w.stream(core.list_namespaced_pod, "default", resource_version=rv, timeout_seconds=5)
    timer = threading.Timer(0.2, make_pods)
    timer.start()
    for event in stream:
        seen.append(f"{event['type']} {event['object'].metadata.name}")
        w.stop()
    timer.join()
    assert seen == ["ADDED live"]


def test_bookmarks_carry_only_a_resource_version(core):
    created = core.create_namespaced_pod("default", pod_body("a"))
    seen = events(
        core.list_namespaced_pod,
        "default",
        resource_version=created.metadata.resource_version,
        allow_watch_bookmarks=True,
        timeout_seconds=1,
    )
    assert [t for t, _ in seen] == ["BOOKMARK"]
    bookmark = seen[0][1]
    assert bookmark["kind"] == "Pod"
    assert set(bookmark["metadata"]) == {"resourceVersion"}
    assert int(bookmark["metadata"]["resourceVersion"]) >= int(created.metadata.resource_version)


def test_no_bookmarks_unless_asked(core):
    rv = core.create_namespaced_pod("default", pod_body("a")).metadata.resource_version
    assert until_marker(core, "default", resource_version=rv) == []


def test_bookmarks_are_sent_periodically(kube, core):
    kube.bookmark_interval = 0.1
    rv = core.create_namespaced_pod("default", pod_body("a")).metadata.resource_version
    w, kinds = watch.Watch(), []
    for event in w.stream(
        core.list_namespaced_pod,
        "default",
        resource_version=rv,
        allow_watch_bookmarks=True,
        timeout_seconds=10,
    ):
        kinds.append(event["type"])
        if len(kinds) == 3:
            w.stop()
    assert kinds == ["BOOKMARK"] * 3  # three before the 10 s timeout: they are periodic


def test_timeout_seconds_ends_the_stream(core):
    rv = core.list_namespaced_pod("default").metadata.resource_version
    resp = core.list_namespaced_pod(
        "default", watch=True, resource_version=rv, timeout_seconds=1, _preload_content=False
    )
    try:
        assert resp.data == b""  # the server closed the stream: reading ends
    finally:
        resp.release_conn()


def test_an_expired_resource_version_is_410_gone(kube, core):
    rv = core.create_namespaced_pod("default", pod_body("a")).metadata.resource_version
    core.create_namespaced_pod("default", pod_body("b"))
    kube.compact()
    with pytest.raises(client.ApiException) as err:
        events(core.list_namespaced_pod, "default", resource_version=rv, timeout_seconds=1)
    assert err.value.status == 410
    assert "Expired" in err.value.reason


def test_expiry_arrives_as_an_error_event_with_a_status(kube, core):
    rv = core.create_namespaced_pod("default", pod_body("a")).metadata.resource_version
    core.create_namespaced_pod("default", pod_body("b"))
    kube.compact()
    resp = core.list_namespaced_pod(
        "default", watch=True, resource_version=rv, timeout_seconds=5, _preload_content=False
    )
    try:
        assert resp.status == 200  # the failure travels inside the stream, as on a real server
        lines = resp.data.decode().splitlines()
    finally:
        resp.release_conn()
    assert len(lines) == 1  # and the stream ends right after it
    event = json.loads(lines[0])
    assert event["type"] == "ERROR"
    status = event["object"]
    assert status["kind"] == "Status" and status["code"] == 410 and status["reason"] == "Expired"


def test_history_is_a_bounded_window(kube, core):
    kube.store.window = 5
    rv = core.create_namespaced_pod("default", pod_body("first")).metadata.resource_version
    for i in range(12):
        core.create_namespaced_pod("default", pod_body(f"p{i}"))
    with pytest.raises(client.ApiException) as err:
        events(core.list_namespaced_pod, "default", resource_version=rv, timeout_seconds=1)
    assert err.value.status == 410
    recent = core.list_namespaced_pod("default").metadata.resource_version
    assert until_marker(core, "default", resource_version=recent) == []


def test_a_label_change_into_the_selector_is_added_and_out_of_it_deleted(core):
    core.create_namespaced_pod("default", pod_body("a", {"queue": "no"}))
    rv = core.list_namespaced_pod("default").metadata.resource_version
    core.patch_namespaced_pod("a", "default", {"metadata": {"labels": {"queue": "yes"}}})
    core.patch_namespaced_pod("a", "default", {"metadata": {"labels": {"extra": "1"}}})
    left = core.patch_namespaced_pod("a", "default", {"metadata": {"labels": {"queue": "no"}}})
    seen = until_marker(core, "default", resource_version=rv, label_selector="queue=yes")
    assert [t for t, _ in seen] == ["ADDED", "MODIFIED", "DELETED"]
    # as the real watch cache sends it: the last state that matched, at the change's version
    gone = seen[-1][1]["metadata"]
    assert gone["labels"] == {"queue": "yes", "extra": "1"}
    assert gone["resourceVersion"] == left.metadata.resource_version


def test_watch_is_scoped_to_its_namespace_and_resource(core):
    core.create_namespace({"metadata": {"name": "other"}})
    rv = core.list_namespaced_pod("default").metadata.resource_version
    core.create_namespaced_pod("other", pod_body("elsewhere"))
    core.create_namespace({"metadata": {"name": "third"}})
    core.create_namespaced_pod("default", pod_body("here"))
    seen = until_marker(core, "default", resource_version=rv)
    assert [o["metadata"]["name"] for _, o in seen] == ["here"]


def test_cut_watches_ends_open_streams(kube, core):
    rv = core.list_namespaced_pod("default").metadata.resource_version
    w = watch.Watch()
    stream = w.stream(core.list_namespaced_pod, "default", resource_version=rv, timeout_seconds=30)
    cut: list[int] = []

    def cut_when_open() -> None:
        while not kube.watches:
            time.sleep(0.01)
        cut.append(kube.cut_watches())

    timer = threading.Thread(target=cut_when_open)
    timer.start()
    assert list(stream) == []  # ends long before 30 s because the server dropped it
    timer.join()
    assert cut == [1]
