"""Jobs that would share the controller's uid (issue 10's audit, item 2), through the real CLI.

- The controller is non-dumpable (``controller/hardening.py``): a ``starburst server`` run as
  an unprivileged user (auth off, the single-user default, so jobs run as that same user)
  starts, runs a job, and that job cannot read the controller's ``/proc/<pid>/environ`` or
  its open files — while it reads its own (the control). Before, it printed the controller's
  whole environment, database URL included.
- With auth on, a controller whose local jobs would run as its own uid refuses to start with
  one line naming ``allow_shared_uid_jobs``: as root with ``local_job_uids`` empty (jobs would
  have run as root), and as an unprivileged user. With the opt-in it starts and logs a loud
  warning.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.security.served import TERMINAL, free_port, require_root
from tests.support import http
from tests.support.databases import upgrade
from tests.support.waiting import wait_for

NOBODY = 65534
MARKER = "controller-secret-5b7e"


@dataclass
class Box:
    """A state directory (with a migrated SQLite database) owned by whoever runs the server."""

    root: Path
    url: str


@pytest.fixture
def box() -> Iterator[Box]:
    require_root()
    root = Path(tempfile.mkdtemp(prefix="starburst-shared-"))  # pytest's tmp_path is 0700
    url = f"sqlite:///{root / 'starburst.db'}"
    upgrade(url)
    for path in (root, root / "starburst.db"):
        os.chown(path, NOBODY, NOBODY)
    yield Box(root, url)
    shutil.rmtree(root, ignore_errors=True)


def as_nobody() -> list[str]:
    probe = subprocess.run(
        [*_setpriv(), sys.executable, "-c", "import starburst"],
        capture_output=True,
        cwd="/",
        check=False,
    )
    if probe.returncode != 0:
        pytest.skip(f"uid {NOBODY} cannot run this Python: {probe.stderr.decode()[-200:]}")
    return _setpriv()


def _setpriv() -> list[str]:
    return ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]


def server(box: Box, prefix: list[str], **settings: str) -> tuple[subprocess.Popen[str], str]:
    port = free_port()
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(box.root),
        "CONTROLLER_MARKER": MARKER,
        "STARBURST_DATABASE_URL": box.url,
        "STARBURST_STATE_DIR": str(box.root / "state"),
        "STARBURST_CLOUD": "none",
        "STARBURST_API_PORT": str(port),
        "STARBURST_PASS_INTERVAL_S": "0.2",
        "STARBURST_LOG_FORMAT": "text",
        **{f"STARBURST_{k.upper()}": v for k, v in settings.items()},
    }
    proc = subprocess.Popen(
        [*prefix, sys.executable, "-m", "starburst.cli", "server"],
        env=env,
        cwd="/",
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    return proc, f"http://127.0.0.1:{port}"


def refused(proc: subprocess.Popen[str]) -> str:
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 2, out
    assert "Traceback" not in out
    return out


def serving(proc: subprocess.Popen[str], url: str) -> None:
    def ready() -> bool:
        try:
            return http.get(f"{url}/readyz", timeout=1).status_code == 200
        except httpx.HTTPError:
            return proc.poll() is not None

    assert wait_for(ready, timeout=120) and proc.poll() is None, proc.communicate()[0]


def stop(proc: subprocess.Popen[str]) -> str:
    proc.terminate()
    try:
        return proc.communicate(timeout=30)[0]
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.communicate()[0]


def test_a_job_of_the_controllers_own_uid_cannot_read_its_environment(box: Box) -> None:
    proc, url = server(box, as_nobody())  # auth off: the single-user default
    try:
        serving(proc, url)
        pid = proc.pid  # setpriv execs the server: the same pid
        script = f"""
echo "uid $(id -u)"
grep -q STARBURST_JOB_ID /proc/self/environ && echo SELF-ENVIRON-OK
ls /proc/self/fd > /dev/null && echo SELF-FD-OK
tr '\\0' '\\n' < /proc/{pid}/environ && echo READ-ENVIRON-OK
ls -l /proc/{pid}/fd/ && echo LIST-FD-OK
echo "== done"
"""
        with http.client(base_url=url, timeout=10) as client:
            made = client.post("/v1/jobs", json={"image": "i", "command": script, "gpus": 1})
            assert made.status_code == 201, made.text
            job_id = made.json()["id"]
            assert wait_for(
                lambda: client.get(f"/v1/jobs/{job_id}").json()["state"] in TERMINAL, timeout=60
            )
            out = client.get(f"/v1/jobs/{job_id}/logs").text
    finally:
        log = stop(proc)
    assert "== done" in out and f"uid {NOBODY}" in out, out + log
    assert "SELF-ENVIRON-OK" in out and "SELF-FD-OK" in out, out  # the controls
    for leaked in (MARKER, "STARBURST_DATABASE_URL", "READ-ENVIRON-OK", "LIST-FD-OK"):
        assert leaked not in out, f"{leaked} in the job's output:\n{out}"


def test_auth_on_with_jobs_as_root_is_refused_naming_the_opt_in(box: Box) -> None:
    proc, _ = server(box, [], auth="true", local_job_uids="")
    out = refused(proc)
    assert "local jobs would run as the controller's own uid (local_job_uids is empty)" in out
    assert "allow_shared_uid_jobs: true" in out


def test_auth_on_as_an_unprivileged_controller_is_refused(box: Box) -> None:
    proc, _ = server(box, as_nobody(), auth="true")
    out = refused(proc)
    assert "(the controller does not run as root)" in out and "allow_shared_uid_jobs" in out


def test_the_opt_in_starts_and_warns_loudly(box: Box) -> None:
    proc, url = server(box, as_nobody(), auth="true", allow_shared_uid_jobs="true")
    try:
        serving(proc, url)
    finally:
        log = stop(proc)
    assert "INSECURE: auth is on but local jobs run as the controller's own uid" in log


def test_emulated_bursts_beside_an_unprivileged_controller_need_the_opt_in_too() -> None:
    """The Helm trial (Kubernetes cluster, emulated cloud, a non-root pod): a burst runs in
    the controller's pod as its uid and could read its service-account token."""
    from starburst.controller.wiring import check_job_users
    from starburst.core.errors import ConfigError
    from starburst.settings import Settings

    trial = Settings(cluster="kubernetes", cloud="emulated", auth=True)
    with pytest.raises(ConfigError, match="emulated-cloud bursts would run as the controller"):
        check_job_users(trial, None)
    check_job_users(trial.model_copy(update={"allow_shared_uid_jobs": True}), None)
    check_job_users(trial.model_copy(update={"auth": False}), None)  # single user: fine
