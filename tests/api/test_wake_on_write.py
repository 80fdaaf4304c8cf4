"""``starburst server`` wakes the scheduler after a successful POST, and only then."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import FastAPI, HTTPException

from starburst.api.wake import WakeOnWrite
from tests.support import http


def test_a_successful_post_wakes_the_scheduler_and_nothing_else_does(
    serve: Callable[[Any], Any],
) -> None:
    woken: list[int] = []
    app = FastAPI()

    @app.post("/v1/jobs", status_code=201)
    def submit() -> dict[str, str]:
        return {"id": "a"}

    @app.post("/v1/jobs/{job_id}/cancel")
    def cancel(job_id: str) -> dict[str, str]:
        raise HTTPException(409, f"{job_id} already ended")

    @app.get("/v1/jobs")
    def listing() -> list[str]:
        return []

    app.add_middleware(WakeOnWrite, wake=lambda: woken.append(1))
    with http.client(base_url=serve(app).url) as client:
        assert client.get("/v1/jobs").status_code == 200
        assert client.post("/v1/jobs/a/cancel").status_code == 409
        assert woken == []
        assert client.post("/v1/jobs").status_code == 201
        assert woken == [1]
