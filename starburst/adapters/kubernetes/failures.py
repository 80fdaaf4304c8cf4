"""Why a Job that Starburst started failed, in the words every backend uses.

The Job's ``Failed`` condition says only how the Job controller gave up
(``BackoffLimitExceeded: Job has reached the specified backoff limit``, ``DeadlineExceeded:
Job was active longer than specified deadline``). The cause a researcher needs is in its
pods, so a failed Job's end is explained from them (``failure_reason``), as the local
backend explains a process's end (``core.failure``):
- *cause*: ``exit code N`` of the failed pod's container (``status.containerStatuses[].
  state.terminated.exitCode``), the pod (for ``kubectl``) and why Kubernetes gave up:
  ``exit code 7 in pod train-x7k2p (BackoffLimitExceeded)``, with the container's reason
  when it says more than "Error" (``exit code 137 in pod train-x7k2p (OOMKilled,
  BackoffLimitExceeded)``); a hit ``activeDeadlineSeconds`` is ``time limit 2h reached:
  killed``, as on the other backends; without a pod to read, the condition's own text;
- *output tail*: the last lines of that pod's log (``core.failure.with_output``).

Invariants: explaining never changes the cluster; it runs on a watch thread, outside the
adapter's lock, never in the scheduling pass; if the pods cannot be read (deleted already, an
API error), the end keeps the condition's text rather than being lost or delayed.
"""

from __future__ import annotations

import logging
from typing import Any

from starburst.adapters.kubernetes.pod_logs import NOT_STARTED, pod_output
from starburst.core.failure import TAIL_LINES, with_output
from starburst.core.time_limit import killed_after

log = logging.getLogger(__name__)
Obj = dict[str, Any]
#: container reasons that add nothing to "exit code N"
_PLAIN = {"Error", "Completed", ""}
#: how long one read may take on the watch thread
TIMEOUT_S = 10


def failure_reason(core: Any, job: Obj, condition: str) -> str:
    """The failed Job's cause and output tail; ``condition`` (its ``Failed`` condition's
    ``reason: message``) when its pods say nothing more."""
    meta, spec = job["metadata"], job.get("spec") or {}
    namespace, name = meta.get("namespace") or "default", meta["name"]
    cause = condition
    deadline = spec.get("activeDeadlineSeconds")
    if condition.startswith("DeadlineExceeded") and deadline:
        cause = killed_after(float(deadline))
    try:
        pods = core.list_namespaced_pod(
            namespace, label_selector=f"job-name={name}", _request_timeout=TIMEOUT_S
        ).items
    except Exception as err:  # the end must not wait for the API
        log.warning("could not read the pods of failed job %s/%s: %r", namespace, name, err)
        return cause
    pod, terminated = _failed_container(pods)
    if pod is None:
        return cause
    if terminated is not None and cause == condition:
        why = [str(terminated.reason or ""), condition.partition(":")[0]]
        said = ", ".join(w for w in why if w not in _PLAIN)
        cause = f"exit code {terminated.exit_code} in pod {pod.metadata.name}" + (
            f" ({said})" if said else ""
        )
    try:
        output = pod_output(core, namespace, pod.metadata.name, TAIL_LINES)
    except Exception as err:
        log.warning("could not read the log of pod %s/%s: %r", namespace, pod.metadata.name, err)
        output = ""
    return with_output(cause, "" if output == NOT_STARTED else output)


def _failed_container(pods: list[Any]) -> tuple[Any, Any]:
    """The pod that failed and its container's ``terminated`` state: the first (by name)
    with a non-zero exit code, else a ``Failed`` pod, else any (state None); (None, None)
    without pods."""
    ordered = sorted(pods, key=lambda p: p.metadata.name)
    for pod in ordered:
        for status in (pod.status.container_statuses if pod.status else None) or []:
            ended = status.state.terminated if status.state else None
            if ended is not None and ended.exit_code:
                return pod, ended
    failed = [p for p in ordered if p.status and p.status.phase == "Failed"]
    chosen = (failed or ordered or [None])[0]
    return chosen, None
