"""The Kubernetes adapter: the private cluster as a Kubernetes cluster (``Cluster`` port).

Users create ordinary ``batch/v1`` Jobs, suspended (``spec.suspend: true``) and labelled
``starburst.io/queue``. ``KubernetesCluster`` watches those Jobs (→ submissions), the Nodes
and the Pods (→ free capacity per node), starts a Job on-prem with one patch that pins its
Pods to the chosen nodes and unsuspends it, leaves a burst Job suspended with annotations, and
reports Job completion and failure from the Job's conditions. Every decision is also written
on the Job (annotations) and as a Kubernetes Event carrying the decision's reason.

Modules: ``conversion`` (Kubernetes objects ↔ domain values, pure), ``quantity``,
``informer`` (list + watch with resume, relist on 410 and backoff), ``retry`` (error
classification and backoff), ``cluster`` (``KubernetesCluster``), ``rbac.yaml`` (the RBAC
rules the adapter needs, for the Helm chart).

The ``kubernetes`` package is imported lazily (only ``cluster``/``informer`` import it), so
``import starburst.adapters.kubernetes`` stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from starburst.adapters.kubernetes.cluster import KubernetesCluster, KubernetesSettings

__all__ = ["KubernetesCluster", "KubernetesSettings"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from starburst.adapters.kubernetes import cluster

        return getattr(cluster, name)
    raise AttributeError(name)
