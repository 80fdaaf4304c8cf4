"""The CLI's own settings (``starburst config``, ``starburst.toml``, ``STARBURST_API_PORT``),
``server --help`` naming ``--host``, local times with the zone, honest durations — through
the real CLI against a served app."""

from __future__ import annotations

import stat
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from typer.testing import CliRunner

from starburst.cli.main import build_app
from starburst.core.lifecycle import JobState
from starburst.core.records import JobSpec


@pytest.fixture
def home(tmp_path: Path) -> Iterator[dict[str, str | None]]:
    """An environment with its own config directory and no server or token variables."""
    yield {
        "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
        "STARBURST_SERVER": None,
        "STARBURST_TOKEN": None,
        "STARBURST_API_PORT": None,
        "STARBURST_OUTPUT": None,
    }
    time.tzset()  # back to the process's own zone after tests that set TZ


def run(args: list[str], env: dict[str, str | None]):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(build_app(args), args, env=env, catch_exceptions=False)


def test_the_client_honours_starburst_api_port(api, home) -> None:  # type: ignore[no-untyped-def]
    port = str(urlsplit(api.url).port)
    env = {**home, "STARBURST_API_PORT": port, "STARBURST_TOKEN": api.tokens["alice"]}
    listed = run(["jobs"], env)
    assert listed.exit_code == 0, listed.stderr
    assert listed.stdout.startswith("no jobs")
    down = run(["jobs"], {**home, "STARBURST_API_PORT": "9"})
    assert down.exit_code == 2 and "http://127.0.0.1:9" in down.stderr


def test_config_set_show_and_use(api, home, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    assert run(["config", "set", "server", api.url], home).exit_code == 0
    assert run(["config", "set", "token", api.tokens["alice"]], home).exit_code == 0
    assert run(["config", "set", "output", "json"], home).exit_code == 0
    file = tmp_path / "cfg" / "starburst" / "starburst.toml"
    assert stat.S_IMODE(file.stat().st_mode) == 0o600
    shown = run(["config", "show"], home).stdout
    assert f"server: {api.url}\n" in shown and "output: json\n" in shown
    assert api.tokens["alice"] not in shown and api.tokens["alice"][:6] + "…" in shown

    api.store.submissions.submit(JobSpec(gpus=1, user="alice", name="cfg"))
    listed = run(["jobs"], home)  # server, token and format from the file
    assert listed.exit_code == 0, listed.stderr
    assert listed.stdout.lstrip().startswith("[") and '"name": "cfg"' in listed.stdout
    assert run(["jobs", "-o", "table"], home).stdout.startswith("POS")  # the flag wins
    assert run(["jobs"], {**home, "STARBURST_OUTPUT": "yaml"}).stdout.startswith("- id:")
    assert run(["config", "unset", "output"], home).exit_code == 0
    assert run(["jobs"], home).stdout.startswith("POS")

    bad = run(["config", "set", "colour", "red"], home)
    assert bad.exit_code == 2 and "unknown key 'colour'; known: server, token, output" in bad.stderr
    assert run(["config", "set", "output", "xml"], home).exit_code == 2
    assert run(["config", "set", "server", "localhost:1"], home).exit_code == 2
    file.write_text("server = [broken\n")
    broken = run(["jobs"], home)
    assert broken.exit_code == 2 and f"cannot read {file}" in broken.stderr


def test_server_help_shows_a_host_option() -> None:
    shown = run(["server", "--help"], {})
    assert shown.exit_code == 0 and "--host" in shown.stdout
    assert "--host" in run(["api", "--help"], {}).stdout


def test_times_are_local_with_the_zone_and_durations_honest(api, home) -> None:  # type: ignore[no-untyped-def]
    env = {**home, "STARBURST_SERVER": api.url, "STARBURST_TOKEN": api.tokens["alice"]}
    job = api.store.submissions.submit(
        JobSpec(gpus=1, user="alice")
    ).job.id  # at 2026-05-28 20:26:40 UTC
    utc = run(["status", job], {**env, "TZ": "UTC"}).stdout
    assert "submitted:   2026-05-28 20:26:40 UTC\n" in utc
    india = run(["status", job], {**env, "TZ": "Asia/Kolkata"}).stdout
    assert "submitted:   2026-05-29 01:56:40 IST\n" in india

    api.store.lifecycle.transition(
        job, JobState.QUEUED, reason="admitted", actor="controller", wait_budget=120
    )
    api.clock.advance(100)
    explained = run(["explain", job], env).stdout
    assert explained.startswith(
        f"{job}: waiting 1m40s of a 2m budget; on-prem when GPUs free, else the cloud in 20s"
    )
