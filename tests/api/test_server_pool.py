"""The suite's pool of live servers (``tests/api/conftest.py``): a lent server answers with the
app of the test that borrowed it, and one that still holds a connection is never lent again."""

from __future__ import annotations

from fastapi import FastAPI

from tests.api.conftest import ServerPool
from tests.support import http


def named(name: str) -> FastAPI:
    app = FastAPI()

    @app.get("/who")
    def who() -> str:
        return name

    return app


def test_a_returned_server_serves_the_next_app_and_nothing_between() -> None:
    pool = ServerPool()
    try:
        server, lent = pool.lend(named("first"))
        with http.client(base_url=server.url) as client:
            assert client.get("/who").json() == "first"
        pool.give_back(server, lent)
        with http.client(base_url=server.url) as client:
            assert client.get("/who").status_code == 503  # in the pool: no test's app
        again, lent = pool.lend(named("second"))
        assert again is server
        with http.client(base_url=again.url) as client:
            assert client.get("/who").json() == "second"
        pool.give_back(again, lent)
    finally:
        pool.close()


def test_a_server_with_an_open_connection_is_stopped_not_lent_again() -> None:
    pool = ServerPool()
    try:
        server, lent = pool.lend(named("first"))
        with http.client(base_url=server.url) as client:
            assert client.get("/who").json() == "first"  # the connection stays open
            pool.give_back(server, lent, grace_s=0.05)
            assert not server.thread.is_alive()
        other, lent = pool.lend(named("second"))
        assert other is not server
        pool.give_back(other, lent)
    finally:
        pool.close()
