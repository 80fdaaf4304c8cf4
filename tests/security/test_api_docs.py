"""``/docs`` loads nothing from outside and runs under a strict CSP (issue 38, finding 9).

Before the fix FastAPI's Swagger UI page loaded its script and style from a CDN, with no
Content-Security-Policy, while the product otherwise serves everything itself. A real
headless Chromium (``tests/support/browser.py``) opens the page with every other origin
blocked and must render the whole API without a CSP violation.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from starburst.adapters.db.store import SqlStore
from starburst.api import create_app
from starburst.settings import Settings
from tests.api.conftest import LiveServer
from tests.support import http
from tests.support.databases import upgrade
from tests.support.postgres import drop_database, fresh_database


@pytest.fixture(scope="module")
def url(postgres_url: str) -> Iterator[str]:
    database = fresh_database(postgres_url, "apidocs")
    upgrade(database)
    store = SqlStore.open(database)
    server = LiveServer(create_app(Settings(database_url=database), store, auth=True)).start()
    try:
        yield server.url
    finally:
        server.stop()
        store.close()
        drop_database(database)


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    from tests.support.browser import ARGS, chromium_path

    path = chromium_path()
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=path, args=ARGS, headless=True)
        yield launched
        launched.close()


def test_docs_and_their_files_carry_a_strict_policy(url: str) -> None:
    with http.client(base_url=url, timeout=30) as client:
        page = client.get("/docs")
        assert page.status_code == 200
        policy = page.headers["content-security-policy"]
        assert "script-src 'self';" in policy and "default-src 'none'" in policy
        assert "unsafe-inline" not in policy and "unsafe-eval" not in policy
        assert "http" not in page.text.replace('="/docs/static/', "")  # no other origin
        assert client.get("/docs/static/swagger-ui-bundle.js").status_code == 200
        assert client.get("/docs/static/dashboard.js").status_code == 404  # listed files only
        assert client.get("/redoc").status_code == 404  # its script came from a CDN too


def test_swagger_ui_renders_offline_without_a_csp_violation(url: str, chromium: Any) -> None:
    context = chromium.new_context()
    outside: list[str] = []

    def only_ours(route: Any) -> None:
        if route.request.url.startswith(url):
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    context.route("**/*", only_ours)
    page = context.new_page()
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    try:
        page.goto(f"{url}/docs")
        page.wait_for_selector(".opblock-summary-path", timeout=30_000)
        paths = page.eval_on_selector_all(
            ".opblock-summary-path", "nodes => nodes.map(n => n.getAttribute('data-path'))"
        )
    finally:
        context.close()
    assert "/v1/jobs" in paths and "/v1/costs" in paths
    assert outside == []
    assert problems == []
