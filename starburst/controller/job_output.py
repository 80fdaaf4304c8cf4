"""A job's output, from wherever it ran: the on-prem cluster or its latest cloud launch.

``JobLogs.read`` is what ``GET /v1/jobs/{id}/logs`` and ``starburst logs`` show. It asks the
backend the job ran on: the cluster's ``LogSource`` capability (Kubernetes: the Job's pods;
the local cluster: its output file), or the cloud's ``logs(handle)`` for the job's latest
launch (SkyPilot's managed-job log, or the emulated cloud's output file).

Terms: *tail* — only the newest ``tail`` lines (None: everything the backend keeps).

Invariants: reading logs never changes a job or a launch; a job that has not run yet, or a
backend that keeps no output, is a ``NoLogs`` error whose message says why (the API answers
409, the CLI prints it), never an empty success that looks like a silent job.
"""

from __future__ import annotations

from collections.abc import Sequence

from starburst.controller.loop.cloudside import cloud_id
from starburst.controller.loop.report import backend_job
from starburst.core.errors import PermanentError
from starburst.core.lifecycle import JobState
from starburst.core.ports import Cloud, CloudHandle, LogSource
from starburst.core.records import CloudLaunch, StoredJob

_NOT_RUN = (JobState.SUBMITTED, JobState.QUEUED, JobState.BURSTING)


class NoLogs(PermanentError):
    """There is no output to show for this job (yet), and the message says why."""


def last_lines(text: str, tail: int | None) -> str:
    if tail is None:
        return text
    lines = text.splitlines(keepends=True)
    return "".join(lines[-tail:]) if tail > 0 else ""


class JobLogs:
    """Reads job output through the backends the controller was built with: the cluster's
    ``LogSource`` (None: it keeps no output) and the cloud (None: none configured)."""

    def __init__(self, cluster: LogSource | None, cloud: Cloud | None) -> None:
        self.cluster = cluster
        self.cloud = cloud

    def read(
        self, stored: StoredJob, launches: Sequence[CloudLaunch], tail: int | None = None
    ) -> str:
        if stored.state in _NOT_RUN and not launches:
            raise NoLogs(
                f"job {stored.id} has not started yet ({stored.state.value}): no output to show"
            )
        if stored.ran_on == "cloud" or (stored.ran_on != "onprem" and launches):
            return last_lines(self._cloud(stored, launches), tail)
        return last_lines(self._onprem(stored, tail), tail)

    def _onprem(self, stored: StoredJob, tail: int | None) -> str:
        if self.cluster is None:
            raise NoLogs(f"job {stored.id} ran on a cluster that keeps no output")
        return self.cluster.job_logs(backend_job(stored), tail)

    def _cloud(self, stored: StoredJob, launches: Sequence[CloudLaunch]) -> str:
        if not launches:
            raise NoLogs(f"job {stored.id} has no cloud launch on record")
        if self.cloud is None:
            raise NoLogs(f"job {stored.id} ran in the cloud, and no cloud is configured here")
        ordered = sorted(launches, key=lambda x: x.id or 0)
        latest = ordered[-1]
        handle = CloudHandle(
            cloud_id(stored.id, len(ordered)), latest.name, latest.request_id, latest.cloud_job_id
        )
        return self.cloud.logs(handle)
