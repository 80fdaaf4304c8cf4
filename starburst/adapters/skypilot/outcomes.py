"""What SkyPilot's answers mean for Starburst: managed-job statuses and SDK errors, classified.

Terms:
- *transient*: the API server or network hiccuped; the same request may succeed later.
  Retried with backoff, on the same option, after checking it did not in fact happen.
- *no capacity*: the option (cloud, spot-ness) had no GPUs to give, or SkyPilot gave up
  recovering it. Starburst fails over to the next cheapest option; when none is left the job
  fails with the last reason.
- *permanent*: retrying cannot help (bad credentials, invalid task, the user's program
  failed). The job fails and the reason is shown to the user.
- *no cloud*: a permanent failure of the cloud side, not of the job: SkyPilot has no cloud
  enabled (``NoCloudAccessError``). The reason is always ``NO_CLOUD``; the job is refused
  by the cloud and stays on-prem (see ``cloud.py``).
- *controller not up*: SkyPilot's jobs controller is down because no managed job is in
  progress; queue and cancel requests then fail with ``ClusterNotUpError``, which means "no
  managed jobs" (``is_no_managed_jobs``).

A managed job whose program failed (``FAILED``, ``FAILED_SETUP``) carries no exit code field:
SkyPilot writes it into ``failure_reason`` as text ("Job exited with exit code 7 (user
program failure). …", or "exit codes [7, 0]" for several nodes), and only when it could read
it from the cloud cluster ("Job failed (FAILED) …" otherwise). ``program_failure`` turns
that into the cause every backend gives (``exit code 7``; ``124`` under a time limit is
``time limit 2h reached: killed``), or says that the code cannot be known and why; a test
checks the phrases against the installed SDK's jobs controller.

Errors are matched by exception *class name* along the MRO, so this module does not import
``sky``; a test checks that every name listed here exists in the installed SDK, and that every
``ManagedJobStatus`` has a mapping, so SDK drift fails the suite.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from starburst.core.ports import CloudStatus
from starburst.core.time_limit import killed_after


class FailureKind(StrEnum):
    TRANSIENT = "transient"
    NO_CAPACITY = "no-capacity"
    PERMANENT = "permanent"


@dataclass(frozen=True, slots=True)
class Failure:
    kind: FailureKind
    reason: str
    error: str = ""  # the SDK exception's class name

    @property
    def no_cloud(self) -> bool:
        return self.error in NO_CLOUD_ERRORS

    @property
    def no_managed_jobs(self) -> bool:
        """The jobs controller is not up: no managed job is in progress."""
        return self.error in NOT_UP_ERRORS


NO_CLOUD = "no cloud enabled in SkyPilot: run `sky check`"
NO_CLOUD_ERRORS = frozenset({"NoCloudAccessError"})
NOT_UP_ERRORS = frozenset({"ClusterNotUpError"})
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


TRANSIENT_ERRORS = frozenset(
    {
        "ApiServerConnectionError",
        "ServerTemporarilyUnavailableError",
        "NetworkError",
        "RequestInterruptedError",
        "ConcurrentWorkerExhaustedError",
        "ExecutionRetryableError",
        "ClusterStatusFetchingError",
        "RequestAlreadyExistsError",
    }
)
NO_CAPACITY_ERRORS = frozenset({"ResourcesUnavailableError", "ManagedJobReachedMaxRetriesError"})
# Standard-library families that mean "the connection, not the request, failed".
_TRANSIENT_BUILTINS = (ConnectionError, TimeoutError)


def classify(exc: BaseException) -> Failure:
    """Translate an SDK exception into a Starburst failure kind with a readable reason."""
    names = {cls.__name__ for cls in type(exc).__mro__}
    error = type(exc).__name__
    reason = _ANSI.sub("", f"{error}: {exc}").strip().rstrip(":")
    if names & NO_CLOUD_ERRORS:
        return Failure(FailureKind.PERMANENT, NO_CLOUD, error)
    if names & NO_CAPACITY_ERRORS:
        return Failure(FailureKind.NO_CAPACITY, reason, error)
    if names & TRANSIENT_ERRORS or isinstance(exc, _TRANSIENT_BUILTINS):
        return Failure(FailureKind.TRANSIENT, reason, error)
    return Failure(FailureKind.PERMANENT, reason, error)


# ManagedJobStatus value → what Starburst reports. CANCELLING maps to RUNNING here, and the
# cloud adapter keeps the previous status instead: the cluster is still being torn down and
# billed until SkyPilot says CANCELLED.
MANAGED_STATUS: dict[str, CloudStatus] = {
    "PENDING": CloudStatus.PENDING,
    "SUBMITTED": CloudStatus.PENDING,
    "STARTING": CloudStatus.PROVISIONING,
    "RUNNING": CloudStatus.RUNNING,
    "WINDING_DOWN": CloudStatus.RUNNING,
    "RECOVERING": CloudStatus.RECOVERING,
    "CANCELLING": CloudStatus.RUNNING,
    "SUCCEEDED": CloudStatus.SUCCEEDED,
    "CANCELLED": CloudStatus.CANCELLED,
    "FAILED": CloudStatus.FAILED,
    "FAILED_SETUP": CloudStatus.FAILED,
    "FAILED_PRECHECKS": CloudStatus.FAILED,
    "FAILED_NO_RESOURCE": CloudStatus.FAILED,
    "FAILED_CONTROLLER": CloudStatus.FAILED,
}
# Managed-job endings that mean "this option had no capacity": fail over, do not fail the job.
NO_CAPACITY_STATUSES = frozenset({"FAILED_NO_RESOURCE"})


def status_name(status: object) -> str:
    """A ManagedJobStatus (enum or its string) as its value: ``'RUNNING'``."""
    value = getattr(status, "value", status)
    return str(value).upper()


def managed_status(status: object) -> CloudStatus:
    name = status_name(status)
    try:
        return MANAGED_STATUS[name]
    except KeyError:
        # An unknown, newer status: report it as pending rather than guess it ended.
        return CloudStatus.PENDING


#: SkyPilot's words for a program's exit status in ``failure_reason`` (``sky.jobs.controller``)
_EXITED = re.compile(r"\bexit codes? \[?(\d+(?:\s*,\s*\d+)*)\]?")
PROGRAM_FAILED = frozenset({"FAILED", "FAILED_SETUP"})
TIMEOUT_EXIT = 124  # what ``timeout`` exits with when the time limit ends the command


def program_failure(name: str, detail: str, time_limit: float | None) -> str:
    """The cause of a managed job whose program failed (``name`` is ``FAILED`` or
    ``FAILED_SETUP``, ``detail`` SkyPilot's ``failure_reason``)."""
    setup = "setup " if name == "FAILED_SETUP" else ""
    found = _EXITED.search(detail)
    if found is None:
        why = (
            "SkyPilot could not read it from the cloud cluster"
            if detail
            else ("SkyPilot gave no failure reason")
        )
        return f"{setup}failed, exit code unknown ({why}): {detail}".rstrip(": ")
    codes = [int(c) for c in re.findall(r"\d+", found.group(1))]
    code = next((c for c in codes if c), codes[0])
    if code == TIMEOUT_EXIT and time_limit is not None and not setup:
        return killed_after(time_limit)
    nodes = f" (nodes: {', '.join(map(str, codes))})" if len(codes) > 1 else ""
    return f"{setup}exit code {code}{nodes}"
