"""SkyPilot API requests in flight, resolved without waiting, and the managed-jobs view.

Terms:
- *request*: what every SkyPilot SDK call returns at once (a request id). ``Requests`` keeps
  the ids in flight and, once per ``resolve`` pass, asks the API server for all their
  statuses in one ``api_status`` call; only finished ones are fetched with ``get`` (which then
  returns at once or raises the request's exception).
- *in-flight launch*: a ``jobs.launch`` request the API server accepted but has not finished;
  its managed job may not be in the queue yet. ``in_flight_launches`` lists them by launch
  name (from the request body), so a restarted controller adopts such a request instead of
  launching again.
- *queue snapshot*: the managed-jobs table (``jobs.queue_v2``) restricted to Starburst's names,
  indexed by job name. Snapshots are numbered by the pass that *requested* them, so a caller
  can insist on a snapshot taken after some event ("after the restart", "after my launch").
  While SkyPilot's jobs controller is down (no managed job in progress) the queue request
  fails with ``ClusterNotUpError``: that is an empty snapshot.

Invariants: no method waits for a request to finish; a request id the server no longer knows
is reported as lost (``Resolved.lost``), never silently dropped; one queue request at most is
in flight.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from starburst.adapters.skypilot.api import REQUEST_FINISHED, SkyApi
from starburst.adapters.skypilot.outcomes import Failure, FailureKind, classify

LAUNCH_REQUEST = "sky.jobs.launch"  # the API server's name for jobs.launch requests
QUEUE_FIELDS = (
    "job_id",
    "job_name",
    "status",
    "recovery_count",
    "failure_reason",
    "infra",
    "cloud",
    "region",
    "submitted_at",
    "end_at",
)


@dataclass(frozen=True, slots=True)
class Resolved:
    """A finished request: its value, or the failure it raised, or ``lost``."""

    request_id: str
    value: Any = None
    failure: Failure | None = None
    lost: bool = False


def field_of(record: Any, name: str) -> Any:
    """A field of a queue record (pydantic ``ManagedJobRecord`` or a plain dict)."""
    if isinstance(record, dict):
        return record.get(name)
    return getattr(record, name, None)


@dataclass(slots=True)
class QueueSnapshot:
    seq: int = 0
    by_name: dict[str, list[Any]] = field(default_factory=dict)

    def named(self, name: str) -> list[Any]:
        """Records with this exact job name, newest (highest job id) last."""
        return sorted(self.by_name.get(name, []), key=lambda r: field_of(r, "job_id") or 0)


class Requests:
    """Request ids in flight and the latest managed-jobs snapshot."""

    def __init__(self, api: SkyApi, name_match: str) -> None:
        self._api = api
        self._name_match = name_match
        self._pending: set[str] = set()
        self._queue_request: str | None = None
        self._queue_seq = 0
        self.next_seq = 1
        self.snapshot = QueueSnapshot()
        self.last_error: Failure | None = None

    def track(self, request_id: str) -> str:
        self._pending.add(request_id)
        return request_id

    def resolve(self) -> dict[str, Resolved]:
        """Finished requests (launches, cancels) by id; updates the snapshot if one arrived."""
        ids = sorted(self._pending | ({self._queue_request} if self._queue_request else set()))
        if not ids:
            return {}
        try:
            payloads = self._api.api_status(request_ids=ids)
        except Exception as exc:
            self.last_error = classify(exc)
            return {}
        statuses = {str(field_of(p, "request_id")): str(field_of(p, "status")) for p in payloads}
        done: dict[str, Resolved] = {}
        for rid in ids:
            status = statuses.get(rid)
            if status is not None and status.upper() not in REQUEST_FINISHED:
                continue
            result = self._fetch(rid) if status is not None else Resolved(rid, lost=True)
            if rid == self._queue_request:
                self._take_queue(result)
            else:
                self._pending.discard(rid)
                done[rid] = result
        return done

    def in_flight_launches(self) -> dict[str, str] | None:
        """Unfinished ``jobs.launch`` requests on the API server by launch name (None: unknown)."""
        try:
            payloads = self._api.api_status(all_status=False)
        except Exception as exc:
            self.last_error = classify(exc)
            return None
        found: dict[str, str] = {}
        for payload in payloads:
            if field_of(payload, "name") != LAUNCH_REQUEST:
                continue
            if str(field_of(payload, "status")).upper() in REQUEST_FINISHED:
                continue
            try:
                body = json.loads(field_of(payload, "request_body") or "{}")
            except (TypeError, json.JSONDecodeError):
                continue
            if isinstance(body, dict) and isinstance(body.get("name"), str):
                found[body["name"]] = str(field_of(payload, "request_id"))
        return found

    def request_queue(self) -> None:
        """Ask for a fresh snapshot unless one is already on its way."""
        if self._queue_request is not None:
            return
        try:
            rid = self._api.jobs.queue_v2(
                refresh=False, fields=QUEUE_FIELDS, name_match=self._name_match
            )
        except Exception as exc:
            self.last_error = classify(exc)
            return
        self._queue_request, self._queue_seq = str(rid), self.next_seq
        self.next_seq += 1

    def _fetch(self, rid: str) -> Resolved:
        try:
            return Resolved(rid, value=self._api.get(rid))
        except Exception as exc:
            return Resolved(rid, failure=classify(exc))

    def _take_queue(self, result: Resolved) -> None:
        self._queue_request = None
        if result.failure is not None and result.failure.no_managed_jobs:
            result = Resolved(result.request_id, value=[])  # the jobs controller is not up
        if result.failure is not None or result.lost:
            self.last_error = result.failure or Failure(FailureKind.TRANSIENT, "queue lost")
            return
        self.last_error = None
        value = result.value
        records: Iterable[Any] = value[0] if isinstance(value, tuple) else (value or [])
        by_name: dict[str, list[Any]] = {}
        for record in records:
            by_name.setdefault(str(field_of(record, "job_name")), []).append(record)
        self.snapshot = QueueSnapshot(self._queue_seq, by_name)
