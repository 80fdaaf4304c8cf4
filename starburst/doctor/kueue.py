"""The Kueue check: whether the cluster runs Kueue, and which of its queues Starburst bursts for.

Kueue is found by API discovery (the ``kueue.x-k8s.io`` group); its ClusterQueues and
LocalQueues are listed and those opted in (``starburst.io/burst: "true"``, see
``adapters.kubernetes.kueue``) are named. Without Kueue the line is fine: Starburst's own
queue is all there is. Kueue's ``manageJobsWithoutQueueName`` lives in Kueue's own
configuration, which Starburst may not read: the line reminds that it must stay false.
"""

from __future__ import annotations

from starburst.doctor.checks import Check, failed
from starburst.settings import Settings

NAME = "kueue"
MANAGE_NOTE = "Kueue's manageJobsWithoutQueueName must stay false (its default)"


def kueue(settings: Settings) -> Check:
    from starburst.adapters.kubernetes.conversion import Conventions
    from starburst.adapters.kubernetes.kueue import GROUP, VERSION, KueueWorkloads, served
    from starburst.controller.wiring import kube_api_client
    from starburst.wallclock import WallClock

    try:
        api = kube_api_client(settings)
    except Exception as exc:
        return failed(NAME, exc, "set kubeconfig (or run in the cluster)")
    try:
        try:
            versions = served(api)
        except Exception as exc:
            return failed(NAME, exc, "check the kubeconfig's server and credentials")
        if not versions:
            return Check(NAME, True, f"not installed ({GROUP} not served): Starburst's queue only")
        if VERSION not in versions:
            return Check(
                NAME, True, f"{GROUP} serves {', '.join(versions)}, not {VERSION}: its "
                "Workloads are not followed", "upgrade Kueue to v0.15 or later", warning=True,
            )  # fmt: skip
        try:
            cluster_queues, local_queues = KueueWorkloads(
                api, WallClock(), Conventions()
            ).opted_in()
        except Exception as exc:
            return failed(NAME, exc, "kubectl apply -f starburst/adapters/kubernetes/rbac.yaml")
    finally:
        api.close()
    return Check(NAME, True, describe(cluster_queues, local_queues))


def describe(
    cluster_queues: dict[str, bool], local_queues: dict[tuple[str, str], tuple[str, bool]]
) -> str:
    """One line: the queues, and those Starburst bursts for."""
    opted = [f"ClusterQueue {name}" for name, on in sorted(cluster_queues.items()) if on]
    opted += [f"LocalQueue {ns}/{name}" for (ns, name), (_, on) in sorted(local_queues.items())
              if on]  # fmt: skip
    listed = ", ".join(sorted(cluster_queues)) or "none"
    head = f"installed; ClusterQueues: {listed}; {len(local_queues)} LocalQueue(s)"
    bursts = (
        "Starburst bursts for " + ", ".join(opted)
        if opted
        else "no queue opted in to bursting (annotate one starburst.io/burst=true)"
    )
    return f"{head}; {bursts}; {MANAGE_NOTE}"
