"""The shipped Compose deployment runs every job as a uid of its own (issue 10's audit, item 2).

It used to run the controller as the image's user 10001 with ``cluster: local``: every job
ran as the controller's own uid and could read its environment (the database URL with its
password) and state. Now the controller service runs as root inside its container, with only
the capabilities per-job uids take, and its settings give it the uid range; the API runs as
root with no capability (to read the root-only job output), migrate and bootstrap stay
unprivileged. Checked through the real composition: the settings the controller container
loads, resolved the way its process would (as root), give per-job uids; as the old user they
are refused at start-up.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from starburst.controller.wiring import check_job_users, job_users_of
from starburst.core.errors import ConfigError
from starburst.settings import load_settings
from tests.security.served import require_root

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
JOB_CAPABILITIES = {"SETUID", "SETGID", "CHOWN", "FOWNER", "DAC_OVERRIDE", "KILL"}


@pytest.fixture
def services() -> dict[str, Any]:
    return dict(yaml.safe_load((DEPLOY / "compose.yaml").read_text())["services"])


@pytest.fixture
def controller_settings(services: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    env = services["controller"]["environment"]
    for name, value in env.items():
        if name != "STARBURST_CONFIG":
            monkeypatch.setenv(
                name, value.replace("${POSTGRES_PASSWORD:?set POSTGRES_PASSWORD}", "pw")
            )
    outside = Path(tempfile.mkdtemp(prefix="starburst-work-"))
    os.chmod(outside, 0o711)
    monkeypatch.setenv("STARBURST_LOCAL_WORK_DIR", str(outside / "work"))  # not the host's /tmp
    yield load_settings(DEPLOY / "compose-settings.yaml")
    shutil.rmtree(outside, ignore_errors=True)


def test_the_controller_runs_as_root_with_only_the_capabilities_jobs_need(
    services: dict[str, Any],
) -> None:
    controller, api = services["controller"], services["api"]
    assert controller["user"] == "0:0"
    assert controller["cap_drop"] == ["ALL"] and set(controller["cap_add"]) == JOB_CAPABILITIES
    assert "no-new-privileges:true" in controller["security_opt"]
    assert api["user"] == "0:0" and api["cap_drop"] == ["ALL"] and "cap_add" not in api
    for name in ("migrate", "bootstrap"):
        assert "user" not in services[name] and "cap_add" not in services[name]
    state = {"controller": "state:/srv/starburst", "api": "state:/srv/starburst:ro"}
    for name, mount in state.items():
        assert mount in services[name]["volumes"]
        assert services[name]["environment"]["STARBURST_STATE_DIR"] == "/srv/starburst"
    assert not any("state:" in v for n in ("migrate", "bootstrap") for v in services[n]["volumes"])


def test_its_settings_give_every_job_a_uid_of_its_own(controller_settings: Any) -> None:
    require_root()
    settings = controller_settings
    assert (settings.cluster, settings.auth) == ("local", True)
    assert str(settings.state_dir) == "/srv/starburst"
    users = job_users_of(settings, euid=0)  # the controller container's process is root
    assert users is not None and (users.first, users.last) == (60000, 60999)
    check_job_users(settings, users)  # starts
    with pytest.raises(ConfigError, match="allow_shared_uid_jobs"):  # as the old user 10001
        check_job_users(settings, job_users_of(settings, euid=10001))
