"""What the wired backends can do beyond their ports, resolved once per controller.

``Capabilities.of(cluster, cloud)`` is the one place that asks a backend what it can do
(``isinstance`` against the capability protocols of ``starburst.core.ports``); everything
after that holds the capability objects it was given, so a newcomer reads the contracts in
the ports and the wiring here, not in ``getattr`` calls scattered over the pass. The
composition root (``wiring``) resolves them when it builds a controller; a ``Controller`` or
``SchedulingLoop`` built directly (tests, benchmarks) resolves them from its own backends.

Invariant: a field is None exactly when no configured backend implements that capability,
and the pass then does without it (no annotation, no prompt pass, the poll's time as the end).
"""

from __future__ import annotations

from dataclasses import dataclass

from starburst.core.ports import (
    BilledLaunches,
    BudgetNotes,
    ChangeNotifier,
    Cloud,
    CloudHealth,
    Cluster,
    DeletedJobs,
    FailureReasons,
    JobAnnotator,
    LaunchEnds,
    LogSource,
    SubmissionSource,
)


@dataclass(frozen=True, slots=True)
class Capabilities:
    """The optional capabilities of one cluster and one cloud (None: the backend lacks it)."""

    #: backends (cluster first, then cloud) that say when a pass is worth running now
    notifiers: tuple[ChangeNotifier, ...] = ()
    # the cluster's
    submissions: SubmissionSource | None = None
    annotator: JobAnnotator | None = None
    budget_notes: BudgetNotes | None = None
    deleted: DeletedJobs | None = None
    logs: LogSource | None = None
    # the cloud's
    health: CloudHealth | None = None
    reasons: FailureReasons | None = None
    billing: BilledLaunches | None = None
    ends: LaunchEnds | None = None

    @classmethod
    def of(cls, cluster: Cluster, cloud: Cloud | None) -> Capabilities:
        notifiers: list[ChangeNotifier] = []
        for backend in (cluster, cloud):
            if isinstance(backend, ChangeNotifier):
                notifiers.append(backend)
        return cls(
            notifiers=tuple(notifiers),
            submissions=cluster if isinstance(cluster, SubmissionSource) else None,
            annotator=cluster if isinstance(cluster, JobAnnotator) else None,
            budget_notes=cluster if isinstance(cluster, BudgetNotes) else None,
            deleted=cluster if isinstance(cluster, DeletedJobs) else None,
            logs=cluster if isinstance(cluster, LogSource) else None,
            health=cloud if isinstance(cloud, CloudHealth) else None,
            reasons=cloud if isinstance(cloud, FailureReasons) else None,
            billing=cloud if isinstance(cloud, BilledLaunches) else None,
            ends=cloud if isinstance(cloud, LaunchEnds) else None,
        )
