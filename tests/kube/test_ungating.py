"""The gated-pod releases of a multi-node start: counts, and what a failed write does."""

from __future__ import annotations

from typing import Any

from kubernetes.client import ApiException

from starburst.adapters.kubernetes.pinning import GATE
from starburst.adapters.kubernetes.ungating import Release, Ungater

HOSTS = {"a": "host-a", "b": "host-b"}


def gated_pod(name: str, owner: str = "uid-1") -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "namespace": "ns",
            "labels": {"batch.kubernetes.io/controller-uid": owner},
        },
        "spec": {"schedulingGates": [{"name": GATE}], "containers": [{"name": "m"}]},
        "status": {"phase": "Pending"},
    }


class FlakyCore:
    """Answers each pod patch with the next planned error (None: success)."""

    def __init__(self, *plan: ApiException | None) -> None:
        self.plan, self.calls = list(plan), 0

    def patch_namespaced_pod(self, name: str, namespace: str, body: Any, **_: Any) -> Any:
        self.calls += 1
        error = self.plan.pop(0) if self.plan else None
        if error is not None:
            raise error
        return _Response()


class _Response:
    def read(self) -> bytes:
        return b"{}"

    def release_conn(self) -> None:
        pass


def ungater_with(pods: int) -> tuple[Ungater, list[Release]]:
    ungater = Ungater(lambda uid: ([("a", 6), ("b", 3)], 3) if uid == "uid-1" else None)
    for i in range(pods):
        ungater.observe("ADDED", gated_pod(f"p{i}"), "uid-1", HOSTS)
    return ungater, ungater.decide(HOSTS)


def test_pods_go_to_nodes_in_the_placements_counts():
    ungater, releases = ungater_with(4)
    assert [r.node for r in releases] == ["a", "a", "b"]  # the fourth waits for a slot
    assert releases[0].patch[-1] == {
        "op": "add",
        "path": "/spec/nodeSelector",
        "value": {"kubernetes.io/hostname": "host-a"},
    }
    assert ungater.decide(HOSTS) == []
    ungater.observe("DELETED", gated_pod("p0"), "uid-1", HOSTS)  # a pod on a went away
    (again,) = ungater.decide(HOSTS)
    assert (again.key, again.node) == (("ns", "p3"), "a")


def test_a_transient_failure_is_retried_and_a_refusal_frees_the_slot():
    ungater, releases = ungater_with(1)
    core = FlakyCore(ApiException(status=503), None)
    undone: list[Release] = []
    ungater.send(core, releases, undone.append)
    assert core.calls == 2 and undone == []
    ungater, releases = ungater_with(1)
    core = FlakyCore(ApiException(status=422))
    ungater.send(core, releases, lambda r: (undone.append(r), ungater.undo(r)))
    assert core.calls == 1 and undone == releases
    (retried,) = ungater.decide(HOSTS)  # gated again: tried on the next event
    assert retried.key == ("ns", "p0")
