"""``starburst doctor``'s SkyPilot lines against the session's real API server (no cloud
enabled), and against an endpoint where nothing listens."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from starburst.doctor.cloud import skypilot
from starburst.settings import load_settings
from tests.skypilot_real.server import SkyServer, free_port
from tests.support.databases import upgrade


@pytest.fixture
def db(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'sb.db'}"
    upgrade(url)
    return url


def test_a_reachable_server_with_no_cloud_enabled(
    sky: ModuleType, sky_server: SkyServer, db: str
) -> None:
    settings = load_settings(
        database_url=db, cloud="skypilot", skypilot_api_server=sky_server.endpoint
    )
    server, clouds = skypilot(settings, timeout=180)
    assert server.ok and sky_server.endpoint in server.detail and "healthy" in server.detail
    assert not clouds.ok and clouds.detail == "no cloud enabled in SkyPilot"
    assert clouds.fix is not None and "sky check" in clouds.fix


def test_an_endpoint_where_nothing_listens(sky: ModuleType, db: str, tmp_path: Path) -> None:
    # in a process of its own, as an admin runs it: the SDK, once it has talked to one
    # server, may answer api_info for another endpoint set later in the same process
    nowhere = f"http://127.0.0.1:{free_port()}"
    env = {
        **os.environ,
        "HOME": str(tmp_path),
        "STARBURST_DATABASE_URL": db,
        "STARBURST_CLOUD": "skypilot",
        "STARBURST_SKYPILOT_API_SERVER": nowhere,
    }
    env.pop("SKYPILOT_API_SERVER_ENDPOINT", None)
    done = subprocess.run(
        [sys.executable, "-m", "starburst.cli", "doctor"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    (line,) = [x for x in done.stdout.splitlines() if " skypilot:" in x]
    assert line.startswith("PROBLEM") and "Traceback" not in done.stdout + done.stderr
    assert "fix: start the API server (sky api start)" in done.stdout
