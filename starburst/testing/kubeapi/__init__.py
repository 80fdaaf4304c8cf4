"""A Kubernetes API stand-in server for tests, driven through the official ``kubernetes`` client.

No real kube-apiserver can run on the project's machines, so this package serves the parts of
the Kubernetes API that Starburst depends on, with the real server's semantics: server-set
metadata, resourceVersions, list chunking, watches with bookmarks and 410 Gone, label and
field selectors, the three patch formats, a status subresource, optimistic concurrency,
finalizers, ownerReference cascades, plus a tiny Job controller, scheduler and kubelet; the
validation rules Starburst's requests touch (``validation``: node field selectors, scheduling
gates) and PodSecurity ``restricted`` (``podsecurity``) as a real server enforces them; and an
``audit`` list of every request (verb, resource, User-Agent) for RBAC checks.

Modules: ``store`` (objects, history, cascades), ``watch``, ``paging``, ``selectors``,
``patch``, ``admission`` (defaulting and validation), ``resources`` (types and discovery),
``handler`` (HTTP routing), ``jobs`` and ``scheduling`` (the in-cluster controllers),
``validation``, ``podsecurity``, ``quantity``, ``status`` (API errors), ``server``
(``KubeApiServer``) and ``__main__`` (``python -m starburst.testing.kubeapi --port N``),
``fixtures`` (pytest fixtures).

Where it knowingly differs from a real API server (none of it is something Starburst relies
on): controllers run synchronously inside the writing request (a Job's Pods exist when the
create returns; a real cluster gets there moments later); Pods are deleted at once (no grace
period, no kubelet shutdown); namespace deletion is immediate; core/v1 and events.k8s.io/v1
Events are separate collections; no OpenAPI documents (``kubectl apply --validate=false``), no
server-side apply (415), no ``dryRun`` (400), no Table output (kubectl prints names and ages);
list items keep ``kind``/``apiVersion``; no authentication or RBAC (any token is accepted).
"""

from starburst.testing.kubeapi.server import KubeApiServer, Taint

__all__ = ["KubeApiServer", "Taint"]
