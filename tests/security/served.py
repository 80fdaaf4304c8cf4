"""A real ``starburst server`` for the attack tests: auth on, the local cluster, PostgreSQL
that demands a password, that password in the controller's ``STARBURST_DATABASE_URL``.

Fixtures (import them into a test module): ``password_postgres`` (module-scoped: a migrated
database of its own on ``password_server``, the session's throwaway server with a password,
from ``conftest.py``) and ``server`` (a fresh ``starburst server`` subprocess, with a ``user``
and an ``admin`` token). ``require_root()`` skips a test that needs root to
switch users, with the reason — but under ``CI`` it fails instead, so it cannot go unrun.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from sqlalchemy import make_url

from starburst.adapters.db.store import SqlStore
from starburst.core.records import Role
from tests.support import http
from tests.support.databases import upgrade
from tests.support.postgres import (
    ThrowawayPostgres,
    drop_database,
    find_bindir,
    fresh_database,
    required,
)
from tests.support.waiting import wait_for

PASSWORD = f"pw-{uuid.uuid4().hex}"
TERMINAL = ("succeeded", "failed", "cancelled")


def require_root() -> None:
    if os.geteuid() == 0:
        return
    why = "jobs get uids of their own only when the controller runs as root"
    if os.environ.get("CI"):
        pytest.fail(f"{why}; CI must run this test as root")
    pytest.skip(why)


@pytest.fixture(scope="session")
def password_server() -> Iterator[tuple[str, str]]:
    """A throwaway server that demands ``PASSWORD``, and the name of a migrated template
    database on it: ``(server URL, template)``. One per session, not one per module."""
    bindir = find_bindir()
    if bindir is None:
        if required():
            pytest.fail("no PostgreSQL binaries (install the test extra)")
        pytest.skip("no PostgreSQL binaries")
    server = ThrowawayPostgres(bindir, password=PASSWORD).start()
    try:
        template = fresh_database(server.url, prefix="sb_template")
        upgrade(template)
        yield server.url, make_url(template).database or ""
    finally:
        server.stop()


@pytest.fixture(scope="module")
def password_postgres(password_server: tuple[str, str]) -> Iterator[str]:
    """A migrated database of the module's own (a copy of the template) on the password
    server: its URL, with the password."""
    url = fresh_database(password_server[0], template=password_server[1])
    yield url
    drop_database(url)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Served:
    url: str
    proc: subprocess.Popen[bytes]
    state: Path
    work: Path  # local_work_dir
    tokens: dict[str, str]
    db_url: str  # the controller's, with the password
    passwordless_db_url: str  # what an attacker can guess: the URL without the password


@pytest.fixture
def server(password_postgres: str, tmp_path: Path) -> Iterator[Served]:
    require_root()
    # jobs must reach their homes: not under pytest's tmp_path, which is 0700
    outside = Path(tempfile.mkdtemp(prefix="starburst-work-"))
    os.chmod(outside, 0o711)
    store = SqlStore.open(password_postgres)
    store.accounts.save_user("mallory", team="ml")
    store.accounts.save_user("root-admin")
    tokens = {
        "user": store.accounts.issue_token("mallory", Role.USER).secret,
        "admin": store.accounts.issue_token("root-admin", Role.ADMIN).secret,
    }
    store.close()
    state = tmp_path / "state"
    port = free_port()
    env = {
        "PATH": os.environ["PATH"],
        "HOME": os.environ.get("HOME", "/root"),
        "STARBURST_DATABASE_URL": password_postgres,
        "STARBURST_AUTH": "true",
        "STARBURST_STATE_DIR": str(state),
        "STARBURST_CLOUD": "none",
        "STARBURST_LOCAL_WORK_DIR": str(outside / "work"),
        "STARBURST_API_PORT": str(port),
        "STARBURST_PASS_INTERVAL_S": "0.2",
    }
    with (tmp_path / "server.log").open("ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "starburst.cli", "server"],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"

    def ready() -> bool:
        try:
            return http.get(f"{url}/readyz", timeout=1).status_code == 200
        except httpx.HTTPError:
            return proc.poll() is not None

    try:
        assert wait_for(ready, timeout=60) and proc.poll() is None, (
            tmp_path / "server.log"
        ).read_text()
        db = make_url(password_postgres)
        guess = f"postgresql://{db.username}@{db.host}:{db.port}/{db.database}"
        assert PASSWORD not in guess
        yield Served(url, proc, state, outside / "work", tokens, password_postgres, guess)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(outside, ignore_errors=True)


def submit(client: httpx.Client, command: str, env: dict[str, str] | None = None) -> str:
    made = client.post(
        "/v1/jobs", json={"image": "none", "command": command, "gpus": 1, "env": env or {}}
    )
    assert made.status_code == 201, made.text
    return str(made.json()["id"])


def wait_ended(client: httpx.Client, job_id: str) -> None:
    def done() -> bool:
        return client.get(f"/v1/jobs/{job_id}").json()["state"] in TERMINAL

    assert wait_for(done, timeout=60), client.get(f"/v1/jobs/{job_id}").json()


def run_job(client: httpx.Client, command: str, env: dict[str, str] | None = None) -> str:
    job_id = submit(client, command, env)
    wait_ended(client, job_id)
    return job_id
