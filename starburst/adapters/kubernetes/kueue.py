"""Kueue's Workloads, for Starburst as Kueue's burst policy (``controller.kueue_burst``).

Kueue (``kueue.x-k8s.io/v1beta2``) admits Jobs on-prem: a Job labelled
``kueue.x-k8s.io/queue-name`` gets a *Workload* in that LocalQueue, whose ClusterQueue gives it
quota (cohorts, fair sharing, preemption); Kueue then unsuspends the Job. Starburst adds the
cloud burst Kueue lacks, for the queues an admin opts in:

- *Opted in*: a ClusterQueue or a LocalQueue annotated ``starburst.io/burst: "true"`` (a
  LocalQueue's annotation opts in only that namespace's queue).
- *States* of a Workload (``workload_state``): ``pending`` (active, no quota reserved),
  ``admitted`` (quota reserved or admitted: Kueue runs it on-prem), ``finished``,
  ``inactive`` (``spec.active: false``) and ``burst`` (inactive, with Starburst's
  ``starburst.io/burst-decided`` annotation: Starburst took it out of Kueue's queue).
- *Taking it out* (``deactivate``): one JSON merge patch that sets ``spec.active: false``
  and the annotation together, carrying the resourceVersion the decision was made on, so a
  Workload Kueue reserved quota for in the meantime is never taken (409: the next look sees
  it admitted). ``spec.active`` is Kueue's documented switch: an inactive Workload is never
  admitted, and Kueue keeps its Job suspended.

- *Condition* (``set_condition``): Starburst's decision as one condition of its own type,
  ``starburst.io/Burst``, in the Workload's ``status.conditions`` (status False while it
  waits or after Kueue admitted it, True once it burst; the reason says which:
  ``REASONS``). Kueue's API keeps that list as a map keyed by ``type`` (``listType=map``)
  and validates entries as ``metav1.Condition`` (a domain-prefixed type is valid); Kueue
  writes its own conditions by server-side apply (field manager ``kueue-admission`` etc.),
  each naming only the types it owns, so a condition applied by another field manager is
  kept. Starburst applies its one condition the same way (field manager ``starburst``,
  ``workloads/status``), never Kueue's types (``Admitted``, ``Finished``...): those keep
  meaning what Kueue's controllers and ``kubectl get workloads`` make of them.
- *On the Job*, the same decision goes in annotations (``starburst.io/burst-status``,
  ``starburst.io/burst-message``) and Events, not in ``status.conditions``: a Job's status
  is the Job controller's (the only writer unless ``spec.managedBy`` names another), its
  conditions list is atomic (``listType=atomic``: any write replaces the whole list the
  controller keeps), and the RBAC to write ``jobs/status`` would let Starburst forge the
  ``Complete``/``Failed`` conditions that TTL clean-up, Kueue and ``kubectl wait`` act on.

Reads list the Workloads, LocalQueues and ClusterQueues each look (no informers); writes are
a patch, the condition (server-side apply) and best-effort Events and annotations.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

from starburst.adapters.kubernetes import conversion as conv
from starburst.adapters.kubernetes.retry import status_of, translate
from starburst.core.job import Job
from starburst.core.kueue_jobs import CLUSTER_QUEUE, LOCAL_QUEUE, WORKLOAD
from starburst.core.ports import Clock

log = logging.getLogger(__name__)
Obj = dict[str, Any]
GROUP, VERSION = "kueue.x-k8s.io", "v1beta2"
OPT_IN = "starburst.io/burst"
DECIDED = "starburst.io/burst-decided"
#: Starburst's own condition type on a Workload (see the module)
CONDITION = "starburst.io/Burst"
#: the condition's reasons, each with its status: True once the job left for the cloud
REASONS = {
    "Waiting": False,  # pending in Kueue's queue within its wait budget
    "AdmittedOnPrem": False,  # Kueue admitted it before the budget ran out
    "Cancelled": False,  # cancelled in Starburst while waiting: Kueue alone decides for it
    "Burst": True,  # taken out of Kueue's queue, launched (or running) in the cloud
    "CloudSucceeded": True,
    "CloudFailed": True,
    "CloudCancelled": True,
}
#: the Job's annotations mirroring the condition (its reason, its message)
JOB_STATUS, JOB_MESSAGE = "starburst.io/burst-status", "starburst.io/burst-message"
FIELD_MANAGER = "starburst"
TIMEOUT_S = 10


@dataclass(frozen=True, slots=True)
class KueueWorkload:
    """A Workload of an opted-in queue with its Job (``job`` None: the Job is gone) and
    Starburst's condition on it as last written (``condition`` None: none yet)."""

    namespace: str
    name: str
    local_queue: str
    cluster_queue: str
    state: str
    resource_version: str
    uid: str
    job: Obj | None
    condition: Obj | None = None

    @property
    def condition_reason(self) -> str | None:
        return None if self.condition is None else str(self.condition.get("reason", ""))

    @property
    def job_id(self) -> str:
        return conv.job_id(self.job) if self.job else f"{self.namespace}/{self.name}"


def workload_state(workload: Obj) -> str:
    """pending | admitted | finished | inactive | burst (see the module)."""
    conditions = {
        c.get("type"): c.get("status")
        for c in (workload.get("status") or {}).get("conditions") or ()
    }
    if conditions.get("Finished") == "True":
        return "finished"
    if (workload.get("spec") or {}).get("active") is False:
        annotations = workload["metadata"].get("annotations") or {}
        return "burst" if DECIDED in annotations else "inactive"
    if conditions.get("Admitted") == "True" or conditions.get("QuotaReserved") == "True":
        return "admitted"
    return "pending"


class KueueWorkloads:
    """Kueue's API through an official ``ApiClient`` (see the module)."""

    def __init__(self, api_client: Any, clock: Clock, conventions: conv.Conventions) -> None:
        from kubernetes import client

        self._custom = client.CustomObjectsApi(api_client)
        self._batch = client.BatchV1Api(api_client)
        self._core = client.CoreV1Api(api_client)
        self._clock, self._conventions = clock, conventions

    def _list(self, plural: str) -> list[Obj]:
        try:
            reply = self._custom.list_cluster_custom_object(
                GROUP, VERSION, plural, _request_timeout=TIMEOUT_S
            )
        except Exception as err:
            raise translate(err, f"listing Kueue {plural}") from err
        return list(reply.get("items") or [])

    def opted_in(self) -> tuple[dict[str, bool], dict[tuple[str, str], tuple[str, bool]]]:
        """ClusterQueue name → opted in; (namespace, LocalQueue) → (its ClusterQueue, opted in
        by its own annotation)."""
        cluster_queues = {q["metadata"]["name"]: _opts_in(q) for q in self._list("clusterqueues")}
        local_queues = {
            (q["metadata"]["namespace"], q["metadata"]["name"]): (
                str((q.get("spec") or {}).get("clusterQueue", "")),
                _opts_in(q),
            )
            for q in self._list("localqueues")
        }
        return cluster_queues, local_queues

    def workloads(self) -> list[KueueWorkload]:
        """The Workloads of the opted-in queues, each with its Job, oldest first."""
        cluster_queues, local_queues = self.opted_in()
        found = []
        for workload in sorted(self._list("workloads"), key=_age):
            meta = workload["metadata"]
            local = str((workload.get("spec") or {}).get("queueName", ""))
            cq, local_opt_in = local_queues.get((meta["namespace"], local), ("", False))
            if not (local_opt_in or cluster_queues.get(cq, False)):
                continue
            found.append(
                KueueWorkload(
                    meta["namespace"], meta["name"], local, cq, workload_state(workload),
                    str(meta.get("resourceVersion", "")), str(meta.get("uid", "")),
                    self._job_of(workload), _condition(workload),
                )
            )  # fmt: skip
        return found

    def _job_of(self, workload: Obj) -> Obj | None:
        meta = workload["metadata"]
        owner = next((o for o in meta.get("ownerReferences") or () if o.get("kind") == "Job"), None)
        if owner is None:
            return None
        try:
            reply = self._batch.read_namespaced_job(
                owner["name"], meta["namespace"], _preload_content=False, _request_timeout=TIMEOUT_S
            )
        except Exception as err:
            if status_of(err) == 404:
                return None
            raise translate(err, f"reading the Job of Workload {meta['name']}") from err
        return dict(json.loads(reply.data))

    def job(self, workload: KueueWorkload) -> Job:
        """The Job of ``workload`` as a Starburst job: its size and what it runs (so it can
        burst), marked as Kueue's (``is_kueues``)."""
        assert workload.job is not None
        job = conv.job_from_k8s(workload.job, self._conventions)
        extra = {k: v for k, v in job.extra.items() if k not in ("k8s_name", "queue")}
        extra |= {
            "namespace": workload.namespace,
            "kueue_job": workload.job["metadata"]["name"],
            WORKLOAD: workload.name,
            LOCAL_QUEUE: workload.local_queue,
            CLUSTER_QUEUE: workload.cluster_queue,
        }
        return Job(**{**_fields(job), "extra": extra})

    def deactivate(self, workload: KueueWorkload, reason: str) -> bool:
        """Take the Workload out of Kueue's queue (see the module); False: it changed since
        it was read (409), so nothing was done."""
        body = {
            "metadata": {
                "resourceVersion": workload.resource_version,
                "annotations": {DECIDED: reason[:1000]},
            },
            "spec": {"active": False},
        }
        try:
            self._custom.patch_namespaced_custom_object(
                GROUP,
                VERSION,
                workload.namespace,
                "workloads",
                workload.name,
                body,
                _request_timeout=TIMEOUT_S,
            )  # fmt: skip (a JSON merge patch: the client's only kind for custom objects)
        except Exception as err:
            if status_of(err) == 409:
                return False
            raise translate(err, f"deactivating Workload {workload.name}") from err
        return True

    def set_condition(self, workload: KueueWorkload, reason: str, message: str) -> None:
        """Say Starburst's decision on the Workload (its ``starburst.io/Burst`` condition,
        one of ``REASONS``) and on its Job (annotations): see the module. The transition
        time moves only when the status does. Raises a ``StarburstError`` if the Workload
        refused it (Kueue's webhooks down, say); the Job's annotations are best effort."""
        status = "True" if REASONS[reason] else "False"
        old = workload.condition or {}
        since = old.get("lastTransitionTime") if old.get("status") == status else None
        condition = {
            "type": CONDITION,
            "status": status,
            "reason": reason,
            "message": message[:32768],  # metav1.Condition's longest message
            "lastTransitionTime": since or conv.rfc3339(self._clock.now()),
        }
        body = {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "Workload",
            "metadata": {"namespace": workload.namespace, "name": workload.name},
            "status": {"conditions": [condition]},
        }
        path = (
            f"/apis/{GROUP}/{VERSION}/namespaces/{workload.namespace}/workloads/"
            f"{workload.name}/status"
        )
        try:  # server-side apply: the client's custom-object methods only merge-patch
            self._custom.api_client.call_api(
                path, "PATCH",
                query_params=[("fieldManager", FIELD_MANAGER), ("force", "true")],
                header_params={"Content-Type": "application/apply-patch+yaml",
                               "Accept": "application/json"},
                body=body, auth_settings=["BearerToken"],
                _preload_content=False, _request_timeout=TIMEOUT_S,
            )  # fmt: skip
        except Exception as err:
            raise translate(err, f"setting the {CONDITION} condition of {workload.name}") from err
        self._annotate(workload, {JOB_STATUS: reason, JOB_MESSAGE: message[:1000]})

    def note(
        self, workload: KueueWorkload, reason: str, message: str, annotations: dict[str, str]
    ) -> None:
        """Say ``message`` in an Event on the Workload and on its Job, and annotate the Job
        (best effort: the decision is already in the store)."""
        now = self._clock.now()
        targets: list[Obj] = [
            {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Workload",
             "metadata": {"namespace": workload.namespace, "name": workload.name,
                          "uid": workload.uid}},
        ]  # fmt: skip
        if workload.job is not None:
            targets.append(workload.job)
        for target in targets:
            body = conv.event_body(target, reason, message, now)
            body["involvedObject"] |= {"apiVersion": target["apiVersion"], "kind": target["kind"]}
            try:
                self._core.create_namespaced_event(
                    workload.namespace, body, _request_timeout=TIMEOUT_S
                )
            except Exception:
                log.warning("could not record the %s event on %s", reason, workload.name)
        self._annotate(workload, annotations)

    def _annotate(self, workload: KueueWorkload, annotations: dict[str, str]) -> None:
        """Annotate the Job of ``workload`` (best effort)."""
        if workload.job is not None and annotations:
            try:
                self._batch.patch_namespaced_job(
                    workload.job["metadata"]["name"], workload.namespace,
                    {"metadata": {"annotations": annotations}}, _request_timeout=TIMEOUT_S,
                )  # fmt: skip
            except Exception:
                log.warning("could not annotate the Job of %s", workload.name)


def served(api_client: Any) -> list[str]:
    """The versions of Kueue's API group the API server serves ([] without Kueue)."""
    from kubernetes import client

    try:
        groups = client.ApisApi(api_client).get_api_versions(_request_timeout=TIMEOUT_S)
    except Exception as err:
        raise translate(err, "API discovery") from err
    for group in groups.groups or ():
        if group.name == GROUP:
            return [v.version for v in group.versions or ()]
    return []


def _condition(workload: Obj) -> Obj | None:
    """Starburst's condition on ``workload`` (None: none)."""
    for condition in (workload.get("status") or {}).get("conditions") or ():
        if condition.get("type") == CONDITION:
            return dict(condition)
    return None


def _opts_in(queue: Obj) -> bool:
    annotations = queue["metadata"].get("annotations") or {}
    return str(annotations.get(OPT_IN, "")).lower() == "true"


def _age(workload: Obj) -> tuple[str, str]:
    meta = workload["metadata"]
    return str(meta.get("creationTimestamp", "")), str(meta.get("uid", meta["name"]))


def _fields(job: Job) -> dict[str, Any]:
    from dataclasses import fields

    return {f.name: getattr(job, f.name) for f in fields(job)}
