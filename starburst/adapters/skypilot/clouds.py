"""Which clouds SkyPilot can launch on: asked without waiting, remembered for a while.

Terms:
- *enabled clouds*: what the API server's ``enabled_clouds`` request returns (``sky check``
  decides it: credentials found, a kubeconfig context reachable), lower-case names such as
  ``aws`` or ``kubernetes``. Empty means SkyPilot can launch nothing.
- *answer*: the latest finished ``enabled_clouds`` request; a new one is sent when the answer
  is older than ``ttl`` seconds (so a ``sky check`` run by an admin is seen within ``ttl``).
- *degraded*: the cloud side cannot burst right now — no cloud enabled, or the API server
  did not answer; ``degraded()`` says why (None when it can, or before the first answer).

Invariants: at most one request in flight; nothing here waits for the API server; a failed
or lost request keeps the previous answer and is retried on the next refresh.
"""

from __future__ import annotations

from starburst.adapters.skypilot.api import REQUEST_FINISHED, SkyApi
from starburst.adapters.skypilot.outcomes import NO_CLOUD, Failure, classify
from starburst.adapters.skypilot.requests import field_of


class EnabledClouds:
    def __init__(self, api: SkyApi, ttl: float = 60.0) -> None:
        self._api = api
        self.ttl = ttl
        self.known: frozenset[str] | None = None
        self.answered_at: float | None = None
        self.last_error: Failure | None = None
        self._request: str | None = None
        self._asked_at = 0.0

    def refresh(self, now: float) -> None:
        """Collect the answer in flight, and ask again if the last one is too old."""
        if self._request is not None:
            self._collect()
        stale = self.answered_at is None or now - self.answered_at >= self.ttl
        if self._request is None and stale:
            try:
                self._request = str(self._api.enabled_clouds())
                self._asked_at = now
            except Exception as exc:
                self.last_error = classify(exc)

    def degraded(self) -> str | None:
        if self.last_error is not None:
            return f"SkyPilot API server: {self.last_error.reason}"
        if self.known is not None and not self.known:
            return NO_CLOUD
        return None

    def _collect(self) -> None:
        rid = self._request
        assert rid is not None
        try:
            payloads = self._api.api_status(request_ids=[rid])
        except Exception as exc:
            self.last_error = classify(exc)
            return
        status = next((str(field_of(p, "status")) for p in payloads), None)
        if status is not None and status.upper() not in REQUEST_FINISHED:
            return
        self._request = None
        if status is None:
            return  # the server forgot it (restarted): ask again
        try:
            value = self._api.get(rid)
        except Exception as exc:
            self.last_error = classify(exc)
            return
        self.known = frozenset(str(cloud).lower() for cloud in value or [])
        self.answered_at, self.last_error = self._asked_at, None
