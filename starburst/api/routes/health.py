"""``/healthz``, ``/readyz`` and ``/metrics``: for probes and scrapers.

- ``/healthz``: 200 while the process serves requests (a liveness probe; it touches nothing).
- ``/readyz``: 200 when the database answers and the health probe (if any) has no objection;
  otherwise 503 with ``detail`` naming every problem ("database ... is unavailable: ...",
  "not leader"). A ready process whose cloud side cannot burst answers 200 with status
  ``degraded`` and the reason under ``checks.cloud``.
- ``/metrics``: the Prometheus text exposition of the registry given to ``create_app``. It
  carries each team's spend and budget use, so with auth on it needs a finance or admin token
  (a scraper sends one: ``bearer_token``/``authorization`` in Prometheus); anonymous callers
  get 401 and users 403. ``/healthz`` and ``/readyz`` need none (kubelet probes send none).
  A controller without the API (``starburst controller``) serves its metrics on its own
  probe port instead (``starburst.api.probes``), the address meant for the scraper alone.
"""

from __future__ import annotations

from fastapi import APIRouter, Response
from fastapi.responses import JSONResponse

from starburst.api.deps import ContextDep, FinanceDep
from starburst.core.errors import StarburstError
from starburst.core.lifecycle import JobState

router = APIRouter(tags=["health"])


@router.get("/healthz")
async def healthz() -> dict[str, str]:  # async: no thread-pool hand-off for a constant
    return {"status": "ok"}


@router.get("/readyz", response_model=None)
def readyz(ctx: ContextDep) -> JSONResponse:
    checks: dict[str, str] = {}
    try:
        ctx.store.jobs.count(JobState.QUEUED)
        checks["database"] = "ok"
    except StarburstError as exc:
        checks["database"] = str(exc)
    if ctx.health is not None:
        try:
            verdict = ctx.health()
        except Exception as exc:  # a broken probe must read "not ready", not crash the probe
            verdict = f"health probe failed: {type(exc).__name__}: {exc}"
        checks["controller"] = verdict or "ok"
    problems = [v for v in checks.values() if v != "ok"]
    if problems:
        return JSONResponse({"detail": "; ".join(problems), "checks": checks}, status_code=503)
    degraded = ctx.degraded() if ctx.degraded is not None else None
    if degraded:
        checks["cloud"] = degraded
        return JSONResponse({"status": "degraded", "detail": degraded, "checks": checks})
    return JSONResponse({"status": "ready", "checks": checks})


@router.get("/metrics", response_model=None)
def metrics(_reader: FinanceDep, ctx: ContextDep) -> Response:
    from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

    return Response(generate_latest(ctx.registry), media_type=CONTENT_TYPE_LATEST)
