"""Auth off on a reachable address is refused unless explicitly allowed, and then loud."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from starburst.api.serve import warn_if_insecure
from starburst.settings import SettingsError, is_loopback, load_settings


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "10.0.0.7", "example.org"])
def test_auth_off_on_a_non_loopback_host_is_refused_naming_the_setting(host: str) -> None:
    with pytest.raises(SettingsError, match="allow_insecure_no_auth"):
        load_settings(auth=False, api_host=host)
    assert load_settings(auth=True, api_host=host).auth


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "::1", "[::1]", "localhost"])
def test_auth_off_on_loopback_is_the_single_machine_default(host: str) -> None:
    assert is_loopback(host) and not load_settings(auth=False, api_host=host).auth


def test_allowing_it_explicitly_starts_with_a_loud_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    settings = load_settings(auth=False, api_host="0.0.0.0", allow_insecure_no_auth=True)
    with caplog.at_level(logging.WARNING, logger="starburst.controller"):
        warn_if_insecure(settings)
    assert "INSECURE" in caplog.text and "0.0.0.0" in caplog.text
    caplog.clear()
    warn_if_insecure(load_settings())
    assert caplog.text == ""


def test_the_server_refuses_to_start(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "STARBURST_AUTH": "false",
        "STARBURST_API_HOST": "0.0.0.0",
        "STARBURST_STATE_DIR": str(tmp_path),
        "STARBURST_DATABASE_URL": f"sqlite:///{tmp_path / 'sb.db'}",
    }
    done = subprocess.run(
        [sys.executable, "-m", "starburst.cli", "server"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "allow_insecure_no_auth" in done.stderr and "Traceback" not in done.stderr
