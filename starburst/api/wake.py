"""``WakeOnWrite``: a successful write through the API wakes the scheduler at once.

``starburst server`` runs the controller in the API's process: a submission or a
cancellation then wakes its scheduling pass (``Controller.poke``), so the pass decides now
rather than at the next tick. ``create_app(..., wake=...)`` installs it; the submit fast path
(``starburst.api.fastsubmit``), which answers in front of it, calls the same ``wake``.
"""

from __future__ import annotations

from typing import Any


class WakeOnWrite:
    """ASGI middleware: a successful POST (a submission or a cancellation) calls ``wake``.
    Plain ASGI, not ``@app.middleware("http")``, whose per-request task and stream wrapping
    cost every request (``/healthz`` included) a large share of its time."""

    def __init__(self, app: Any, wake: Any) -> None:
        self.app = app
        self.wake = wake

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        status = 500

        async def watch(message: Any) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        await self.app(scope, receive, watch)
        if status < 300:
            self.wake()
