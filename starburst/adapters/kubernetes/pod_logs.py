"""What a Job's pods printed, read through the ``pods/log`` subresource.

Terms: a Job's pods are those labelled ``job-name=<job>`` (set by the Job controller); a pod
whose container has not started answers 400, shown as "no output yet" rather than an error.

Invariants: reading never changes the cluster; a Job without pods says so (never an empty
answer that looks like a silent job); each pod's output comes under a
``==> pod <name> <==`` line, pods in name order; API errors become Starburst errors
(transient or permanent), never SDK exceptions.
"""

from __future__ import annotations

from typing import Any

from starburst.adapters.kubernetes.retry import status_of, translate

NOT_STARTED = "(no output yet: the container has not started)\n"
NO_PODS = "(job {name} has no pods: it has not started, or its pods were removed)\n"


def job_output(core: Any, namespace: str, name: str, tail: int | None = None) -> str:
    """The output of every pod of Job ``namespace/name`` (the newest ``tail`` lines of each)."""
    try:
        pods = core.list_namespaced_pod(namespace, label_selector=f"job-name={name}")
    except Exception as err:
        raise translate(err, f"listing the pods of job {name}") from err
    parts = []
    for pod in sorted(pods.items, key=lambda p: p.metadata.name):
        pod_name = pod.metadata.name
        parts.append(f"==> pod {pod_name} <==\n{pod_output(core, namespace, pod_name, tail)}")
    return "".join(parts) or NO_PODS.format(name=name)


def pod_output(core: Any, namespace: str, pod: str, tail: int | None = None) -> str:
    """What one pod printed (its newest ``tail`` lines); ``NOT_STARTED`` before it ran."""
    try:
        return _text(
            core.read_namespaced_pod_log(pod, namespace, tail_lines=tail, _preload_content=False)
        )
    except Exception as err:
        if status_of(err) != 400:
            raise translate(err, f"reading the log of pod {pod}") from err
        return NOT_STARTED


def _text(response: Any) -> str:
    """The raw body. (Not the client's own decoding: it parses a log as JSON when it can,
    so a pod that printed ``42`` would come back as ``"42"`` without its newline.)"""
    try:
        return bytes(response.data).decode("utf-8", errors="replace")
    finally:
        response.release_conn()
