"""Settings of a team's shared SkyPilot API server, and how the cloud is wired from them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from starburst.adapters.skypilot import SkyPilotCloud
from starburst.adapters.skypilot.api import ENDPOINT_ENV, TOKEN_ENV
from starburst.controller.wiring import build_cloud
from starburst.settings import SettingsError, load_settings
from starburst.wallclock import WallClock

TOKEN = "sky_0123456789abcdef"


def test_endpoint_and_token_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STARBURST_SKYPILOT_API_SERVER", "https://skypilot.example:8443")
    monkeypatch.setenv("STARBURST_SKYPILOT_API_TOKEN", TOKEN)
    settings = load_settings()
    assert settings.skypilot_api_server == "https://skypilot.example:8443"
    assert settings.skypilot_token() == TOKEN
    assert TOKEN not in repr(settings)  # a secret: never printed with the settings


def test_token_from_a_mounted_secret_file(tmp_path: Path) -> None:
    secret = tmp_path / "token"
    secret.write_text(TOKEN + "\n")
    settings = load_settings(skypilot_api_token_file=secret)
    assert settings.skypilot_token() == TOKEN


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"skypilot_api_server": "skypilot.example:8443"}, "http:// or https:// URL"),
        ({"skypilot_api_token": "abc"}, "starts with sky_"),
        ({"skypilot_api_token_file": "/nonexistent/token"}, "cannot read it"),
    ],
)
def test_bad_values_fail_at_start_with_one_line(values: dict[str, str], message: str) -> None:
    with pytest.raises(SettingsError, match=message):
        load_settings(**values)  # type: ignore[arg-type]


def test_the_cloud_is_wired_with_spot_and_reaches_the_team_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in (ENDPOINT_ENV, TOKEN_ENV):  # restored (or removed) after the test
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)
    settings = load_settings(
        cloud="skypilot",
        use_spot=True,
        skypilot_api_server="http://skypilot.team.svc:80/",
        skypilot_api_token=TOKEN,
    )
    cloud = build_cloud(settings, WallClock())
    assert isinstance(cloud, SkyPilotCloud) and cloud.spot
    cloud._sky()  # connects: the SDK reads the server and token from its own variables
    assert os.environ[ENDPOINT_ENV] == "http://skypilot.team.svc:80"
    assert os.environ[TOKEN_ENV] == TOKEN
