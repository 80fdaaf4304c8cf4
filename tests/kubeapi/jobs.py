"""The stand-in's Job controller and kubelet: Jobs create Pods, Pods report phases, Jobs follow.

Job controller (batch/v1 semantics, NonIndexed completion mode):
- A Job that is not suspended and not finished keeps ``min(parallelism, completions -
  succeeded)`` active Pods (work-queue Jobs without ``completions``: ``parallelism`` until one
  succeeds). Pods are made from the template with ``generateName: <job>-``, the template's
  labels (``job-name``, ``controller-uid`` and their ``batch.kubernetes.io/`` forms) and an
  ``ownerReference`` to the Job (``controller: true``, ``blockOwnerDeletion: true``).
- ``status`` follows the Pods: ``active``, ``ready``, ``succeeded``, ``failed`` (counted from
  the Job's Pods, zero counts omitted as the API does), ``startTime`` when it starts or
  resumes, ``completionTime`` and the ``Complete`` condition when ``completions`` Pods
  succeeded, the ``Failed`` condition (``BackoffLimitExceeded``) when more than
  ``backoffLimit`` Pods failed. Finished Jobs are left alone.
- Suspending deletes the active Pods, clears ``startTime`` and sets ``Suspended=True``;
  resuming sets ``Suspended=False`` (``JobResumed``) and a new ``startTime``.
- A refused pod create (PodSecurity, ...) records a Warning Event ``FailedCreate`` ("Error
  creating: <why>") on the Job, as the real controller does; the next sync tries again.

Kubelet: ``kubelet_report`` moves a bound Pod to Running, Succeeded or Failed (container
states and the Ready condition included); an unbound Pod cannot run.
"""

from __future__ import annotations

from typing import Any

from tests.kubeapi.metadata import timestamp
from tests.kubeapi.resources import BY_PATH
from tests.kubeapi.status import ApiError
from tests.kubeapi.store import Change, Obj, Store

PODS = BY_PATH[("", "v1", "pods")]
JOBS = BY_PATH[("batch", "v1", "jobs")]
EVENTS = BY_PATH[("", "v1", "events")]
TERMINAL = ("Succeeded", "Failed")


def _condition(status: dict[str, Any], kind: str) -> dict[str, Any] | None:
    return next((c for c in status.get("conditions") or [] if c.get("type") == kind), None)


def is_finished(job: Obj) -> bool:
    status = job.get("status") or {}
    return any(
        (c := _condition(status, kind)) is not None and c.get("status") == "True"
        for kind in ("Complete", "Failed")
    )


class JobController:
    def __init__(self, store: Store) -> None:
        self.store = store

    def observe(self, change: Change) -> None:
        if change.rt is JOBS and change.type != "DELETED":
            meta = change.obj["metadata"]
            self.sync(meta["namespace"], meta["name"])
        elif change.rt is PODS:
            for ref in change.obj["metadata"].get("ownerReferences") or []:
                if ref.get("kind") == "Job" and ref.get("controller"):
                    job = self.store.find(JOBS, change.obj["metadata"]["namespace"], ref["name"])
                    if job is not None and job["metadata"]["uid"] == ref.get("uid"):
                        self.sync(job["metadata"]["namespace"], ref["name"])

    def sync(self, ns: str, name: str) -> None:
        job = self.store.find(JOBS, ns, name)
        if job is None or job["metadata"].get("deletionTimestamp") or is_finished(job):
            return
        spec = job["spec"]
        uid = job["metadata"]["uid"]
        pods = [
            p
            for p in self.store.dependents(uid)
            if p["kind"] == "Pod"
            and any(
                r.get("uid") == uid and r.get("controller")
                for r in p["metadata"].get("ownerReferences") or ()
            )
        ]
        phases = [(p.get("status") or {}).get("phase", "Pending") for p in pods]
        succeeded, failed = phases.count("Succeeded"), phases.count("Failed")
        active = [p for p, phase in zip(pods, phases, strict=True) if phase not in TERMINAL]
        now = timestamp(self.store.now())
        status = dict(job.get("status") or {})
        conditions = [dict(c) for c in status.get("conditions") or []]
        if spec.get("suspend"):
            self._delete(active)
            active = []
            status.pop("startTime", None)
            _set_condition(conditions, "Suspended", "True", "JobSuspended", "Job suspended", now)
        else:
            if not status.get("startTime"):
                status["startTime"] = now
            if _condition({"conditions": conditions}, "Suspended"):
                _set_condition(conditions, "Suspended", "False", "JobResumed", "Job resumed", now)
            active = self._run(job, active, succeeded, failed, conditions, status, now)
        status.update(
            active=len(active),
            succeeded=succeeded,
            failed=failed,
            ready=sum(1 for p in active if p["status"].get("phase") == "Running"),
        )
        for key in ("active", "succeeded", "failed"):
            if not status[key]:
                del status[key]
        if conditions:
            status["conditions"] = conditions
        if status != (job.get("status") or {}):
            self.store.mutate(JOBS, ns, name, lambda o: o.__setitem__("status", status), "status")

    def _run(
        self,
        job: Obj,
        active: list[Obj],
        succeeded: int,
        failed: int,
        conditions: list[dict[str, Any]],
        status: dict[str, Any],
        now: str,
    ) -> list[Obj]:
        spec = job["spec"]
        completions, parallelism = spec.get("completions"), spec.get("parallelism", 1)
        if failed > spec.get("backoffLimit", 6):
            self._delete(active)
            _set_condition(
                conditions,
                "Failed",
                "True",
                "BackoffLimitExceeded",
                "Job has reached the specified backoff limit",
                now,
            )
            return []
        done = (
            (succeeded >= completions)
            if completions is not None
            else (succeeded > 0 and not active)
        )
        if done:
            self._delete(active)
            status["completionTime"] = now
            _set_condition(conditions, "Complete", "True", "", "", now)
            return []
        if completions is not None:
            wanted = min(parallelism, completions - succeeded)
        else:
            wanted = parallelism if succeeded == 0 else len(active)
        if len(active) > wanted:
            self._delete(active[wanted:])
            active = active[:wanted]
        while len(active) < wanted:
            try:
                active.append(self._create_pod(job))
            except ApiError as err:  # refused (PodSecurity, quota, a webhook): say so, retry later
                self._failed_create(job, err)
                break
        return active

    def _failed_create(self, job: Obj, err: ApiError) -> None:
        """The Warning Event a real Job controller records when a pod create is refused."""
        meta, now = job["metadata"], timestamp(self.store.now())
        self.store.create(
            EVENTS,
            meta["namespace"],
            {
                "metadata": {"generateName": f"{meta['name']}."},
                "involvedObject": {
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "name": meta["name"],
                    "namespace": meta["namespace"],
                    "uid": meta["uid"],
                },
                "reason": "FailedCreate",
                "type": "Warning",
                "count": 1,
                "message": f"Error creating: {err.message}",
                "source": {"component": "job-controller"},
                "firstTimestamp": now,
                "lastTimestamp": now,
            },
        )

    def _create_pod(self, job: Obj) -> Obj:
        meta, template = job["metadata"], job["spec"]["template"]
        tmeta = template.get("metadata") or {}
        pod = {
            "metadata": {
                "generateName": f"{meta['name']}-",
                "labels": dict(tmeta.get("labels") or {}),
                "annotations": dict(tmeta.get("annotations") or {}),
                "ownerReferences": [
                    {
                        "apiVersion": "batch/v1",
                        "kind": "Job",
                        "name": meta["name"],
                        "uid": meta["uid"],
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "spec": template.get("spec") or {},
        }
        if not pod["metadata"]["annotations"]:
            del pod["metadata"]["annotations"]
        return self.store.create(PODS, meta["namespace"], pod)

    def _delete(self, pods: list[Obj]) -> None:
        for pod in pods:
            meta = pod["metadata"]
            try:
                self.store.delete(PODS, meta["namespace"], meta["name"], "Background")
            except ApiError as err:
                if err.code != 404:
                    raise

    def kubelet_report(self, ns: str, name: str, phase: str, exit_code: int = 0) -> Obj:
        if phase not in ("Running", "Succeeded", "Failed"):
            raise ValueError(f"a kubelet reports Running, Succeeded or Failed, not {phase!r}")
        pod = self.store.get(PODS, ns, name)
        if not pod["spec"].get("nodeName"):
            raise ValueError(f"pod {ns}/{name} is not bound to a node; it cannot run")
        now = timestamp(self.store.now())

        def report(obj: Obj) -> None:
            status = obj.setdefault("status", {})
            status["phase"] = phase
            status.setdefault("startTime", now)
            if phase == "Running":
                state: dict[str, Any] = {"running": {"startedAt": now}}
            else:
                reason = "Completed" if phase == "Succeeded" else "Error"
                state = {"terminated": {"exitCode": exit_code, "reason": reason, "finishedAt": now}}
            status["containerStatuses"] = [
                {
                    "name": c["name"],
                    "image": c.get("image", ""),
                    "imageID": "",
                    "ready": phase == "Running",
                    "restartCount": 0,
                    "state": state,
                }
                for c in obj["spec"]["containers"]
            ]
            others = [c for c in status.get("conditions") or [] if c.get("type") != "Ready"]
            status["conditions"] = [
                *others,
                {"type": "Ready", "status": "True" if phase == "Running" else "False"},
            ]

        return self.store.mutate(PODS, ns, name, report, "status")


def _set_condition(
    conditions: list[dict[str, Any]], kind: str, state: str, reason: str, message: str, now: str
) -> None:
    for cond in conditions:
        if cond.get("type") == kind:
            if cond.get("status") != state:
                cond.update(
                    status=state,
                    reason=reason,
                    message=message,
                    lastTransitionTime=now,
                    lastProbeTime=now,
                )
            return
    conditions.append(
        {
            "type": kind,
            "status": state,
            "reason": reason,
            "message": message,
            "lastTransitionTime": now,
            "lastProbeTime": now,
        }
    )
