"""A fake SkyPilot SDK with the real call shapes: the cloud-account edge, and nothing more.

It behaves like a SkyPilot API server as the client sees it: every call returns a request id
at once; a request runs when ``api_status`` is next asked about it (unless the test ``hold``s
it); ``get`` on an unfinished request fails the test (the real one would block the scheduling
loop); managed jobs live in a table whose statuses the test drives (STARTING → RUNNING →
RECOVERING → ...). ``test_sdk_drift.py`` checks these signatures against the installed SDK.

Where a real API server behaves in a way one would not guess, the fake does the same (each
checked against a real server by ``tests/skypilot_real/test_fake_agrees.py``):
- ``jobs.queue_v2`` and ``jobs.cancel`` fail with ``ClusterNotUpError`` ("No in-progress
  managed jobs.") while the jobs controller is down: before the first launch, or after the
  test sets ``controller_up = False`` (SkyPilot stops an idle controller);
- ``jobs.launch`` validates synchronously: ``validate_errors`` are raised by the call itself;
- with no cloud enabled (``enabled = []``) a launch request fails with
  ``NoCloudAccessError``, whose message carries terminal colour codes as the real one does;
- ``jobs.tail_logs(follow=False)`` returns None and writes nothing for an unknown job;
- ``enabled_clouds`` answers SkyPilot's cloud names (``AWS``, ``GCP``, ``Kubernetes``).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

AUTO_JOB_GROUP = object()


class ResourcesUnavailableError(Exception):
    """Same name as ``sky.exceptions.ResourcesUnavailableError`` (matched by name)."""


class ApiServerConnectionError(RuntimeError):
    """Same name as ``sky.exceptions.ApiServerConnectionError``."""


class InvalidCloudCredentials(Exception):
    """Same name as ``sky.exceptions.InvalidCloudCredentials``."""


class ClusterNotUpError(Exception):
    """Same name as ``sky.exceptions.ClusterNotUpError``."""


class NoCloudAccessError(Exception):
    """Same name as ``sky.exceptions.NoCloudAccessError``."""


class CloudError(Exception):
    """Same name as ``sky.exceptions.CloudError`` (a failed validation, e.g. offline)."""


NOT_UP = "No in-progress managed jobs."
NO_CLOUD_ACCESS = "Cloud access is not set up. Run: \x1b[1msky check\x1b[0m"


@dataclass
class FakeResources:
    kwargs: dict[str, Any]

    def __hash__(self) -> int:
        return id(self)


@dataclass
class FakeTask:
    name: str | None
    kwargs: dict[str, Any]

    @property
    def clouds(self) -> set[str]:
        resources = self.kwargs["resources"]
        items = resources if isinstance(resources, set) else {resources}
        return {r.kwargs.get("infra", "").split("/")[0] for r in items}


@dataclass
class FakeRequest:
    request_id: str
    name: str
    run: Callable[[], Any]
    body: str = "{}"
    status: str = "PENDING"
    value: Any = None
    error: BaseException | None = None
    hold: bool = False


@dataclass
class Payload:
    request_id: str
    status: str
    name: str = ""
    request_body: str = "{}"


@dataclass
class Calls:
    launches: list[tuple[str, FakeTask]] = field(default_factory=list)
    cancels: list[list[int]] = field(default_factory=list)
    queues: int = 0


class FakeJobs:
    def __init__(self, sky: FakeSky) -> None:
        self._sky = sky

    def launch(
        self,
        task: Any,
        name: str | None = None,
        pool: str | None = None,
        num_jobs: int | None = None,
        job_group: Any = AUTO_JOB_GROUP,
        _need_confirmation: bool = False,
    ) -> str:
        assert name is not None and task.name == name
        if self._sky.validate_errors:  # the real call validates before it returns an id
            raise self._sky.validate_errors.pop(0)
        self._sky.calls.launches.append((name, task))
        body = json.dumps({"task": "<yaml>", "name": name})
        return self._sky.submit("sky.jobs.launch", lambda: self._sky.run_launch(task, name), body)

    def queue_v2(
        self,
        refresh: bool,
        skip_finished: bool = False,
        all_users: bool = False,
        job_ids: list[int] | None = None,
        limit: int | None = None,
        fields: Sequence[str] | None = ("job_id", "job_name", "status"),
        sort_by: str | None = None,
        sort_order: str | None = None,
        statuses: list[str] | None = None,
        submitted_after: float | None = None,
        submitted_before: float | None = None,
        infra_match: str | None = None,
        name_match: str | None = None,
    ) -> str:
        self._sky.calls.queues += 1

        def run() -> tuple[list[dict[str, Any]], int, dict[str, int], int]:
            self._sky.require_controller()
            rows = [dict(r) for r in self._sky.managed if (name_match or "") in r["job_name"]]
            return rows, len(rows), {}, len(rows)

        return self._sky.submit("sky.jobs.queue_v2", run)

    def cancel(
        self,
        name: str | None = None,
        job_ids: Sequence[int] | None = None,
        all: bool = False,
        all_users: bool = False,
        pool: str | None = None,
        graceful: bool = False,
        graceful_timeout: int | None = None,
        task: int | str | None = None,
    ) -> str:
        ids = list(job_ids or [])
        self._sky.calls.cancels.append(ids)

        def run() -> None:
            self._sky.require_controller()
            for row in self._sky.managed:
                if row["job_id"] in ids and row["status"] not in TERMINAL:
                    row["status"] = "CANCELLING"

        return self._sky.submit("sky.jobs.cancel", run)

    def tail_logs(
        self,
        name: str | None = None,
        job_id: int | None = None,
        follow: bool = True,
        controller: bool = False,
        refresh: bool = False,
        tail: int | None = None,
        tail_offset: int | None = None,
        output_stream: Any = None,
        task: int | str | None = None,
        *,
        preload_content: bool = True,
    ) -> int | None:
        assert not follow, "following logs would block"
        assert output_stream is not None
        output_stream.write(self._sky.logs.get(job_id or -1, ""))
        return None


TERMINAL = {"SUCCEEDED", "FAILED", "CANCELLED", "FAILED_NO_RESOURCE", "FAILED_SETUP"}


class FakeSky:
    """The ``sky`` module as far as Starburst uses it."""

    def __init__(self) -> None:
        self.jobs = FakeJobs(self)
        self.requests: dict[str, FakeRequest] = {}
        self.managed: list[dict[str, Any]] = []
        self.logs: dict[int, str] = {}
        self.calls = Calls()
        self.no_capacity: set[str] = set()  # clouds whose launches raise at once
        self.errors: list[BaseException] = []  # next launch requests fail with these
        self.hold_launches = False
        self.enabled: list[str] = ["AWS", "Azure", "GCP"]  # what `sky check` enabled
        self.validate_errors: list[BaseException] = []  # next launch calls raise these
        self.controller_up = False  # SkyPilot's jobs controller: up from the first launch
        self._ids = itertools.count(1)
        self._job_ids = itertools.count(1)

    # -- the SDK surface --------------------------------------------------------------------
    def get(self, request_id: str) -> Any:
        request = self.requests[request_id]
        assert request.status in {"SUCCEEDED", "FAILED", "CANCELLED"}, "sky.get would block"
        if request.error is not None:
            raise request.error
        return request.value

    def api_status(
        self,
        request_ids: list[str] | None = None,
        all_status: bool = False,
        limit: int | None = None,
        fields: list[str] | None = None,
        cluster_name: str | None = None,
    ) -> list[Payload]:
        if request_ids is None:  # the unfinished requests, as the server lists them
            return [
                Payload(r.request_id, "RUNNING" if r.hold else r.status, r.name, r.body)
                for r in self.requests.values()
                if all_status or r.status not in {"SUCCEEDED", "FAILED", "CANCELLED"}
            ]
        found = []
        for rid in request_ids:
            request = self.requests.get(rid)
            if request is None:
                continue  # the server forgot it (restarted)
            if request.status == "PENDING" and not request.hold:
                self._execute(request)
            status = request.status if not request.hold else "RUNNING"
            found.append(Payload(rid, status, request.name, request.body))
        return found

    def api_info(self) -> dict[str, str]:
        return {"status": "healthy", "version": "fake"}

    def enabled_clouds(self, workspace: str | None = None, expand: bool = False) -> str:
        return self.submit("sky.enabled_clouds", lambda: list(self.enabled))

    def Task(self, name: str | None = None, **kwargs: Any) -> FakeTask:
        return FakeTask(name, kwargs)

    def Resources(self, **kwargs: Any) -> FakeResources:
        return FakeResources(kwargs)

    # -- the server side, driven by tests ------------------------------------------------------
    def submit(self, name: str, run: Callable[[], Any], body: str = "{}") -> str:
        rid = f"req-{next(self._ids)}"
        hold = self.hold_launches and name == "sky.jobs.launch"
        self.requests[rid] = FakeRequest(rid, name, run, body, hold=hold)
        return rid

    def release(self) -> None:
        self.hold_launches = False
        for request in self.requests.values():
            request.hold = False

    def require_controller(self) -> None:
        if not self.controller_up:
            raise ClusterNotUpError(NOT_UP)

    def run_launch(self, task: FakeTask, name: str) -> tuple[list[int], None]:
        if self.errors:
            raise self.errors.pop(0)
        if not self.enabled:
            raise NoCloudAccessError(NO_CLOUD_ACCESS)
        self.controller_up = True
        if task.clouds & self.no_capacity:
            raise ResourcesUnavailableError(f"no {sorted(task.clouds)[0]} capacity")
        job_id = next(self._job_ids)
        cloud = sorted(task.clouds)[0]
        self.managed.append(
            {
                "job_id": job_id,
                "job_name": name,
                "status": "PENDING",
                "recovery_count": 0,
                "failure_reason": None,
                "cloud": cloud,
                "submitted_at": 0.0,
                "end_at": None,
            }
        )
        return [job_id], None

    def set_status(self, job_id: int, status: str, **fields: Any) -> None:
        row = next(r for r in self.managed if r["job_id"] == job_id)
        row.update(status=status, **fields)

    def run_pending(self) -> None:
        """The server works through its requests whether or not a client is watching."""
        for request in list(self.requests.values()):
            if request.status == "PENDING":
                request.hold = False
                self._execute(request)

    def forget_requests(self) -> None:
        """The API server restarted and lost its request table."""
        self.requests.clear()

    def _execute(self, request: FakeRequest) -> None:
        try:
            request.value = request.run()
            request.status = "SUCCEEDED"
        except Exception as exc:
            request.error, request.status = exc, "FAILED"
