"""Probes, metrics, and failures that must read as 4xx/503 with a person's message, never 500."""

from __future__ import annotations

import pytest

from tests.support import http


def test_healthz_and_readyz_need_no_token_and_readyz_reports_the_probe(  # type: ignore[no-untyped-def]
    db_url, clock, resources, open_store, serve
):
    from tests.api.conftest import build_api

    verdict: list[str | None] = [None]
    api = build_api(db_url, open_store(db_url), clock, resources, serve, health=lambda: verdict[0])
    anyone = api.client(None)
    assert anyone.get("/healthz").json() == {"status": "ok"}
    ready = anyone.get("/readyz")
    assert ready.status_code == 200 and ready.json()["checks"] == {
        "database": "ok",
        "controller": "ok",
    }
    verdict[0] = "not leader"
    standby = anyone.get("/readyz")
    assert standby.status_code == 503 and standby.json()["detail"] == "not leader"


def test_metrics_serve_the_registry_given_to_the_app(
    db_url,
    clock,
    resources,  # type: ignore[no-untyped-def]
    open_store,
    serve,
):
    from prometheus_client import CollectorRegistry, Gauge

    from tests.api.conftest import build_api

    registry = CollectorRegistry()
    Gauge("starburst_queue_length", "Jobs waiting", registry=registry).set(17)
    api = build_api(db_url, open_store(db_url), clock, resources, serve, metrics_registry=registry)
    answer = api.client("fin").get("/metrics")
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/plain")
    assert "starburst_queue_length 17.0" in answer.text
    default = build_api(db_url, open_store(db_url), clock, resources, serve)
    assert default.client("root").get("/metrics").status_code == 200


@pytest.fixture
def unreachable(resources):  # type: ignore[no-untyped-def]
    """An API whose PostgreSQL server refuses connections (nothing listens on port 1)."""
    from starburst.adapters.db.engine import create_engine
    from starburst.adapters.db.store import SqlStore
    from starburst.settings import Settings

    url = "postgresql://sb:s3cret@127.0.0.1:1/starburst"
    store = SqlStore(create_engine(url, check=False))
    resources.callback(store.close)
    return url, store, Settings(database_url=url)


@pytest.mark.parametrize("auth", [True, False])
def test_database_down_is_503_naming_the_url_without_its_password(unreachable, serve, auth):  # type: ignore[no-untyped-def]
    from starburst.api import create_app

    _url, store, settings = unreachable
    server = serve(create_app(settings, store, auth=auth))
    with http.client(base_url=server.url, headers={"Authorization": "Bearer sb_x"}) as client:
        answers = [
            client.get("/v1/jobs"),
            client.get("/v1/jobs/abc"),
            client.post("/v1/jobs", json={"image": "i", "command": "c", "gpus": 1}),
            client.get("/v1/costs"),
            client.get("/readyz"),
        ]
        assert client.get("/healthz").status_code == 200
    for answer in answers:
        assert answer.status_code == 503, answer.text
        detail = answer.json()["detail"]
        assert "127.0.0.1:1" in detail and "unavailable" in detail
        assert "s3cret" not in answer.text and "Traceback" not in answer.text


@pytest.mark.postgres
def test_a_postgres_server_that_stops_turns_requests_into_503(  # type: ignore[no-untyped-def]
    resources, serve, clock
):
    from starburst.adapters.db.store import SqlStore
    from starburst.api import create_app
    from starburst.settings import Settings
    from tests.support.databases import upgrade
    from tests.support.postgres import ThrowawayPostgres, find_bindir

    bindir = find_bindir()
    if bindir is None:
        pytest.skip("no PostgreSQL binaries to start a server this test may stop")
    pg = ThrowawayPostgres(bindir).start()
    resources.callback(pg.stop)
    upgrade(pg.url)
    store = SqlStore.open(pg.url, clock=clock)
    resources.callback(store.close)
    server = serve(create_app(Settings(database_url=pg.url), store, auth=False))
    with http.client(base_url=server.url) as client:
        assert client.get("/v1/jobs").status_code == 200
        pg.stop()
        down = client.get("/v1/jobs")
        assert down.status_code == 503 and "unavailable" in down.json()["detail"]
        assert client.get("/readyz").status_code == 503
