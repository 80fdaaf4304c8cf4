"""``KubernetesCluster``: the core's ``Cluster`` port on a Kubernetes cluster.

Four informers keep local caches current (``informer.py``): the labelled Jobs (all
namespaces, or one), the Nodes, the unfinished Pods (field selector
``status.phase!=Succeeded,status.phase!=Failed``) and the ``FailedCreate`` Events of Jobs
(pods refused at creation). What the Jobs say lives in the Job book (``jobbook.py``: queued,
running, ended, given up). Everything the scheduling pass asks — ``snapshot``,
``submissions``, ``ended`` — reads those caches under one lock: a pass never lists the cluster
and never waits on the network. ``start``, ``burst``, ``cancel`` and ``note_waiting`` write
(one patch or create each, plus a best-effort Event); the watch threads write only to release
gated pods (``pinning.py``), to mark Jobs Starburst gave up and to read a failed Job's pods
(``failures.py``: its exit code and last output), after letting go of the lock.

Free capacity = node allocatable − requests of bound, unfinished Pods, except that a Job
Starburst started is counted by its *placement* (the ``starburst.io/placement`` annotation)
rather than its Pods, so the GPUs are taken from the moment of the patch, before its Pods
even exist, and never twice. Unschedulable nodes (cordoned, NotReady, tainted) stay in the
snapshot but outside the capacity index.

Invariants: ``start`` is idempotent — a Job that is running, was started by anyone (not
suspended), burst or cancelled is never patched again, and the start patch carries the
resourceVersion it was decided on, so two racing controllers cannot both start it; each
Job's end is reported once per process (at-least-once across restarts: a Job that finished
while the controller was down is reported after the first sync); a deleted Job, or one
someone else suspended, ends as failed with the reason (``jobbook.py``).
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

from starburst.adapters.kubernetes import conversion as conv
from starburst.adapters.kubernetes.failures import failure_reason
from starburst.adapters.kubernetes.informer import Informer, Obj
from starburst.adapters.kubernetes.jobbook import DELETED, UNQUEUED, JobBook, Started
from starburst.adapters.kubernetes.manifest import job_manifest, job_name
from starburst.adapters.kubernetes.pod_logs import job_output
from starburst.adapters.kubernetes.retry import Backoff, status_of, translate
from starburst.adapters.kubernetes.ungating import Release, Ungater
from starburst.adapters.kubernetes.writes import Writes
from starburst.core.capacity import CapacityIndex, Node, Part, Placement
from starburst.core.errors import PermanentError, TransientError
from starburst.core.job import Job
from starburst.core.ports import Clock, ClusterSnapshot, JobEnded, RunningJob

log = logging.getLogger(__name__)
UNFINISHED = "status.phase!=Succeeded,status.phase!=Failed"
REFUSED = "involvedObject.kind=Job,reason=FailedCreate"  # a Job's pod create was refused


class HeldPod(NamedTuple):
    """A bound, unfinished pod: what it holds on its node, and the uid of the Job that owns
    it (``""`` for a pod of no Job)."""

    usage: conv.PodUsage
    owner: str


@dataclass(frozen=True, slots=True)
class KubernetesSettings:
    """How the adapter meets the cluster. ``namespace`` None watches Jobs in all namespaces."""

    namespace: str | None = None
    conventions: conv.Conventions = field(default_factory=conv.Conventions)
    watch_timeout: int = 60
    page_size: int = 500
    backoff: Backoff = field(default_factory=Backoff)


class KubernetesCluster:
    def __init__(
        self, api_client: Any, clock: Clock, settings: KubernetesSettings | None = None
    ) -> None:
        from kubernetes import client

        self.settings = settings or KubernetesSettings()
        self._clock = clock
        self._batch = client.BatchV1Api(api_client)
        self._core = client.CoreV1Api(api_client)
        self._io = Writes(self._batch, self._core, clock)
        self._lock = threading.RLock()
        self._book = JobBook(
            clock=clock,
            conventions=self.settings.conventions,
            notify=self._notify,
            pods_of=self._pods_of,
            mark=self._mark,
            warn=self._warn,
            explain=self._explain,
        )
        self._nodes: dict[str, Node] = {}
        self._hostnames: dict[str, str] = {}  # node name -> its kubernetes.io/hostname label
        self._ungater = Ungater(self._book.placement_of)
        self._pods: dict[tuple[str, str], HeldPod] = {}  # by (namespace, name)
        #: called from the watch threads when a Job ends or a new one is queued (``subscribe``)
        self._listener: Callable[[], None] | None = None
        s = self.settings
        jobs = (
            self._batch.list_job_for_all_namespaces
            if s.namespace is None
            else _bound(self._batch.list_namespaced_job, s.namespace)
        )
        events = (
            self._core.list_event_for_all_namespaces
            if s.namespace is None
            else _bound(self._core.list_namespaced_event, s.namespace)
        )
        common: dict[str, Any] = {
            "page_size": s.page_size,
            "watch_timeout": s.watch_timeout,
            "backoff": s.backoff,
        }
        self.informers = (
            Informer("nodes", self._core.list_node, self._on_node, **common),
            Informer(
                "pods",
                self._core.list_pod_for_all_namespaces,
                self._on_pod,
                field_selector=UNFINISHED,
                **common,
            ),
            Informer("jobs", jobs, self._on_job, label_selector=conv.QUEUE_LABEL, **common),
            Informer("events", events, self._on_event, field_selector=REFUSED, **common),
        )

    # -- lifecycle -------------------------------------------------------------------------
    def start_watching(self) -> KubernetesCluster:
        for informer in self.informers:
            informer.start()
        return self

    def wait_synced(self, timeout: float = 30.0) -> bool:
        return all(i.synced.wait(timeout) for i in self.informers)

    def close(self) -> None:
        for informer in self.informers:
            informer.stop()

    # -- watch handlers (informer threads) -------------------------------------------------
    def _on_node(self, kind: str, obj: Obj, old: Obj | None) -> None:
        with self._lock:
            name = obj["metadata"]["name"]
            if kind == "DELETED":
                self._nodes.pop(name, None)
                self._hostnames.pop(name, None)
            else:
                self._nodes[name] = conv.node_from_k8s(obj, self.settings.conventions)
                labels = obj["metadata"].get("labels") or {}
                self._hostnames[name] = labels.get("kubernetes.io/hostname", name)

    def _on_pod(self, kind: str, obj: Obj, old: Obj | None) -> None:
        key = (obj["metadata"].get("namespace", ""), obj["metadata"]["name"])
        usage = None if kind == "DELETED" else conv.pod_usage(obj)
        labels = obj["metadata"].get("labels") or {}
        owner = labels.get("batch.kubernetes.io/controller-uid") or labels.get("controller-uid", "")
        with self._lock:
            if usage is None:
                self._pods.pop(key, None)
            else:
                self._pods[key] = HeldPod(usage, owner)
            self._ungater.observe(kind, obj, owner, self._hostnames)
        self._release()

    def _release(self) -> None:
        """Send the releases of gated pods that can go now (``pinning``); never under the lock."""
        with self._lock:
            releases = self._ungater.decide(self._hostnames)
        if releases:
            self._ungater.send(self._core, releases, self._undo)

    def _undo(self, release: Release) -> None:
        with self._lock:
            self._ungater.undo(release)

    def _on_job(self, kind: str, obj: Obj, old: Obj | None) -> None:
        gone = UNQUEUED if kind == "DELETED" and self._io.left_queue(obj["metadata"]) else DELETED
        with self._lock:
            self._book.on_job(kind, obj, gone)
        self._flush()
        self._release()  # gated pods seen before their Job was known to be ours

    def _on_event(self, kind: str, event: Obj, old: Obj | None) -> None:
        """A pod create of a Job was refused (``jobbook``: a Job Starburst started gives up)."""
        uid = (event.get("involvedObject") or {}).get("uid")
        if kind == "DELETED" or not uid:
            return
        with self._lock:
            self._book.on_refusal(uid, str(event.get("message") or ""))
        self._flush()

    def _pods_of(self, uid: str) -> int:
        return sum(1 for pod in self._pods.values() if pod.owner == uid)

    def _flush(self) -> None:
        """Send the writes the Job book decided (never under the lock)."""
        with self._lock:
            todo = self._book.take_followups()
        for write in todo:
            write()

    def subscribe(self, listener: Callable[[], None]) -> None:
        """``ChangeNotifier``: call ``listener`` from the watch threads when a Job ends or a
        new one is queued (the controller runs a pass promptly)."""
        self._listener = listener

    def _notify(self) -> None:
        """Tell the controller something worth a pass happened (a Job ended or arrived)."""
        listener = self._listener
        if listener is not None:
            listener()

    # -- the Cluster port ------------------------------------------------------------------
    def submissions(self) -> list[Job]:
        """Queued Jobs seen since the last call (each Job once per process), in FIFO order."""
        with self._lock:
            new, self._book.submissions = self._book.submissions, []
        return sorted(new, key=lambda j: (j.submit_time, j.id))

    def snapshot(self) -> ClusterSnapshot:
        with self._lock:
            nodes = [self._nodes[name] for name in sorted(self._nodes)]
            index = {n.name: i for i, n in enumerate(nodes)}
            capacity = CapacityIndex(nodes)
            placed = {s.uid for s in self._book.running.values() if s.parts}
            for pod in self._pods.values():
                use = pod.usage
                if pod.owner not in placed and use.node in index:
                    _take(capacity, index[use.node], use.node, use.gpus, use.cpus, use.memory_mb)
            running = []
            for started in self._book.running.values():
                parts = self._parts(started, index, capacity)
                running.append(RunningJob(started.job, parts, started.started_at))
        return ClusterSnapshot(capacity, running, self._clock.now())

    @staticmethod
    def _parts(started: Started, index: dict[str, int], capacity: CapacityIndex) -> Placement:
        job, parts = started.job, []
        for name, gpus in started.parts:
            if name not in index:
                continue
            share = gpus / job.gpus if job.gpus else 1.0 / len(started.parts)
            parts.append(
                _take(capacity, index[name], name, gpus, job.cpus * share, job.memory_mb * share)
            )
        return tuple(parts)

    def start(self, job: Job, placement: Placement, reason: str) -> None:
        with self._lock:
            obj = self._book.jobs.get(job.id)
            if job.id in self._book.running or (
                obj is not None and conv.job_state(obj) != "queued"
            ):
                return
        _check_pod_sizes(job, placement)
        if obj is None and job.extra.get("k8s_name"):  # a user's Job, deleted meanwhile
            with self._lock:
                self._book.report(JobEnded(job.id, self._clock.now(), False, DELETED))
            return
        if obj is None:  # submitted through Starburst: create its Job, already started
            result: Obj | None = self._create(job, placement, reason)
        else:
            result = self._start_patch(job, obj, placement, reason)
        if result is None:
            return
        with self._lock:
            self._book.record_start(job.id, result)
        self._flush()
        self._release()
        self._io.event(result, "Started", reason)

    def _create(self, job: Job, placement: Placement, reason: str) -> Obj:
        """Create the started Job of a Starburst submission (``manifest.py``). Its name is
        derived from the job id, so after a crash the repeated start finds it (409) and
        adopts it instead of creating a second one."""
        if not job.extra.get("command"):
            raise PermanentError(
                f"job {job.id} is not a queued Kubernetes Job, and has no "
                "command to create one from"
            )
        namespace = self.settings.namespace or "default"
        with self._lock:
            hostnames = dict(self._hostnames)
        body = job_manifest(
            job,
            placement,
            reason,
            self._clock.now(),
            namespace,
            self.settings.conventions,
            hostnames,
        )
        try:
            return self._io.create(namespace, body)
        except Exception as err:
            if status_of(err) != 409:
                raise translate(err, f"creating the Kubernetes Job of {job.id}") from err
        existing = self._io.read(body["metadata"])
        if conv.job_id(existing) != job.id:
            raise PermanentError(
                f"job {job.id}: a Kubernetes Job named "
                f"{body['metadata']['name']} exists and is not this job's"
            )
        return existing

    def _start_patch(self, job: Job, obj: Obj, placement: Placement, reason: str) -> Obj | None:
        """Patch, re-deciding on a 409: None if someone else started the Job meanwhile.

        A conflict caused by a change that does not alter what the Job asks for (a status
        update by the Job controller, a label) is retried once on the fresh object; a Job
        whose size changed must go back to the scheduler (``TransientError``).
        """
        for attempt in (1, 2):
            with self._lock:
                hostnames = dict(self._hostnames)
            patch = conv.start_patch(obj, placement, reason, self._clock.now(), hostnames)
            try:
                return self._io.patch(obj["metadata"], patch)
            except Exception as err:
                if status_of(err) != 409 or attempt == 2:
                    raise translate(err, f"starting job {job.id}") from err
            obj = self._fresh(obj["metadata"])
            if conv.job_state(obj) != "queued":
                return None
            now = conv.job_from_k8s(obj, self.settings.conventions)
            if _size(now) != _size(job):
                raise TransientError(f"job {job.id} changed meanwhile; decide again")
        return None  # pragma: no cover - the loop returns or raises

    def _fresh(self, meta: Obj) -> Obj:
        try:
            fresh = self._io.read(meta)
        except Exception as err:
            raise translate(err, f"re-reading job {meta['name']}") from err
        with self._lock:
            self._book.on_job("MODIFIED", fresh)
        self._flush()
        return fresh

    def cancel(self, job_id: str) -> None:
        self._annotate(job_id, {conv.STATE: "cancelled"}, "Cancelled", "cancelled", suspend=True)
        with self._lock:
            self._book.running.pop(job_id, None)

    def vanished(self, jobs: Iterable[Job]) -> list[str]:
        """Of ``jobs`` found in this cluster earlier (``extra["k8s_name"]``), those whose Job is
        gone now (deleted while no controller watched); call it after ``wait_synced``."""
        scope = self.settings.namespace
        with self._lock:
            return [
                j.id
                for j in jobs
                if j.extra.get("k8s_name")
                and scope in (None, j.extra.get("namespace"))
                and j.id not in self._book.jobs
                and j.id not in self._book.reported
            ]

    def ended(self) -> Sequence[JobEnded]:
        with self._lock:
            out, self._book.ended = self._book.ended, []
        return out

    def job_logs(self, job: Job, tail: int | None = None) -> str:
        """What the Job's pods printed (see ``pod_logs.job_output``). The Job is found from its
        namespace and name in ``extra``, so a process that watches nothing (the API alone)
        reads logs too."""
        namespace, name = job.extra.get("namespace"), job.extra.get("k8s_name")
        if not namespace or not name:
            with self._lock:
                obj = self._book.jobs.get(job.id)
            if obj is not None:
                namespace, name = obj["metadata"]["namespace"], obj["metadata"]["name"]
            else:  # a Job Starburst created: its name follows from the id
                namespace, name = self.settings.namespace or "default", job_name(job.id)
        return job_output(self._core, namespace, name, tail)

    # -- decisions that leave the Job suspended --------------------------------------------
    def burst(
        self,
        job_id: str,
        where: str,
        reason: str,
        cloud_job: str | None = None,
        price_per_hour: float | None = None,
    ) -> None:
        notes = {conv.STATE: "burst", conv.BURST_TO: where}
        if cloud_job:
            notes[conv.CLOUD_JOB] = cloud_job
        if price_per_hour is not None:
            notes[conv.PRICE] = f"{price_per_hour:.2f}"
        self._annotate(job_id, notes, "Burst", reason)

    def note_waiting(
        self, job_id: str, budget: float, predicted_runtime: float | None, reason: str
    ) -> None:
        notes = {conv.WAIT_BUDGET: f"{budget:.0f}" if math.isfinite(budget) else "never"}
        if predicted_runtime is not None:
            notes[conv.PREDICTED_RUNTIME] = f"{predicted_runtime:.0f}"
        self._annotate(job_id, notes, "Waiting", reason)

    def note_budget(self, team: str, reason: str, message: str) -> None:
        """Record a team's budget alert as an Event in the namespace of the team's name
        (where ``kubectl get events -n TEAM`` shows it); a team that is no namespace gets it
        in the adapter's own namespace."""
        self._io.namespace_event(team, self.settings.namespace or "default", reason, message)

    def _annotate(
        self, job_id: str, notes: dict[str, str], event: str, reason: str, suspend: bool = False
    ) -> None:
        with self._lock:
            obj = self._book.jobs.get(job_id)
        if obj is None:  # submitted through Starburst and not started here: no Job to mark
            log.debug("no Kubernetes Job for %s to annotate (%s)", job_id, event)
            return
        patch: dict[str, Any] = {"metadata": {"annotations": {**notes, conv.REASON: reason}}}
        if suspend:
            patch["spec"] = {"suspend": True}
        try:
            result = self._io.patch(obj["metadata"], patch)
        except Exception as err:
            raise translate(err, f"annotating job {job_id}") from err
        with self._lock:
            self._book.jobs[job_id] = result
            self._book.classify(job_id, result)
        self._flush()
        self._io.event(result, event, reason)

    def _warn(self, obj: Obj, problem: str) -> None:
        """A Warning Event about what was ignored on a queued Job, and a log line."""
        log.warning("job %s: %s", conv.job_id(obj), problem)
        self._io.event(obj, "Ignored", problem, "Warning")

    def _explain(self, obj: Obj, end: JobEnded) -> None:
        """A failed Job's end, with the cause its pods tell (``failures.py``); a follow-up,
        so the reads happen outside the lock, on the watch thread."""
        try:
            reason = failure_reason(self._core, obj, end.reason)
        except Exception as err:  # never lose the end over an explanation
            log.warning("could not explain the failure of %s: %r", end.job_id, err)
            reason = end.reason
        with self._lock:
            self._book.finish_explaining(replace(end, reason=reason))

    def _mark(self, obj: Obj, reason: str, suspend: bool) -> None:
        """Mark (and maybe suspend) a Job Starburst gave up, with a Warning Event; a failure
        is logged (the job's record has already ended)."""
        patch: dict[str, Any] = {
            "metadata": {"annotations": {conv.STATE: "failed", conv.REASON: reason}}
        }
        if suspend:
            patch["spec"] = {"suspend": True}
        try:
            result = self._io.patch(obj["metadata"], patch)
        except Exception as err:
            log.warning("could not mark job %s: %r", obj["metadata"]["name"], err)
            result = obj
        self._io.event(result, "Stopped", reason, "Warning")


def _bound(fn: Any, namespace: str) -> Any:
    def call(**kwargs: Any) -> Any:
        return fn(namespace, **kwargs)

    return call


def _check_pod_sizes(job: Job, placement: Placement) -> None:
    """Each node's share must hold whole Pods: the scheduler cannot split a Pod's GPUs.

    The core splits by ``Job.pods``, so this only refuses a placement made without it."""
    per_pod = job.split_unit
    if job.pods and any(part.gpus % per_pod for part in placement):
        shares = ", ".join(str(p.gpus) for p in placement)
        raise PermanentError(
            f"job {job.id} has {job.pods} pods of {per_pod} GPUs; a placement "
            f"of [{shares}] GPUs per node cannot hold whole pods"
        )


def _size(job: Job) -> tuple[int, float, float, str | None]:
    return job.gpus, job.cpus, job.memory_mb, job.gpu_type


def _take(capacity: CapacityIndex, i: int, name: str, gpus: float, cpus: float, mem: float) -> Part:
    part = Part(i, name, min(round(gpus), capacity.free_on(i)), cpus, mem)
    capacity.allocate((part,))
    return part
