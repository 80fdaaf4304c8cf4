"""What the watched Jobs say, kept for ``KubernetesCluster``: queued, running, ended, given up.

Terms:
- *offered*: a queued Job handed to the controller as a submission (once per process);
- *running*: a Job started on-prem, with its placement (``Started``), by this adapter or, as
  its annotations say, by an earlier controller life;
- *ended*: ``JobEnded`` values not yet taken by the controller; each job's end is reported once
  per process (*reported*). A Job that *failed* is reported once it is *explained*: a
  follow-up reads its pods (``failures.py``: the exit code, a hit time limit, the last lines
  of output) outside the lock, then reports the end with that reason. An end is dated by the
  Job's ``completionTime`` rounded up to the next second (Kubernetes cuts times down to the
  second), or by when it was seen if that is sooner: never before the run ended;
- *given up*: a Job Starburst started and can no longer count on: suspended by someone else
  (``spec.suspend`` is the truth, not the state annotation), or whose pods were refused at
  creation (a ``FailedCreate`` Event: ResourceQuota, PodSecurity, a webhook). Its job ends
  failed with the reason, its placement is freed at once, and a *follow-up* write marks the
  Job ``starburst.io/state: failed`` (suspending it if its pods were refused) with a Warning
  Event; the cluster sends follow-ups after it let go of its lock.
- *left to Kueue*: a Job with Kueue's queue label too (``conversion.left_to_kueue``) is not
  Starburst's: never offered, recorded as running or ended here; one Warning Event says so.
- a *deleted* Job ends its job's record whatever its state (waiting, running, burst), unless it
  was never handed to the controller; so does one whose ``starburst.io/queue`` label is removed
  (the labelled watch reports it DELETED too; the cluster tells which, ``UNQUEUED``).

Not thread-safe: the cluster calls every method under its lock.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from starburst.adapters.kubernetes import conversion as conv
from starburst.core.job import Job
from starburst.core.ports import Clock, JobEnded

Obj = dict[str, Any]
DELETED = "its Kubernetes Job was deleted"
UNQUEUED = (
    "its Kubernetes Job was taken out of Starburst's queue (label starburst.io/queue removed)"
)
SUSPENDED = (
    "its Kubernetes Job was suspended by someone else (spec.suspend: true), which stopped its pods"
)
#: (the Job, the reason, whether to suspend it): marks a given-up Job
Mark = Callable[[Obj, str, bool], None]
#: (the Job, what was ignored): a Warning Event on a queued Job (``submission_from_k8s``)
Warn = Callable[[Obj, str], None]
#: (the failed Job, its end with the condition's reason): finds the cause, then reports the
#: end with it (``finish_explaining``, under the lock); a follow-up, so outside the lock
Explain = Callable[[Obj, JobEnded], None]


@dataclass(slots=True)
class Started:
    job: Job
    parts: list[tuple[str, int]]
    started_at: float
    uid: str


class JobBook:
    """The Jobs' bookkeeping; the cluster hands it what it cannot do under the lock or alone:
    ``notify`` (tell the controller a Job ended or arrived), ``pods_of`` (how many pods of the
    Job with this uid the pod watch holds), ``mark`` (a given-up Job's follow-up write),
    ``warn`` and ``explain`` (``Warn``, ``Explain``; without them nothing is warned and a
    failed Job is reported with its condition's reason)."""

    def __init__(
        self,
        *,
        clock: Clock,
        conventions: conv.Conventions,
        notify: Callable[[], None],
        pods_of: Callable[[str], int],
        mark: Mark,
        warn: Warn | None = None,
        explain: Explain | None = None,
    ) -> None:
        self._clock, self._conventions = clock, conventions
        self._notify, self._pods_of, self._mark = notify, pods_of, mark
        self._warn = warn
        self._explain = explain
        self.explaining: set[str] = set()  # failed Jobs whose pods a follow-up reads
        self.jobs: dict[str, Obj] = {}
        self.offered: set[str] = set()
        self.submissions: list[Job] = []
        self.running: dict[str, Started] = {}
        self.ended: list[JobEnded] = []
        self.reported: set[str] = set()
        self.refused: dict[str, str] = {}  # Job uid -> why a pod create was refused
        self.followups: list[Callable[[], None]] = []
        self.kueues: set[str] = set()  # Jobs left to Kueue (warned once per process)

    # -- watch events ----------------------------------------------------------------------
    def on_job(self, kind: str, obj: Obj, gone: str = DELETED) -> None:
        """A watch event; ``gone``: why a DELETED Job went (deleted, or its queue label
        removed: ``UNQUEUED``)."""
        jid = conv.job_id(obj)
        known = self.jobs.get(jid)
        if known is not None and kind != "DELETED" and _older(obj, known):
            return  # our own patch's answer already told us more
        if kind == "DELETED":
            self._deleted(jid, obj, gone)
        else:
            self.jobs[jid] = obj
            self.classify(jid, obj)

    def _deleted(self, jid: str, obj: Obj, why: str) -> None:
        self.jobs.pop(jid, None)
        pending = [j for j in self.submissions if j.id != jid]
        handed_out = len(pending) == len(self.submissions) and jid in self.offered
        self.submissions = pending
        ours = self.running.pop(jid, None) is not None or conv.job_state(obj) == "burst"
        if handed_out or ours:
            self.report(JobEnded(jid, self._clock.now(), False, why))

    def on_refusal(self, uid: str, message: str) -> None:
        """A pod create of Job ``uid`` was refused; kept, since the refusal may come before
        the start that caused it is recorded."""
        self.refused[uid] = message.removeprefix("Error creating: ")
        self._check_refused(uid)

    def _check_refused(self, uid: str) -> None:
        message = self.refused.get(uid)
        jid = next((j for j, s in self.running.items() if s.uid == uid), None)
        obj = self.jobs.get(jid) if jid is not None else None
        if message is None or jid is None or obj is None:
            return
        status = obj.get("status") or {}
        made = sum(int(status.get(k) or 0) for k in ("active", "succeeded", "failed"))
        if max(made, self._pods_of(uid)) >= int((obj.get("spec") or {}).get("parallelism") or 1):
            return  # every pod was made: the refusal was retried with success
        self._give_up(jid, obj, f"its pods were refused: {message}", suspend=True)

    def _give_up(self, jid: str, obj: Obj, reason: str, suspend: bool) -> None:
        self.running.pop(jid, None)
        if jid in self.reported:
            return
        self.report(JobEnded(jid, self._clock.now(), False, reason))
        self.followups.append(lambda: self._mark(obj, reason, suspend))

    def classify(self, jid: str, obj: Obj) -> None:
        kueue_queue = conv.left_to_kueue(obj)
        if kueue_queue is not None and jid not in self.offered:
            if jid not in self.kueues:
                self.kueues.add(jid)
                self._warned(obj, conv.LEFT_TO_KUEUE.format(queue=kueue_queue))
            return
        state, ended = conv.job_state(obj), conv.finished(obj)
        if ended is not None and state in ("running", "suspended"):
            self.running.pop(jid, None)
            end = JobEnded(jid, self._end_time(ended[1]), ended[0], ended[2])
            if end.succeeded or self._explain is None:
                self.report(end)
            elif jid not in self.reported and jid not in self.explaining:
                self.explaining.add(jid)
                explain = self._explain
                self.followups.append(lambda: explain(obj, end))
        elif state == "suspended":
            self._give_up(jid, obj, SUSPENDED, suspend=False)
        elif state == "failed":  # given up earlier (maybe by a previous controller life)
            self.running.pop(jid, None)
            reason = (obj["metadata"].get("annotations") or {}).get(conv.REASON, "failed")
            self.report(JobEnded(jid, self._clock.now(), False, reason))
        elif state == "queued" and jid not in self.offered:
            self.offered.add(jid)
            job, problems = conv.submission_from_k8s(obj, self._conventions)
            self.submissions.append(job)
            for problem in problems:
                self._warned(obj, problem)
            self._notify()
        elif state == "running" and jid not in self.running and jid not in self.reported:
            self.record_start(jid, obj)
        elif state in ("burst", "cancelled"):
            self.running.pop(jid, None)

    # -- what the adapter did --------------------------------------------------------------
    def record_start(self, jid: str, obj: Obj) -> Started:
        """The Job ``obj`` runs on-prem now (started here, or seen started)."""
        self.jobs[jid] = obj
        annotations = obj["metadata"].get("annotations") or {}
        started = self.running[jid] = Started(
            conv.job_from_k8s(obj, self._conventions),
            conv.parse_placement(annotations.get(conv.PLACEMENT, "")),
            conv.maybe_time(annotations.get("starburst.io/started-at"))  # user-writable
            or conv.parse_time((obj.get("status") or {}).get("startTime")),
            obj["metadata"].get("uid", ""),
        )
        self._check_refused(started.uid)
        return started

    def finish_explaining(self, end: JobEnded) -> None:
        """Report a failed Job's end, now with its cause."""
        self.explaining.discard(end.job_id)
        self.report(end)

    def _end_time(self, stamped: float) -> float:
        """When a Job really ended, from the time its status gives: Kubernetes writes times
        to the whole second, cut down, so the end lies up to a second after a whole-second
        stamp; bounded by now, when the end is seen (billing must not end before the run)."""
        if stamped != int(stamped):
            return stamped
        return max(stamped, min(stamped + 1.0, self._clock.now()))

    def report(self, end: JobEnded) -> None:
        if end.job_id not in self.reported:
            self.reported.add(end.job_id)
            self.ended.append(end)
            self._notify()

    def _warned(self, obj: Obj, problem: str) -> None:
        warn = self._warn
        if warn is not None:
            self.followups.append(lambda: warn(obj, problem))

    def take_followups(self) -> list[Callable[[], None]]:
        todo, self.followups = self.followups, []
        return todo

    def placement_of(self, uid: str) -> tuple[list[tuple[str, int]], int] | None:
        """The multi-node placement and GPUs per pod of the Job ``uid`` Starburst started."""
        for started in self.running.values():
            if started.uid == uid and len(started.parts) > 1:
                return started.parts, started.job.split_unit if started.job.gpus else 0
        return None


def _older(new: Obj, known: Obj) -> bool:
    try:
        return int(new["metadata"]["resourceVersion"]) < int(known["metadata"]["resourceVersion"])
    except (KeyError, ValueError):
        return False
