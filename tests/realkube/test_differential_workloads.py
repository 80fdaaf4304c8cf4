"""The differential test, continued: the kinds Starburst touches beside Jobs and Leases.

The same raw requests to the stand-in and to the real API server (``differential.Pair``), the
answers compared after normalisation; every difference not in ``KNOWN`` fails the test (each
known one is listed in ``tests.kubeapi``'s docstring). Covered:
- *Pods*: create, the status subresource moving the phase (Pending → Running → Succeeded),
  lists by the field selectors the adapter uses (``spec.nodeName``, ``status.phase``, the
  adapter's ``status.phase!=Succeeded,status.phase!=Failed``), and the scheduling-gate rules
  (a gate removed with a node selector added: allowed; a gate added, a selector changed or
  one added to an ungated pod: refused with the same causes);
- *Nodes*: create, ``status`` capacity and allocatable (``nodes/status``), cordon
  (``spec.unschedulable``) and the ``spec.unschedulable`` field selector;
- *Events*: create, and the ``involvedObject.*``, ``reason`` and ``type`` field selectors;
- the *Job controller* creating the pods of an unsuspended Job: how many, their labels,
  ``ownerReferences``, finalizers and template, and the Job's status; and suspending it again;
- *PodSecurity* ``restricted``: a pod refused (403, the message word for word), and a Job's
  pods refused at creation (``FailedCreate`` Events with the same message).

Pods are bound in their spec (``nodeName``) or gated, and Job pods name a scheduler that does
not run (``schedulerName``), so the real kube-scheduler never writes into what is compared.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from typing import Any

import pytest

from tests.kubeapi import KubeApiServer
from tests.realkube.differential import Endpoint, Pair, normalise
from tests.realkube.jobs import SECURE
from tests.support.controlplane import RESTRICTED, RealKube
from tests.support.waiting import wait_for

MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
#: differences known and accepted (listed in ``tests.kubeapi``'s docstring)
KNOWN = frozenset({
    "differs: body.message",  # error wording (the code, reason and causes' fields agree)
    "differs: body.details.causes[].message",
    "only stand-in: body.items[].kind", "only stand-in: body.items[].apiVersion",
    "only stand-in: [].kind", "only stand-in: [].apiVersion",
    # pods go at once: no grace period (and no generation bump for it)
    "only real: body.metadata.deletionGracePeriodSeconds", "differs: body.metadata.generation",
    # no TaintNodesByCondition: a new node has no not-ready taint (a real cluster's node
    # lifecycle controller removes it once the node is Ready)
    "only real: body.spec", "only real: body.spec.taints", "only real: body.items[].spec.taints",
    # the Job controller's bookkeeping (the stand-in's runs inside the write, in less detail)
    "only real: body.status.terminating", "only real: body.status.uncountedTerminatedPods",
    # no job-tracking finalizer on a Job's pods (the stand-in counts them synchronously)
    "only real: [].metadata.finalizers",
})  # fmt: skip


def assert_no_differences(pair: Pair) -> None:
    unknown = pair.unknown(KNOWN)
    assert not unknown, "differences not known:\n" + "\n".join(unknown)


@pytest.fixture
def pair(real_kube: RealKube) -> Iterator[Pair]:
    with KubeApiServer() as standin:
        p = Pair(
            Endpoint(standin.url),
            Endpoint(real_kube.url, real_kube.pki.admin_token, str(real_kube.pki.ca_cert)),
            server=standin,
        )
        namespace = f"diff-{secrets.token_hex(3)}"
        p.namespace = namespace
        p.same("POST", "/api/v1/namespaces", {"metadata": {"name": namespace}})
        # pods need the namespace's default ServiceAccount, which a controller makes
        wait_for(
            lambda: (
                p.real.call("GET", f"/api/v1/namespaces/{namespace}/serviceaccounts/default")[0]
                == 200
            ),
            timeout=60,
        )
        yield p
        real_kube.delete_namespace(namespace)


def container(name: str = "main", **extra: Any) -> dict[str, Any]:
    return {"name": name, "image": "busybox", "command": ["sleep", "1"], **extra}


def pod(name: str, node: str | None = None, gates: list[str] | None = None, **spec: Any) -> Any:
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "x"}},
        "spec": {
            "restartPolicy": "Never",
            "automountServiceAccountToken": False,
            "containers": [container()],
            **spec,
        },
    }
    if node:
        body["spec"]["nodeName"] = node
    if gates:
        body["spec"]["schedulingGates"] = [{"name": g} for g in gates]
    return body


def test_pods_and_their_phases_answer_alike(pair: Pair) -> None:
    ns = pair.namespace
    pods = f"/api/v1/namespaces/{ns}/pods"
    for name, node in (("p1", "n1"), ("p2", "n1"), ("p3", "n2")):
        pair.same("POST", pods, pod(name, node))
    pair.same("GET", f"{pods}/p1")
    running = {"status": {"phase": "Running"}}
    pair.same("PATCH", f"{pods}/p1/status", running, MERGE)
    pair.same("PATCH", f"{pods}/p2/status", {"status": {"phase": "Succeeded"}}, MERGE)
    pair.same("PATCH", f"{pods}/p3", {"status": {"phase": "Failed"}}, MERGE)  # ignored
    pair.same("GET", f"{pods}?fieldSelector=spec.nodeName%3Dn1")
    pair.same("GET", f"{pods}?fieldSelector=status.phase%3DRunning")
    pair.same("GET", f"{pods}?fieldSelector=status.phase!%3DSucceeded,status.phase!%3DFailed")
    pair.same("GET", "/api/v1/pods?fieldSelector=spec.nodeName%3Dn2")
    pair.same("GET", f"{pods}?fieldSelector=spec.image%3Dbusybox")  # not a field: 400
    pair.same("DELETE", f"{pods}/p3?gracePeriodSeconds=0")
    assert_no_differences(pair)


def test_scheduling_gate_rules_answer_alike(pair: Pair) -> None:
    ns = pair.namespace
    pods = f"/api/v1/namespaces/{ns}/pods"
    pair.same("POST", pods, pod("gated", gates=["starburst.io/placement", "other"]))
    pair.same("POST", pods, pod("sel", gates=["g"], nodeSelector={"zone": "a"}))
    pair.same("POST", pods, pod("free", node="n1"))
    release = [
        {"op": "test", "path": "/spec/schedulingGates/0/name", "value": "starburst.io/placement"},
        {"op": "remove", "path": "/spec/schedulingGates/0"},
        {"op": "add", "path": "/spec/nodeSelector", "value": {"kubernetes.io/hostname": "n1"}},
    ]
    pair.same("PATCH", f"{pods}/gated", release, JSON_PATCH)  # allowed: still gated by "other"
    pair.same(  # a gate added: refused
        "PATCH",
        f"{pods}/gated",
        {"spec": {"schedulingGates": [{"name": "other"}, {"name": "new"}]}},
        MERGE,
    )
    pair.same(  # a selector changed while gated: refused
        "PATCH", f"{pods}/sel", {"spec": {"nodeSelector": {"zone": "b"}}}, MERGE
    )
    pair.same(  # a selector key added while gated: allowed
        "PATCH", f"{pods}/sel", {"spec": {"nodeSelector": {"rack": "r1"}}}, MERGE
    )
    pair.same(  # a gate added to an ungated pod, a selector added to it: refused
        "PATCH", f"{pods}/free", {"spec": {"schedulingGates": [{"name": "late"}]}}, MERGE
    )
    pair.same("PATCH", f"{pods}/free", {"spec": {"nodeSelector": {"zone": "a"}}}, MERGE)
    pair.same("PATCH", f"{pods}/sel", {"spec": {"schedulingGates": None}}, MERGE)  # all gone
    pair.same("PATCH", f"{pods}/sel", {"spec": {"nodeSelector": {"more": "x"}}}, MERGE)
    pair.same("GET", f"{pods}/gated")
    assert_no_differences(pair)


def test_nodes_answer_alike(pair: Pair, real_kube: RealKube) -> None:
    name = f"{pair.namespace}-node"
    nodes = "/api/v1/nodes"
    try:
        pair.same("POST", nodes, {"metadata": {"name": name, "labels": {"gpu": "a100"}}})
        resources = {"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": "4", "pods": "110"}
        pair.same(
            "PATCH",
            f"{nodes}/{name}/status",
            {"status": {"capacity": resources, "allocatable": resources}},
            MERGE,
        )
        pair.same("GET", f"{nodes}/{name}")
        pair.same("PATCH", f"{nodes}/{name}", {"spec": {"unschedulable": True}}, MERGE)
        pair.same("GET", f"{nodes}?fieldSelector=spec.unschedulable%3Dtrue,metadata.name%3D{name}")
        pair.same("GET", f"{nodes}?fieldSelector=spec.unschedulable%3Dfalse,metadata.name%3D{name}")
        pair.same("GET", f"{nodes}?labelSelector=gpu%3Da100")
    finally:
        real_kube.request("DELETE", f"{nodes}/{name}")
    assert_no_differences(pair)


def event(
    name: str, job: str, uid: str, reason: str, kind: str = "Warning", namespace: str = ""
) -> Any:
    involved = {"kind": "Job", "name": job, "uid": uid, "apiVersion": "batch/v1"}
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name},
        "involvedObject": {**involved, **({"namespace": namespace} if namespace else {})},
        "reason": reason,
        "message": f"{reason} of {job}",
        "type": kind,
        "source": {"component": "starburst"},
        "reportingComponent": "starburst.io/controller",
        "reportingInstance": "test",
        "count": 1,
    }


def test_events_and_their_field_selectors_answer_alike(pair: Pair) -> None:
    ns = pair.namespace
    events = f"/api/v1/namespaces/{ns}/events"
    uid = "11111111-2222-3333-4444-555555555555"
    pair.same("POST", events, event("e1", "a", uid, "FailedCreate", namespace=ns))
    pair.same("POST", events, event("e2", "a", uid, "Started", kind="Normal", namespace=ns))
    pair.same("POST", events, event("e3", "b", "x", "FailedCreate", namespace=ns))
    pair.same("POST", events, event("bad", "b", "x", "FailedCreate"))  # 422: no namespace
    pair.same("POST", events, event("bad", "b", "x", "FailedCreate", namespace="other"))
    pair.same("GET", f"{events}/bad")  # 404
    for selector in (
        "involvedObject.name%3Da",
        f"involvedObject.uid%3D{uid}",
        "involvedObject.kind%3DJob,reason%3DFailedCreate",
        "type%3DWarning",
        "involvedObject.namespace%3Dnone",
        "involvedObject.bogus%3Dx",  # 400
    ):
        pair.same("GET", f"{events}?fieldSelector={selector}")
    pair.same("GET", f"{events}/e2")
    assert_no_differences(pair)


def job(name: str, pods: int, suspend: bool, secure: bool = False) -> Any:
    main = container(securityContext=SECURE) if secure else container()
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "labels": {"starburst.io/queue": "q"}},
        "spec": {
            "suspend": suspend,
            "parallelism": pods,
            "completions": pods,
            "backoffLimit": 0,
            "template": {
                "metadata": {"labels": {"team": "ml"}},
                "spec": {
                    "restartPolicy": "Never",
                    "schedulerName": "nobody",  # not the real kube-scheduler's
                    "automountServiceAccountToken": False,
                    "containers": [main],
                },
            },
        },
    }


def pods_of(endpoint: Endpoint, ns: str, name: str) -> list[Any]:
    status, body = endpoint.call(
        "GET", f"/api/v1/namespaces/{ns}/pods?labelSelector=batch.kubernetes.io%2Fjob-name%3D{name}"
    )
    assert status == 200, body
    items = [p for p in body["items"] if not p["metadata"].get("deletionTimestamp")]
    return sorted(
        (normalise(p) for p in items), key=lambda p: str(p["metadata"].get("generateName"))
    )


def test_the_job_controller_makes_the_same_pods(pair: Pair) -> None:
    ns = pair.namespace
    jobs = f"/apis/batch/v1/namespaces/{ns}/jobs"
    pair.same("POST", jobs, job("work", pods=3, suspend=True))
    pair.same("PATCH", f"{jobs}/work", {"spec": {"suspend": False}}, MERGE)
    wait_for(lambda: len(pods_of(pair.real, ns, "work")) == 3, timeout=60)
    wait_for(lambda: pair.real.call("GET", f"{jobs}/work")[1]["status"].get("active") == 3)
    pair.compare(
        "the Job's pods", pods_of(pair.standin, ns, "work"), pods_of(pair.real, ns, "work")
    )
    pair.same("GET", f"{jobs}/work")
    pair.same("PATCH", f"{jobs}/work", {"spec": {"suspend": True}}, MERGE)
    wait_for(lambda: pods_of(pair.real, ns, "work") == [], timeout=60)
    wait_for(lambda: "active" not in pair.real.call("GET", f"{jobs}/work")[1]["status"])
    pair.compare("pods after suspending", pods_of(pair.standin, ns, "work"), [])
    pair.same("GET", f"{jobs}/work")
    assert_no_differences(pair)


def test_podsecurity_restricted_refuses_alike(pair: Pair) -> None:
    ns = f"{pair.namespace}-r"
    pair.same("POST", "/api/v1/namespaces", {"metadata": {"name": ns, "labels": RESTRICTED}})
    wait_for(
        lambda: pair.real.call("GET", f"/api/v1/namespaces/{ns}/serviceaccounts/default")[0] == 200,
        timeout=60,
    )
    pods = f"/api/v1/namespaces/{ns}/pods"
    open_pod = pod("open", node="n1")
    pair.same("POST", pods, open_pod)
    root = pod("root", node="n1")
    root["spec"]["containers"] = [container(securityContext={**SECURE, "runAsUser": 0})]
    pair.same("POST", pods, root)
    fine = pod("fine", node="n1")
    fine["spec"]["containers"] = [container(securityContext=SECURE)]
    pair.same("POST", pods, fine)
    jobs = f"/apis/batch/v1/namespaces/{ns}/jobs"
    pair.same("POST", jobs, job("refused", pods=1, suspend=False))

    def refusals(endpoint: Endpoint) -> list[Any]:
        _, body = endpoint.call(
            "GET",
            f"/api/v1/namespaces/{ns}/events?fieldSelector=involvedObject.name%3Drefused,"
            "reason%3DFailedCreate",
        )
        return [
            {k: e.get(k) for k in ("type", "reason", "message", "source", "involvedObject")}
            for e in body["items"]
        ]

    wait_for(lambda: refusals(pair.real), timeout=60)
    # (the real controller's recorder counts repeats in one Event; the stand-in's makes more)
    pair.compare("FailedCreate", refusals(pair.standin)[:1], refusals(pair.real)[:1])
    assert_no_differences(pair)
