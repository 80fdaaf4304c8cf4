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
(``KubeApiServer``) and ``__main__`` (``python -m tests.kubeapi --port N``),
``fixtures`` (pytest fixtures).

Where it knowingly differs from a real API server (none of it is something Starburst relies
on): controllers run synchronously inside the writing request (a Job's Pods exist when the
create returns; a real cluster gets there moments later); Pods are deleted at once (no grace
period, no kubelet shutdown); namespace deletion is immediate; core/v1 and events.k8s.io/v1
Events are separate collections; no OpenAPI documents (``kubectl apply --validate=false``), no
server-side apply (415), no ``dryRun`` (400), no Table output (kubectl prints names and ages);
list items keep ``kind``/``apiVersion``; no authentication or RBAC (any token is accepted); no
ResourceQuota (quota refusals are tried on the real tier, ``tests/realkube``).

Its fidelity is measured, not assumed: ``tests/realkube/test_differential.py`` (Jobs, Leases,
namespaces, watches, patches, paging) and ``test_differential_workloads.py`` (Pods, Nodes,
Events, the Job controller's pods, PodSecurity) send the same requests to it and to a real
kube-apiserver (``tests.support.controlplane``) and compare the answers. Fixed from its
findings: 422s list their field errors as ``details.causes`` and name ``Kind.group``; a Job's
negative counts and a Lease's non-positive duration are refused; a Job without containers and
restart policy reports both; namespaces get the ``kubernetes.io/metadata.name`` label and, like
nodes, no ``generation``; a delete whose precondition fails answers as a real server does
(``Kind.group`` and both values); a watch with a label selector sends an object that stops
matching as DELETED with its *last matching* state (not its new one); core/v1 Events whose
``involvedObject.namespace`` is not their own are refused (422) — which found that Starburst's
budget-alert Events were refused outside ``default`` on a real server; a Pod and a pod
template get the real defaults (``securityContext: {}``, ``dnsPolicy``, grace period, each
container's ``imagePullPolicy``, ``resources``, ``terminationMessage*``; for Pods the
ServiceAccount, priority, ``enableServiceLinks``, ``preemptionPolicy`` and the 300 s
not-ready/unreachable tolerations), a Job ``manualSelector: false`` and
``podReplacementPolicy``; a Pod created with scheduling gates is ``PodScheduled=False``
(``SchedulingGated``) at once; a gate added is refused at ``spec.schedulingGates[i].name``
naming it, a node selector changed while gated with the value and the real words; PodSecurity
refusals carry ``details`` and say which of pod and containers set ``runAsUser=0``; a 404/409
of the core group has no empty ``group``; generated names use the real alphabet; a new Node
has an empty ``status.nodeInfo`` and ``daemonEndpoints``; Events have null timestamps rather
than none. Known and accepted differences (the tests' ``KNOWN``): error messages are worded
differently (codes, reasons and the fields of the causes agree; a Pod update's "may not change
fields" message has no diff); its Job controller keeps less status (no
``terminating``/``uncountedTerminatedPods``; a ``status.active`` written through the status
subresource is recomputed at once) and puts no ``batch.kubernetes.io/job-tracking`` finalizer
on a Job's pods; a Pod is deleted at once (no ``deletionGracePeriodSeconds``, no generation
bump); a Node created through the API gets no ``node.kubernetes.io/not-ready`` taint (no
TaintNodesByCondition, no node lifecycle controller to lift it); repeated ``FailedCreate``
Events are separate Events (a real recorder counts them in one); a gated Pod's node affinity
may only be set when it had none (a real server also accepts added terms); a failed
JSON-patch ``test`` has no empty ``details``.
"""

from tests.kubeapi.server import KubeApiServer, Taint

__all__ = ["KubeApiServer", "Taint"]
