"""Fixtures for the REST API and the researcher CLI: real apps served by uvicorn on
127.0.0.1 (a free port, in a background thread) over a real ``SqlStore``.

``api`` is the usual starting point: a migrated SQLite database (a copy of a template built
once per session; PostgreSQL: one migrated database per session, emptied for each test), a
store on a hand-moved clock, an app with auth on, tokens for an admin, two users in different
teams and a finance reader, and ``api.client(who)`` to get an ``httpx.Client`` that sends that
caller's token. ``serve(app)`` runs any other app.
``browser`` is a headless Chromium (``tests/support/browser.py``) started once per module; each
test opens contexts of its own (cookies, storage, downloads), closed when it ends.
Clients are closed at the end of each test (warnings are errors).

``serve`` lends a server from a per-session pool instead of starting and stopping one per
test: stopping uvicorn costs ~0.15 s (up to one 0.1 s tick of its main loop, then a fixed 0.1 s
pause in its shutdown), paid by some 200 tests. A pooled server forwards each request to the
app the current test gave it; it goes back to the pool only once every connection to it has
closed, so no request of one test can reach the next test's app.
"""

from __future__ import annotations

import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

_ROOT = Path(__file__).resolve().parents[2]
if str(_ROOT) not in sys.path:
    sys.path.insert(0, str(_ROOT))

from tests.support import http  # noqa: E402
from tests.support import postgres as _postgres  # noqa: E402
from tests.support.clock import ManualClock  # noqa: E402
from tests.support.databases import MigratedTemplates, emptied  # noqa: E402

pytest.importorskip("fastapi")
postgres_url = _postgres.postgres_url


class LiveServer:
    """uvicorn serving ``app`` on 127.0.0.1 in a thread (on ``sockets`` when given, bound
    already); ``url`` once started."""

    def __init__(self, app: Any, sockets: list[socket.socket] | None = None) -> None:
        import uvicorn

        config = uvicorn.Config(
            app,
            host="127.0.0.1",
            port=0,
            log_level="warning",
            lifespan="off",
            ws="none",
            access_log=False,
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": sockets}, daemon=True
        )
        self.url = ""

    def start(self) -> LiveServer:
        self.thread.start()
        while not self.server.started:
            if not self.thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.002)
        port = self.server.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join()

    def idle(self) -> bool:
        """Whether no connection (and no request) is open on the server."""
        state = self.server.server_state
        return not state.connections and not state.tasks


class Lent:
    """The ASGI app of a pooled server: forwards to ``app``, the current test's (None when the
    server is in the pool, where any request is answered 503)."""

    def __init__(self) -> None:
        self.app: Any = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if self.app is None:
            await send({"type": "http.response.start", "status": 503, "headers": []})
            await send({"type": "http.response.body", "body": b"no test is using this server"})
            return
        await self.app(scope, receive, send)


class ServerPool:
    """uvicorn servers kept running between tests (see the module docstring)."""

    def __init__(self) -> None:
        self._idle: list[tuple[LiveServer, Lent]] = []

    def lend(self, app: Any) -> tuple[LiveServer, Lent]:
        server, lent = self._idle.pop() if self._idle else self._start()
        lent.app = app
        return server, lent

    def give_back(self, server: LiveServer, lent: Lent, grace_s: float = 1.0) -> None:
        """Return the server once its connections closed (its test closed its clients); one
        still holding a connection after ``grace_s`` is stopped instead."""
        deadline = time.monotonic() + grace_s
        while not server.idle() and time.monotonic() < deadline:
            time.sleep(0.001)
        lent.app = None
        if server.idle():
            self._idle.append((server, lent))
        else:
            server.stop()

    def close(self) -> None:
        while self._idle:
            self._idle.pop()[0].stop()

    @staticmethod
    def _start() -> tuple[LiveServer, Lent]:
        lent = Lent()
        return LiveServer(lent).start(), lent


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    from tests.support.browser import ARGS, chromium_path

    path = chromium_path()
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=path, args=ARGS, headless=True)
        yield launched
        launched.close()


@pytest.fixture
def browser(chromium: Any) -> Iterator[Any]:
    """The module's Chromium; the contexts a test opened are closed at its end (so their
    connections to the test's server close too)."""
    yield chromium
    for context in chromium.contexts:
        context.close()


@pytest.fixture(scope="session")
def templates() -> Iterator[MigratedTemplates]:
    made = MigratedTemplates()
    yield made
    made.close()


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def resources() -> Iterator[ExitStack]:
    with ExitStack() as stack:
        yield stack


@pytest.fixture(scope="session")
def server_pool() -> Iterator[ServerPool]:
    pool = ServerPool()
    yield pool
    pool.close()


@pytest.fixture
def serve(resources: ExitStack, server_pool: ServerPool) -> Callable[[Any], LiveServer]:
    """Serve an app on a live server (lent from the pool) until the end of the test."""

    def start(app: Any) -> LiveServer:
        server, lent = server_pool.lend(app)
        resources.callback(server_pool.give_back, server, lent)
        return server

    return start


@pytest.fixture
def open_store(resources: ExitStack, clock: ManualClock) -> Callable[[str], Any]:
    def opener(url: str) -> Any:
        from starburst.adapters.db.store import SqlStore

        store = SqlStore.open(url, clock=clock)
        resources.callback(store.close)
        return store

    return opener


@dataclass
class Api:
    """A served app and its callers: ``tokens`` maps alice, bob (users), fin (finance) and
    root (admin) to secrets; ``client(name)`` sends that caller's token (None: none)."""

    url: str
    db_url: str
    store: Any
    clock: ManualClock
    resources: ExitStack
    tokens: dict[str, str] = field(default_factory=dict)

    def client(self, who: str | None = "alice", token: str | None = None) -> Any:
        secret = token if token is not None else (self.tokens[who] if who else None)
        headers = {"Authorization": f"Bearer {secret}"} if secret else {}
        return self.resources.enter_context(
            http.client(base_url=self.url, headers=headers, timeout=10.0)
        )


PRICES = {
    "taken": "2026-01-01",
    "regions": {"aws": "us-east-1"},
    "gpus": {"A100": {"aws": {"on_demand": 4.0}, "gcp": {"on_demand": 3.0}}},
}


def build_api(
    db_url: str,
    store: Any,
    clock: ManualClock,
    resources: ExitStack,
    serve: Callable[[Any], LiveServer],
    **options: Any,
) -> Api:
    from starburst.api import create_app
    from starburst.core.records import Role
    from starburst.pricing import parse_price_table
    from starburst.settings import Settings

    options.setdefault("prices", parse_price_table(PRICES))
    settings = Settings(database_url=db_url, **options.pop("settings", {}))
    app = create_app(settings, store, clock=clock, **options)
    api = Api(serve(app).url, db_url, store, clock, resources)
    for name, team, role in (
        ("alice", "ml", Role.USER),
        ("bob", "vision", Role.USER),
        ("fin", None, Role.FINANCE),
        ("root", None, Role.ADMIN),
    ):
        store.accounts.save_user(name, team=team)
        api.tokens[name] = store.accounts.issue_token(name, role).secret
    return api


def serve_loop(
    db_url: str,
    store: Any,
    clock: ManualClock,
    resources: ExitStack,
    serve: Callable[[Any], LiveServer],
    cluster: Any,
    cloud: Any = None,
    policy: Any = None,
    loop_options: dict[str, Any] | None = None,
    **options: Any,
) -> tuple[Any, Api, dict[str, str]]:
    """A scheduling loop the test drives by hand (``loop.run_pass()``) beside the served API,
    and the environment that points the real CLI at it as alice: ``(loop, api, env)``.
    ``policy`` is a ``PolicyKind`` (default ``infinite``: nothing bursts) or a ``WaitPolicy``;
    ``loop_options`` are ``SchedulingLoop`` keywords (``hold``...)."""
    from starburst.controller.loop.scheduling import SchedulingLoop
    from starburst.core.cycle import SchedulerConfig
    from starburst.core.policy import PolicyKind, WaitPolicy

    chosen = policy if isinstance(policy, WaitPolicy) else WaitPolicy(policy or PolicyKind.INFINITE)
    config = SchedulerConfig(chosen, out_of_order=True)
    loop = SchedulingLoop(store, cluster, cloud, clock, config, **(loop_options or {}))
    api = build_api(db_url, store, clock, resources, serve, **options)
    return loop, api, {"STARBURST_SERVER": api.url, "STARBURST_TOKEN": api.tokens["alice"]}


@pytest.fixture(params=["sqlite"])
def db_url(request: pytest.FixtureRequest, templates: MigratedTemplates, tmp_path: Path) -> str:
    """A migrated database; tests choose PostgreSQL with ``parametrize(..., indirect=True)``.

    PostgreSQL: the session's migrated database, emptied (``TRUNCATE``, ~30 ms) rather than a
    copy made and dropped per test (~250 ms); migrations seed no rows, so an emptied database
    is what a new one holds, and a session a previous test left holding a lock fails this one
    within seconds instead of being dropped silently."""
    if request.param == "sqlite":
        return templates.sqlite_url(tmp_path)
    return emptied(request.getfixturevalue("pg_session_db"))


@pytest.fixture(scope="session")
def pg_session_db(postgres_url: str, templates: MigratedTemplates) -> Iterator[str]:
    url = templates.postgres_template(postgres_url)
    yield url
    _postgres.drop_database(url)


@pytest.fixture
def api_options(request: pytest.FixtureRequest) -> dict[str, Any]:
    """Keywords for ``create_app`` (``settings``: Settings fields); tests set them with
    ``parametrize("api_options", [...], indirect=True)``."""
    return dict(getattr(request, "param", {}))


@pytest.fixture
def api(
    db_url: str,
    clock: ManualClock,
    resources: ExitStack,
    open_store: Callable[[str], Any],
    serve: Callable[[Any], LiveServer],
    api_options: dict[str, Any],
) -> Api:
    return build_api(db_url, open_store(db_url), clock, resources, serve, **api_options)
