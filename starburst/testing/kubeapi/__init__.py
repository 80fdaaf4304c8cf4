"""A Kubernetes API stand-in server for tests, driven through the official ``kubernetes`` client.

It serves the parts of the Kubernetes API that Starburst depends on, in-process and in
milliseconds, with the real server's semantics: server-set
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

Its fidelity is measured, not assumed: ``tests/realkube/test_differential.py`` sends the same
requests to it and to a real kube-apiserver (``tests.support.controlplane``) and compares the
answers. Fixed from its findings: 422s list their field errors as ``details.causes`` and name
``Kind.group``; a Job's negative counts and a Lease's non-positive duration are refused; a Job
without containers and restart policy reports both; namespaces get the
``kubernetes.io/metadata.name`` label and, like nodes, no ``generation``; a delete whose
precondition fails answers as a real server does (``Kind.group`` and both values). Known and
accepted differences (the test's ``KNOWN``): error messages are worded differently (codes,
reasons and the fields of the causes agree); the defaults a real server fills into a Job and
its pod template (``manualSelector``, ``podReplacementPolicy``, ``dnsPolicy``,
``schedulerName``, ``securityContext``, ``terminationGracePeriodSeconds``, a container's
``imagePullPolicy``, ``resources`` and ``terminationMessage*``) are left out; its Job
controller keeps less status (no ``terminating``/``uncountedTerminatedPods``; a
``status.active`` written through the status subresource is recomputed at once); a failed JSON-
patch ``test`` has no empty ``details``.
"""

from starburst.testing.kubeapi.server import KubeApiServer, Taint

__all__ = ["KubeApiServer", "Taint"]
