"""A controller's own probes (``starburst controller``): what each route answers, and that the
controller's process runs them without FastAPI (``starburst.api.probes``)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from prometheus_client import CollectorRegistry, Counter

from starburst.adapters.db.store import SqlStore
from starburst.adapters.local import LocalCluster
from starburst.api.probes import Probes
from starburst.api.serve import probes_app
from starburst.controller.daemon import Health
from starburst.controller.wiring import wire_controller
from starburst.settings import Settings
from tests.support.clock import ManualClock
from tests.support.databases import upgrade


def ask(app: object, method: str, path: str) -> httpx.Response:
    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)  # type: ignore[arg-type]
        async with httpx.AsyncClient(transport=transport, base_url="http://probe") as client:
            return await client.request(method, path)

    return asyncio.run(go())


def probes(health: Health) -> Probes:
    registry = CollectorRegistry()
    Counter("starburst_probe_test", "a metric of this test", registry=registry).inc(3)
    return Probes(lambda: health, registry)


@pytest.mark.parametrize(
    ("health", "status", "body"),
    [
        (Health(True, "leading"), 200, {"status": "ready", "detail": "leading"}),
        (
            Health(True, "leading", degraded="no cloud enabled"),
            200,
            {"status": "degraded", "detail": "no cloud enabled"},
        ),
        (Health(False, "not leader"), 503, {"status": "not ready", "detail": "not leader"}),
    ],
)
def test_readyz_reports_the_controllers_health(
    health: Health, status: int, body: dict[str, str]
) -> None:
    reply = ask(probes(health), "GET", "/readyz")
    assert reply.status_code == status
    assert reply.headers["content-type"] == "application/json"
    assert reply.json() == body


def test_healthz_metrics_and_what_is_not_a_probe() -> None:
    app = probes(Health(False, "starting"))
    alive = ask(app, "GET", "/healthz")
    assert (alive.status_code, alive.json()) == (200, {"status": "ok"})  # alive, though not ready
    metrics = ask(app, "GET", "/metrics")
    assert metrics.status_code == 200
    assert metrics.headers["content-type"].startswith("text/plain; version=")
    assert "starburst_probe_test_total 3.0" in metrics.text
    head = ask(app, "HEAD", "/readyz")
    assert head.status_code == 503 and head.content == b""
    assert int(head.headers["content-length"]) == len(ask(app, "GET", "/readyz").content)
    missing = ask(app, "GET", "/v1/jobs")  # a controller serves no API
    assert (missing.status_code, missing.json()) == (404, {"detail": "Not Found"})
    posted = ask(app, "POST", "/readyz")
    assert (posted.status_code, posted.json()) == (405, {"detail": "Method Not Allowed"})
    assert posted.headers["allow"] == "GET, HEAD"


def test_a_controller_is_ready_after_its_first_pass_as_leader_or_standby(
    tmp_path: Path,
) -> None:
    """503 until its first pass; then 200 whether it leads or stands by (so a rollout of
    two replicas proceeds), the detail saying which (as the README says)."""
    url = f"sqlite:///{tmp_path / 'sb.db'}"
    upgrade(url)
    clock = ManualClock(1_000.0)
    settings = Settings(database_url=url, state_dir=tmp_path, cloud="none", local_gpus=0)
    store = SqlStore.open(url, clock=clock)
    controller = wire_controller(
        settings, store, LocalCluster(tmp_path / "c", 0, clock=clock), None
    )
    standby = wire_controller(settings, store, LocalCluster(tmp_path / "c", 0, clock=clock), None)
    try:
        app = probes_app(controller)
        assert ask(app, "GET", "/readyz").status_code == 503
        controller.run_pass()
        ready = ask(app, "GET", "/readyz")
        assert ready.status_code == 200 and ready.json() == {"status": "ready", "detail": "leading"}
        assert "starburst_pass_seconds" in ask(app, "GET", "/metrics").text
        assert standby.run_pass() is None
        waiting = ask(probes_app(standby), "GET", "/readyz")
        assert (waiting.status_code, waiting.json()) == (
            200,
            {"status": "ready", "detail": "standby: another replica leads"},
        )
    finally:
        standby.stop()
        controller.stop()
        store.close()


def test_a_controller_process_builds_its_probes_without_fastapi(tmp_path: Path) -> None:
    """What ``starburst controller`` imports up to serving, in a fresh interpreter."""
    url = f"sqlite:///{tmp_path / 'sb.db'}"
    upgrade(url)
    script = (
        "import json, sys\n"
        "from starburst.api import serve\n"
        "from starburst.adapters.db.migrate import require_schema\n"
        "from starburst.controller.wiring import build_controller\n"
        "from starburst.settings import Settings\n"
        "settings = Settings()\n"
        "require_schema(settings.database_url)\n"
        "controller = build_controller(settings)\n"
        "serve._uvicorn(serve.probes_app(controller), settings)\n"
        "controller.store.close()\n"
        "loaded = {m.split('.')[0] for m in sys.modules}\n"
        "print(json.dumps(sorted(loaded & {'fastapi', 'starlette'})))\n"
    )
    env = {
        **os.environ,
        "STARBURST_DATABASE_URL": url,
        "STARBURST_STATE_DIR": str(tmp_path),
        "STARBURST_CLOUD": "none",
        "STARBURST_LOCAL_GPUS": "0",
    }
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout) == []
