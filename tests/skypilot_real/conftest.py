"""Fixtures of the real-SkyPilot tier: one API server per session, the SDK pointed at it.

``sky_server`` starts ``sky api start`` once (seconds to start, tens of seconds until its
workers answer on a loaded machine) and stops it with ``sky api stop`` at the end.
``sky`` is the real SDK module with this process's environment pointed at that server for
the duration of one test (``HOME``, ``SKYPILOT_API_SERVER_ENDPOINT``), restored afterwards.
Without the ``sky`` command the tier skips, except under ``CI``, where it fails.
``STARBURST_TEST_SKY_SERVER=HOME:PORT`` reuses a server already running (while developing).
The Kubernetes-infra module enables Kubernetes on that shared server, so it runs last
(``pytest_collection_modifyitems``); every other test sees a server with no infra.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.skypilot_real.server import SkyServer, server_port, sky_binary
from tests.support.waiting import wait_for

WARM_TIMEOUT_S = 480.0  # the first request waits for the workers: minutes when loaded


LAST_MODULE = "test_kubernetes_infra"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The module that enables Kubernetes on the shared server runs after everything else."""
    items.sort(
        key=lambda item: item.module is not None and item.module.__name__.endswith(LAST_MODULE)
    )


def _import_sky() -> ModuleType:
    """The SDK, reading its endpoint afresh: it caches the server URL process-wide on first
    use (``get_server_url``), so an earlier test in the same run (tests/cloud, tests/doctor)
    would otherwise leave it talking to SkyPilot's default port instead of this server."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import sky
        from sky.server import common

    common.get_server_url.cache_clear()
    common.is_api_server_local.cache_clear()
    return sky


def settled(sky: Any, request_id: str, timeout: float = 120.0) -> str:
    """Wait (bounded) until the API server finished ``request_id``; its final status."""
    status: list[str] = []

    def finished() -> bool:
        payloads = sky.api_status(request_ids=[request_id])
        status[:] = [str(p.status) for p in payloads]
        return bool(status) and status[0] in {"SUCCEEDED", "FAILED", "CANCELLED"}

    assert wait_for(finished, timeout=timeout), f"{request_id} still {status} after {timeout}s"
    return status[0]


@pytest.fixture(scope="session")
def sky_server() -> Iterator[SkyServer]:
    binary = sky_binary()
    if binary is None:
        message = "the `sky` command is not installed (pip install -e '.[test]')"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    reuse = os.environ.get("STARBURST_TEST_SKY_SERVER")  # HOME:PORT of a running server
    if reuse:
        home, _, port = reuse.rpartition(":")
        yield SkyServer(Path(home), int(port), binary)
        return
    # not pytest's tmp_path: a concurrent pytest run may prune those while the server runs
    home = Path(tempfile.mkdtemp(prefix="starburst-sky-"))
    server = SkyServer(home, server_port(), binary)
    try:
        server.start()
    except BaseException:
        shutil.rmtree(home, ignore_errors=True)
        raise
    try:
        with pytest.MonkeyPatch.context() as patch:
            for key, value in server.env.items():
                patch.setenv(key, value)
            sky = _import_sky()
            # the first request waits for the server's workers: wait for them once, here
            status = settled(sky, sky.client.sdk.enabled_clouds(), timeout=WARM_TIMEOUT_S)
            assert status == "SUCCEEDED", server.log_tail()
        yield server
    finally:
        server.stop()
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture
def sky(sky_server: SkyServer, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """The real SDK, talking to the session's API server for this test."""
    for key, value in sky_server.env.items():
        monkeypatch.setenv(key, value)
    return _import_sky()
