"""The seam between Starburst and the SkyPilot SDK: the calls we make, in the SDK's own shapes.

SkyPilot's client SDK (``sky``, 0.14) talks to a SkyPilot API server. Every call below that
returns a ``RequestId`` (a ``str``) returns at once; the work happens on the server. A request
is *resolved* later: ``api_status([id])`` says whether it is PENDING, RUNNING or finished
(SUCCEEDED, FAILED, CANCELLED), and ``get(id)`` on a finished request returns its value or
raises the SDK exception it failed with. ``jobs.tail_logs(..., follow=False)`` is the one
synchronous call: it is only used to show logs to a person, never from the scheduling loop.

``SkyApi`` mirrors the real SDK's surface (``sky.get``, ``sky.api_status``, ``sky.api_info``,
``sky.Task``, ``sky.Resources``, ``sky.jobs.launch/queue_v2/cancel/tail_logs``, and
``sky.client.sdk.enabled_clouds``, which ``sky`` does not re-export) so that the real SDK's own
functions are the production implementation (``load_sky`` gathers them), and a test fake with
the same call shapes stands in for it. A test compares the fake's signatures with the
installed SDK's, so SDK drift fails the suite instead of a production launch; another tier
runs the adapter against a real API server (``tests/skypilot_real``).

What the real API server does that a reader would not guess (each pinned by that tier):
- ``jobs.launch`` *validates the task synchronously* (one blocking round trip to the server)
  before it returns the request id; a task the server cannot validate raises right there.
- ``jobs.queue_v2`` and ``jobs.cancel`` fail with ``ClusterNotUpError`` ("No in-progress
  managed jobs.") while SkyPilot's jobs controller is not up: an empty queue, not an error.
- ``jobs.tail_logs(follow=False)`` returns ``None``, and a logs request that failed on the
  server writes nothing and raises nothing.
- A launch with no cloud enabled fails with ``NoCloudAccessError``; error messages carry
  terminal colour codes.

Endpoint and credentials: SkyPilot's client reads the API server's address from
``SKYPILOT_API_SERVER_ENDPOINT`` and a service-account token from
``SKYPILOT_SERVICE_ACCOUNT_TOKEN`` (the way SkyPilot recommends teams share one server);
``load_sky(endpoint, token)`` sets both for this process before the first call.

Invariants: ``sky`` is imported only by ``load_sky`` (slow: seconds), never at import time of
Starburst; its import-time warnings are silenced there and nowhere else.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any, Protocol, cast


class SkyJobsApi(Protocol):
    """``sky.jobs``: managed jobs (recovery from preemption, failover across regions)."""

    def launch(
        self,
        task: Any,
        name: str | None = None,
        pool: str | None = None,
        num_jobs: int | None = None,
        job_group: Any = ...,
        _need_confirmation: bool = False,
    ) -> str: ...

    def queue_v2(
        self,
        refresh: bool,
        skip_finished: bool = False,
        all_users: bool = False,
        job_ids: list[int] | None = None,
        limit: int | None = None,
        fields: Sequence[str] | None = ...,
        sort_by: str | None = None,
        sort_order: str | None = None,
        statuses: list[str] | None = None,
        submitted_after: float | None = None,
        submitted_before: float | None = None,
        infra_match: str | None = None,
        name_match: str | None = None,
    ) -> str: ...

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
    ) -> str: ...

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
    ) -> Any: ...


class SkyApi(Protocol):
    """The ``sky`` module as Starburst uses it."""

    @property
    def jobs(self) -> SkyJobsApi: ...

    def get(self, request_id: str) -> Any: ...

    def api_status(
        self,
        request_ids: list[str] | None = None,
        all_status: bool = False,
        limit: int | None = None,
        fields: list[str] | None = None,
        cluster_name: str | None = None,
    ) -> list[Any]: ...

    def api_info(self) -> Any: ...

    def enabled_clouds(self, workspace: str | None = None, expand: bool = False) -> str: ...

    def Task(self, name: str | None = None, **kwargs: Any) -> Any: ...

    def Resources(self, **kwargs: Any) -> Any: ...


REQUEST_FINISHED = frozenset({"SUCCEEDED", "FAILED", "CANCELLED"})


ENDPOINT_ENV = "SKYPILOT_API_SERVER_ENDPOINT"
TOKEN_ENV = "SKYPILOT_SERVICE_ACCOUNT_TOKEN"


def load_sky(endpoint: str | None = None, token: str | None = None) -> SkyApi:
    """Import the real SDK (slow; only when a SkyPilot cloud is actually configured).

    ``endpoint`` and ``token`` (a team's shared API server) are handed to SkyPilot's client
    through its own environment variables; None leaves whatever the environment says."""
    if endpoint:
        os.environ[ENDPOINT_ENV] = endpoint.rstrip("/")
    if token:
        os.environ[TOKEN_ENV] = token
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the SDK's own deprecation noise at import time
        import sky
        from sky.client import sdk

    return cast(
        SkyApi,
        SimpleNamespace(
            jobs=sky.jobs,
            get=sky.get,
            api_status=sky.api_status,
            api_info=sky.api_info,
            enabled_clouds=sdk.enabled_clouds,
            Task=sky.Task,
            Resources=sky.Resources,
        ),
    )
