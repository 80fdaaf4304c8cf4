"""``create_app``: the one place the REST API is wired (no app exists at import time).

    app = create_app(settings, store, auth=True, health=probe, metrics_registry=registry)
    uvicorn.run(app, host=settings.api_host, port=settings.api_port)

Keywords:
- ``auth`` (default True): require ``Authorization: Bearer <token>`` on every ``/v1`` route.
  ``auth=False`` is for the embedded single-machine default (``starburst server`` on
  127.0.0.1): every request then acts as an admin named ``local``. Never turn it off on an
  address others can reach.
- ``health``: a callable returning ``None`` when ready or the reason it is not; ``/readyz``
  reports it next to the database check.
- ``metrics_registry``: the ``prometheus_client`` registry ``/metrics`` serves (default: a new,
  empty ``CollectorRegistry``; the controller passes the one its metrics live in).
- ``clock``: supplies "now" for budgets, waits and cost so far (default: the wall clock).
- ``prices``: the price table for savings (default: ``settings.price_table`` or the shipped
  defaults, read when first needed).
- ``quote``: a callable returning the burst's price rule (the cloud port's ``quote``) that
  savings reuse (default: the cloud the settings name, built on first use).
- ``token_reviews``: who a Kubernetes bearer token belongs to, when ``kubernetes_auth`` is
  on (default: a ``TokenReviewer`` on the cluster the settings' ``kubeconfig`` names, else
  the in-cluster one).
- ``job_logs``: a callable returning the reader behind ``GET /v1/jobs/{id}/logs`` (see
  ``ApiContext``); None: the route answers 409 saying this API serves no job output.
- ``wake``: called after every successful write (a submission, a cancellation), as
  ``starburst server`` wakes its scheduler (``starburst.api.wake``); None: nothing is.

Besides ``/v1``, the app serves the cost dashboard at ``/ui`` (``starburst.api.ui``) and the
API's reference at ``/docs`` (``starburst.api.apidocs``), both from files it ships.
Well-formed submissions take a fast path in front of FastAPI's whole stack
(``StarburstApi``, ``starburst.api.fastsubmit``).

The caller owns ``store`` and closes it; the app never closes what it was given.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import Any

from fastapi import FastAPI
from starlette.types import ASGIApp, Receive, Scope, Send

from starburst.api import apidocs, errors, openapi, ui
from starburst.api.context import ApiContext, HealthProbe
from starburst.api.fastsubmit import SubmitFastPath, candidate
from starburst.api.finance import BurstQuote
from starburst.api.kubeauth import KubernetesTokens, TokenReviews
from starburst.api.limits import RequestLimits
from starburst.api.routes import (
    accounts,
    amendments,
    arrays,
    costs,
    jobs,
    nodes,
    queue,
    tuning,
    tuning_page,
)
from starburst.api.routes import health as health_routes
from starburst.api.routes import quote as quote_routes
from starburst.api.submissions import SubmissionBatcher
from starburst.api.wake import WakeOnWrite
from starburst.core.errors import ConfigError
from starburst.core.ports import Clock, Store
from starburst.settings import Settings
from starburst.wallclock import WallClock

__all__ = ["HealthProbe", "StarburstApi", "create_app"]


class StarburstApi(FastAPI):
    """The FastAPI app, with the submit fast path in front of its whole stack.

    A well-formed ``POST /v1/jobs`` (``fastsubmit.candidate``) goes to ``front`` before
    FastAPI and Starlette's layers (telemetry, body limit, server errors, our middleware,
    routing): on two cores they were a tenth of a submission's time in the HTTP thread.
    ``front`` keeps what those layers give a submission (``create_app`` builds it): the
    body limit, the 500 of an unexpected error, the wake after a write; anything it does
    not answer itself goes on through ``stack``, the app as it was, body replayed."""

    front: ASGIApp | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.front is not None and candidate(scope):
            await self.front(scope, receive, send)
            return
        await super().__call__(scope, receive, send)

    async def stack(self, scope: Scope, receive: Receive, send: Send) -> None:
        """FastAPI's whole stack, as every request other than a fast submission meets it."""
        await super().__call__(scope, receive, send)


def create_app(
    settings: Settings,
    store: Store,
    *,
    health: HealthProbe | None = None,
    metrics_registry: Any = None,
    auth: bool = True,
    clock: Clock | None = None,
    prices: Any = None,
    job_logs: Any = None,
    quote: Any = None,
    degraded: HealthProbe | None = None,
    token_reviews: TokenReviews | None = None,
    wake: Callable[[], None] | None = None,
) -> StarburstApi:
    """A new FastAPI app serving ``store``; see the module docstring for the keywords."""
    if metrics_registry is None:
        from prometheus_client import CollectorRegistry

        metrics_registry = CollectorRegistry()
    app = StarburstApi(
        title="Starburst",
        summary="Cost-aware scheduler for hybrid-cloud GPU clusters.",
        version="0.1.0",
        docs_url=None,  # FastAPI's pages load from a CDN: ``apidocs`` serves its own
        redoc_url=None,
        swagger_ui_oauth2_redirect_url=None,
    )
    app.state.starburst = ctx = ApiContext(
        settings=settings,
        store=store,
        clock=clock or WallClock(),
        auth=auth,
        health=health,
        registry=metrics_registry,
        prices=prices,
        job_logs=job_logs,
        quote=quote or BurstQuote(settings, clock or WallClock(), prices),
        degraded=degraded,
        submissions=SubmissionBatcher(store.submissions.writer, limits=settings.submit_limits()),
        kube=kubernetes_tokens(settings, token_reviews),
        wake=wake,
    )
    app.add_middleware(RequestLimits)  # inside the catch-all of errors.install
    errors.install(app)
    if wake is not None:
        app.add_middleware(WakeOnWrite, wake=wake)  # outermost: it sees every answer
    # in front of it all: a fast submission's unexpected error is the same 500 (and log)
    app.front = errors.CatchUnexpected(SubmitFastPath(app.stack, ctx))
    for module in (
        quote_routes,
        amendments,
        jobs,
        arrays,
        queue,
        nodes,
        costs,
        accounts,
        tuning,
        tuning_page,
        health_routes,
        ui,
        apidocs,
    ):
        app.include_router(module.router)
    openapi.install(app)
    return app


def kubernetes_tokens(settings: Settings, reviews: TokenReviews | None) -> KubernetesTokens | None:
    """The checker of Kubernetes tokens when ``kubernetes_auth`` is on (``reviews``, else a
    ``TokenReviewer`` on the settings' cluster), else None."""
    if not settings.kubernetes_auth:
        return None
    if reviews is None:
        from starburst.adapters.kubernetes.tokenreview import TokenReviewer
        from starburst.controller.wiring import kube_api_client

        if importlib.util.find_spec("kubernetes") is None:
            raise ConfigError(
                "kubernetes_auth needs the kubernetes package: pip install 'starburst[kubernetes]'"
            )

        reviews = TokenReviewer(
            kube_api_client(settings), audiences=settings.kubernetes_auth_audiences
        )
    return KubernetesTokens(reviews, settings.identity_map(), ttl=settings.kubernetes_auth_cache_s)
