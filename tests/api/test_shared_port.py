"""``api_reuse_port``: several API processes of one user on one machine share the port (as
the chart's replicas share its Service), and the kernel spreads connections over them; a
port held without it still stops a second process with a clear message."""

from __future__ import annotations

import http.client
import socket
from collections.abc import Iterator

import pytest

from starburst.api.serve import listening_sockets, shared_port
from starburst.settings import load_settings
from tests.api.conftest import LiveServer
from tests.support.controlplane_process import free_port


def _named(name: bytes):  # type: ignore[no-untyped-def]
    """An ASGI app that answers every request with ``name``."""

    async def app(scope, receive, send):  # type: ignore[no-untyped-def]
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": name})

    return app


@pytest.fixture
def two_on_one_port() -> Iterator[int]:
    port = free_port()
    first = LiveServer(_named(b"first"), [shared_port("127.0.0.1", port)]).start()
    second = LiveServer(_named(b"second"), [shared_port("127.0.0.1", port)]).start()
    yield port
    first.stop()
    second.stop()


def _answer(port: int) -> str:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", "/")
        return conn.getresponse().read().decode()
    finally:
        conn.close()


def test_two_servers_share_a_port_and_both_take_connections(two_on_one_port: int) -> None:
    # each new connection goes to one listener by a hash of its addresses: 64 of them all
    # landing on one of two listeners has odds of 2**-63
    seen = {_answer(two_on_one_port) for _ in range(64)}
    assert seen == {"first", "second"}


def test_a_port_held_without_reuse_is_refused_with_a_clear_message() -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        with pytest.raises(SystemExit, match=rf"cannot listen on 127\.0\.0\.1:{port}: .*in use"):
            shared_port("127.0.0.1", port)


def test_an_unknown_host_is_a_clear_error() -> None:
    with pytest.raises(SystemExit, match=r"cannot listen on no-such-host\.invalid:8080"):
        shared_port("no-such-host.invalid", 8080)


def test_the_setting_decides_who_binds() -> None:
    port = free_port()
    assert listening_sockets(load_settings(api_port=port)) is None  # uvicorn binds, as before
    sockets = listening_sockets(load_settings(api_port=port, api_reuse_port=True))
    assert sockets is not None
    try:
        assert sockets[0].getsockname()[1] == port
        assert sockets[0].getsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT) == 1
    finally:
        for sock in sockets:
            sock.close()


def test_the_server_is_handed_the_shared_socket(monkeypatch: pytest.MonkeyPatch) -> None:
    import signal

    from starburst.api.serve import StopSignals

    handed: list[object] = []

    class Recording:
        should_exit = False

        def run(self, sockets: list[socket.socket] | None = None) -> None:
            handed.append(sockets)

    monkeypatch.setattr(signal, "signal", lambda *a: None)  # pytest's handlers stay
    monkeypatch.setattr("starburst.api.serve.settle_heap", lambda: None)
    sock = socket.socket()
    try:
        StopSignals().install().serve(Recording(), [sock])
        StopSignals().install().serve(Recording())
    finally:
        sock.close()
    assert handed == [[sock], None]
