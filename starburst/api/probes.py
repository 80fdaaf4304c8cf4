"""The probes of a controller that serves no API: ``/healthz``, ``/readyz`` and ``/metrics``,
as a plain ASGI app.

``starburst controller`` answers three fixed routes. Built with FastAPI they cost the process
FastAPI and Starlette: the imports up to serving took 1.69-1.88 s of CPU with them and
1.21-1.30 s without (five runs each on 2 cores), in every restart of every replica. This app
imports neither; ``tests/api/test_probes.py`` checks that a controller's process never does.

- ``/healthz``: 200 ``{"status": "ok"}`` while the process serves (liveness).
- ``/readyz``: 200 with ``status`` "ready" — on the leader (``detail`` "leading") and on a
  standby ("standby: another replica leads") — or "degraded" (ready, but the cloud side
  cannot burst: ``detail`` says why); 503 "not ready" with the controller's ``detail``
  ("starting" before its first pass, a failed pass, a refusal to lead) otherwise.
- ``/metrics``: the Prometheus text exposition of the controller's registry.

Any other path is 404 and any method but GET or HEAD 405, each with a JSON ``detail`` as the
REST API answers them.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from starburst.controller.daemon import Health

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

JSON = b"application/json"


class Probes:
    """ASGI app: the three probe routes of a controller (its ``health`` and its metrics'
    ``registry``, a ``prometheus_client.CollectorRegistry``)."""

    def __init__(self, health: Callable[[], Health], registry: Any) -> None:
        self.health = health
        self.registry = registry
        self._routes: dict[str, Callable[[], tuple[int, bytes, bytes]]] = {
            "/healthz": self.healthz,
            "/readyz": self.readyz,
            "/metrics": self.metrics,
        }

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # uvicorn runs it with lifespan off; no websockets here
            return
        route = self._routes.get(scope["path"])
        extra: list[tuple[bytes, bytes]] = []
        if route is None:
            status, body, kind = 404, _json({"detail": "Not Found"}), JSON
        elif scope["method"] not in ("GET", "HEAD"):
            status, body, kind = 405, _json({"detail": "Method Not Allowed"}), JSON
            extra.append((b"allow", b"GET, HEAD"))
        else:
            status, body, kind = route()
        headers = [(b"content-type", kind), (b"content-length", str(len(body)).encode()), *extra]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        if scope["method"] == "HEAD":
            body = b""
        await send({"type": "http.response.body", "body": body})

    def healthz(self) -> tuple[int, bytes, bytes]:
        return 200, _json({"status": "ok"}), JSON

    def readyz(self) -> tuple[int, bytes, bytes]:
        health = self.health()
        status = "ready" if health.ready else "not ready"
        if health.ready and health.degraded:
            status = "degraded"
        body = {"status": status, "detail": health.degraded or health.detail}
        return 200 if health.ready else 503, _json(body), JSON

    def metrics(self) -> tuple[int, bytes, bytes]:
        return 200, generate_latest(self.registry), CONTENT_TYPE_LATEST.encode()


def _json(body: dict[str, str]) -> bytes:
    return json.dumps(body, separators=(",", ":")).encode()
