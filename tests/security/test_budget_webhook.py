"""The budget webhook cannot be turned against the inside (issue 38, finding 8).

Before the fix any http(s) URL was accepted (the cloud's metadata address, the database's
port on loopback), redirects were followed (a POST became a GET to another port), and a
failure logged the whole URL with its credentials and query key. Real HTTP servers on
loopback stand in for the internal services.
"""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from starburst.controller.loop import budgets
from starburst.settings import Settings, SettingsError, load_settings


class Recorder(ThreadingHTTPServer):
    """An HTTP server on loopback that records (method, path) and answers ``status``."""

    def __init__(self, status: int = 200, location: str | None = None) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.seen: list[tuple[str, str]] = []
        self.status, self.location = status, location

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class Handler(BaseHTTPRequestHandler):
    server: Recorder

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        self.server.seen.append((self.command, self.path))
        self.send_response(self.server.status)
        if self.server.location:
            self.send_header("Location", self.server.location)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_POST = _answer

    def log_message(self, *_: object) -> None:
        pass


@pytest.fixture
def servers() -> Iterator[list[Recorder]]:
    running: list[Recorder] = []
    yield running
    for server in running:
        server.shutdown()
        server.server_close()


def start(servers: list[Recorder], **kw: object) -> Recorder:
    server = Recorder(**kw)  # type: ignore[arg-type]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    servers.append(server)
    return server


ALERT = {"team": "ml", "message": "spent"}


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254/latest/meta-data/",
        "http://127.0.0.1:5432/",
        "http://localhost:8080/hook",
        "http://[::1]/hook",
        "http://[::ffff:127.0.0.1]/hook",
        "https://10.1.2.3/hook",
        "http://192.168.0.1/",
        "http://0.0.0.0/",
    ],
)
def test_settings_refuse_an_internal_webhook_naming_the_allow_list(url: str) -> None:
    with pytest.raises(SettingsError, match="budget_webhook_allow"):
        load_settings(budget_webhook=url)


def test_an_admin_allows_internal_targets_by_network_or_name() -> None:
    assert Settings(budget_webhook="http://10.1.2.3/h", budget_webhook_allow=["10.0.0.0/8"])
    assert Settings(budget_webhook="http://localhost/h", budget_webhook_allow=["localhost"])
    assert Settings(budget_webhook="https://hooks.example.com/services/x").budget_webhook


def test_an_alert_to_loopback_is_not_sent(servers: list[Recorder]) -> None:
    database = start(servers)  # stands in for a service on the controller's loopback
    budgets.post_json(f"{database.url}/hook", ALERT)
    assert database.seen == []


def test_a_name_resolving_to_an_internal_address_is_refused(servers: list[Recorder]) -> None:
    from starburst.controller.webhook import post_json

    internal = start(servers)
    port = internal.server_address[1]
    url = f"http://hooks.example.test:{port}/hook"
    to_loopback = lambda host, port: ["127.0.0.1"]  # noqa: E731 - a DNS answer
    assert post_json(url, ALERT, lookup=to_loopback) is False
    assert internal.seen == []
    allowed = post_json(url, ALERT, lookup=to_loopback, allow=["hooks.example.test"])
    assert allowed is True and internal.seen == [("POST", "/hook")]


def test_a_redirect_is_not_followed(servers: list[Recorder]) -> None:
    from starburst.controller.webhook import post_json

    other = start(servers)
    hook = start(servers, status=307, location=f"{other.url}/elsewhere")
    assert post_json(f"{hook.url}/hook", ALERT, allow=["127.0.0.1"]) is False
    assert hook.seen == [("POST", "/hook")]
    assert other.seen == []


def test_failures_log_no_credentials_query_or_path_secret(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    secret = f"http://finance:pa55word@127.0.0.1:{port}/services/T0/S3CRET?key=k3y"
    caplog.set_level(logging.WARNING, logger="starburst.controller")
    budgets.post_json(secret, ALERT)
    from starburst.controller.webhook import post_json

    post_json(secret, ALERT, allow=["127.0.0.0/8"])  # allowed: the connection itself fails
    logged = caplog.text
    assert "budget webhook" in logged
    assert not [s for s in ("pa55word", "finance", "S3CRET", "k3y") if s in logged]
