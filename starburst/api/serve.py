"""Processes: ``server`` (controller + REST API), ``controller`` (with probes and metrics
only), ``api`` (REST API only). uvicorn owns SIGTERM/SIGINT: it stops serving, then the
controller finishes its pass and releases the leader lock before the process exits.
"""

from __future__ import annotations

import gc
import logging
import os
import signal
import socket
from typing import Any

from starburst.controller.daemon import Controller
from starburst.settings import Settings

log = logging.getLogger("starburst.controller")

#: allocations between young-generation collections while serving (CPython's default: 700)
YOUNG_THRESHOLD = 50_000


def settle_heap() -> None:
    """Before serving: what start-up built (modules, the app, the ORM's tables) leaves the
    cycle collector's sight, and young collections run every ``YOUNG_THRESHOLD`` allocations.

    With the defaults, a request's few thousand allocations trigger several collections,
    and the older generations' collections walk every start-up object again: measured with
    ``bench/api_bench.py`` at 32 submissions in flight, p99 ~135 ms and 0.46 ms of CPU per
    submit, against ~85 ms and 0.34 ms with the heap settled. Cycles are still collected.
    """
    gc.collect()
    gc.freeze()
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, older, oldest)


def _probe(controller: Controller) -> Any:
    def probe() -> str | None:
        health = controller.health()
        return None if health.ready else health.detail

    return probe


def _uvicorn(app: Any, settings: Settings) -> Any:
    import uvicorn

    # log_config None: uvicorn installs no handlers or formatters of its own, so its error
    # and access lines reach the root logger's handler and are JSON like ours (``logs``)
    config = uvicorn.Config(
        app,
        host=settings.api_host,
        port=settings.api_port,
        log_level="warning",
        log_config=None,
        lifespan="off",
    )
    return uvicorn.Server(config)


def shared_port(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port`` that other processes of this user may bind too
    (``SO_REUSEPORT``; the kernel gives each new connection to one of them, and refuses the
    port to another user's process). Not yet listening: the server listens on it."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        sock = socket.socket(family, kind, proto)
    except OSError as exc:
        raise SystemExit(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind(address)
    except OSError as exc:
        sock.close()
        raise SystemExit(
            f"cannot listen on {host}:{port}: {exc.strerror or exc} (with api_reuse_port, "
            "only processes of the same user that also set it can share a port)"
        ) from None
    return sock


def listening_sockets(settings: Settings) -> list[socket.socket] | None:
    """The sockets the server is handed (``api_reuse_port``), else None: uvicorn binds
    ``api_host:api_port`` itself, and a port in use stops the process."""
    if not settings.api_reuse_port:
        return None
    return [shared_port(settings.api_host, settings.api_port)]


def server_app(settings: Settings, controller: Controller) -> Any:
    """The REST API of ``controller``'s store; a submission wakes the scheduler at once."""
    from starburst.api import create_app
    from starburst.controller.job_output import JobLogs

    reader = JobLogs(controller.capabilities.logs, controller.cloud)
    app = create_app(
        settings,
        controller.store,
        health=_probe(controller),
        metrics_registry=controller.metrics.registry,
        auth=settings.auth,
        clock=controller.clock,
        job_logs=lambda: reader,
        degraded=lambda: controller.health().degraded,
        wake=controller.poke,
    )
    return app


def probes_app(controller: Controller) -> Any:
    """/healthz, /readyz and /metrics for a controller that serves no API (no FastAPI:
    ``starburst.api.probes``)."""
    from starburst.api.probes import Probes

    return Probes(controller.health, controller.metrics.registry)


class StopSignals:
    """SIGTERM and SIGINT, from the moment ``install`` runs to the process's end.

    uvicorn handles both while it serves and re-raises them when it is done; these handlers
    absorb the re-raise, so the process still stops the controller cleanly and exits 0
    instead of dying by the signal. A signal that arrives before uvicorn has taken over
    (while the controller is being built or started) is remembered: ``serve`` then tells
    the server to exit at once instead of serving (it used to be swallowed, and the process
    served on, deaf to the stop it had been sent).
    """

    def __init__(self) -> None:
        self.requested = False
        self._server: Any = None

    def install(self) -> StopSignals:
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self._note)
        return self

    def _note(self, sig: int, frame: object) -> None:
        log.info("stop signal received", extra={"signal": sig})
        self.requested = True
        if self._server is not None:
            self._server.should_exit = True

    def serve(self, server: Any, sockets: list[socket.socket] | None = None) -> None:
        """Run ``server`` (a ``uvicorn.Server``) unless a stop came first; on ``sockets``
        when given (``listening_sockets``), else on the port it binds."""
        self._server = server
        if self.requested:
            log.info("stopping before serving: a stop signal came first")
            return
        settle_heap()
        if sockets is None:
            server.run()
        else:
            server.run(sockets=sockets)


def warn_if_insecure(settings: Settings) -> None:
    """A loud warning when ``allow_insecure_no_auth`` opens the API to the network."""
    if settings.insecure_no_auth():
        log.warning(
            "INSECURE: auth is off and the API listens on %s (allow_insecure_no_auth): anyone "
            "who reaches it is admin and can run commands on this machine",
            settings.api_host,
        )


def run(settings: Settings, mode: str) -> None:
    from starburst.controller import structured_logs
    from starburst.controller.hardening import make_undumpable
    from starburst.controller.wiring import build_controller

    make_undumpable()  # no process of our uid (a local job) reads our environment or memory
    structured_logs.configure(settings.log_format)
    os.umask(0o077)  # every file this process writes (database, model, job state) is 0600
    warn_if_insecure(settings)
    from starburst.adapters.db.migrate import require_schema

    require_schema(settings.database_url)
    stops = StopSignals().install()
    sockets = listening_sockets(settings)  # before anything starts: a clash stops us here
    if mode == "api":
        from starburst.adapters.db.store import SqlStore
        from starburst.api import create_app
        from starburst.controller.wiring import job_logs_from

        store = SqlStore.open(settings.database_url)
        app = create_app(settings, store, auth=settings.auth, job_logs=job_logs_from(settings))
        stops.serve(_uvicorn(app, settings), sockets)
        store.close()
        return
    controller = build_controller(settings)
    app = server_app(settings, controller) if mode == "server" else probes_app(controller)
    controller.start()
    log.info("serving", extra={"mode": mode, "host": settings.api_host, "port": settings.api_port})
    try:
        stops.serve(_uvicorn(app, settings), sockets)
    finally:
        controller.stop()
        controller.store.close()
