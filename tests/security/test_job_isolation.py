"""The escalation chain of issue 10, end to end: a ``user`` job must get nothing of the
controller's.

A real ``starburst server`` (auth on, local cluster) runs as root here — as the tests do — on a
PostgreSQL server that demands a password, with that password in its
``STARBURST_DATABASE_URL``. An ordinary user submits a victim job, then an attacker job that
prints its environment, reads the victim's spawn record and output, lists the state
directory, reads the controller's ``/proc`` environment, signals the controller and tries to
make every token an admin through ``psql`` with whatever database URL it can find. On the old
code (jobs inherited the controller's environment and ran as root) every step worked.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from sqlalchemy import make_url

from starburst.adapters.db import migrate
from starburst.adapters.db.store import SqlStore
from starburst.core.records import Role
from tests.support.postgres import ThrowawayPostgres, find_bindir, required
from tests.support.waiting import wait_for

PASSWORD = f"pw-{uuid.uuid4().hex}"
ALLOWED_ENV = {
    "PATH",
    "HOME",
    "LANG",
    "PWD",
    "SHLVL",
    "_",
    "OLDPWD",
    "CUDA_VISIBLE_DEVICES",
    "STARBURST_JOB_ID",
    "STARBURST_SPAWN",
}

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="jobs switch users only under root")


@pytest.fixture(scope="module")
def password_postgres() -> Iterator[str]:
    bindir = find_bindir()
    if bindir is None:
        if required():
            pytest.fail("no PostgreSQL binaries (install the test extra)")
        pytest.skip("no PostgreSQL binaries")
    server = ThrowawayPostgres(bindir, password=PASSWORD).start()
    try:
        migrate.upgrade(server.url)
        yield server.url
    finally:
        server.stop()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Served:
    url: str
    proc: subprocess.Popen[bytes]
    state: Path
    tokens: dict[str, str]
    passwordless_db_url: str  # what an attacker can guess: the URL without the password


@pytest.fixture
def server(password_postgres: str, tmp_path: Path) -> Iterator[Served]:
    store = SqlStore.open(password_postgres)
    store.save_user("mallory", team="ml")
    store.save_user("root-admin")
    tokens = {
        "user": store.issue_token("mallory", Role.USER).secret,
        "admin": store.issue_token("root-admin", Role.ADMIN).secret,
    }
    store.close()
    state = tmp_path / "state"
    port = _free_port()
    env = {
        "PATH": os.environ["PATH"],
        "HOME": os.environ.get("HOME", "/root"),
        "STARBURST_DATABASE_URL": password_postgres,
        "STARBURST_AUTH": "true",
        "STARBURST_STATE_DIR": str(state),
        "STARBURST_CLOUD": "none",
        "STARBURST_LOCAL_WORK_DIR": str(tmp_path / "work"),
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
            return httpx.get(f"{url}/readyz", timeout=1).status_code == 200
        except httpx.HTTPError:
            return proc.poll() is not None

    try:
        assert wait_for(ready, timeout=60) and proc.poll() is None, (
            tmp_path / "server.log"
        ).read_text()
        db = make_url(password_postgres)
        guess = f"postgresql://{db.username}@{db.host}:{db.port}/{db.database}"
        assert PASSWORD not in guess
        yield Served(url, proc, state, tokens, guess)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _run_job(client: httpx.Client, command: str, env: dict[str, str] | None = None) -> str:
    made = client.post(
        "/v1/jobs", json={"image": "none", "command": command, "gpus": 1, "env": env or {}}
    )
    assert made.status_code == 201, made.text
    job_id = str(made.json()["id"])

    def done() -> bool:
        return client.get(f"/v1/jobs/{job_id}").json()["state"] in (
            "succeeded",
            "failed",
            "cancelled",
        )

    assert wait_for(done, timeout=60), client.get(f"/v1/jobs/{job_id}").json()
    return job_id


def attack_script(state: Path, victim: str, controller_pid: int, admin_url: str) -> str:
    victim_dir = state / "cluster" / victim
    return f"""
echo "== id $(id -u)"
echo "== env"; env; echo "== end env"
cat {victim_dir}/spawn.json && echo READ-SPAWN-OK
cat {victim_dir}/output.log && echo READ-LOG-OK
ls {state} && echo LIST-STATE-OK
cat /proc/{controller_pid}/environ && echo READ-PROC-OK
kill -0 {controller_pid} && echo SIGNAL-OK
url=$(printf '%s' "$STARBURST_DATABASE_URL" | sed 's/+psycopg//')
for target in "$url" "{admin_url}"; do
  [ -n "$target" ] && psql "$target" -w -c "UPDATE api_tokens SET role = 'admin'" \
      && echo ESCALATED
done
echo "== done"
"""


def test_a_user_job_sees_nothing_of_the_controller_and_cannot_become_admin(server: Served) -> None:
    url, proc, state, tokens = server.url, server.proc, server.state, server.tokens
    admin_url = server.passwordless_db_url
    headers = {"Authorization": f"Bearer {tokens['user']}"}
    with httpx.Client(base_url=url, headers=headers, timeout=10) as user:
        victim = _run_job(user, "echo victim-output-7f3a", {"VICTIM_SECRET": "hunter2-victim"})
        attacker = _run_job(user, attack_script(state, victim, proc.pid, admin_url))
        out = user.get(f"/v1/jobs/{attacker}/logs").text
        whoami = user.get("/v1/whoami").json()
        promote = user.post("/v1/tokens", json={"user": "mallory", "role": "admin"})

    assert "== done" in out, out
    assert "== id 65534" in out  # ran as nobody, not as the controller's root
    env_lines = out.split("== env\n", 1)[1].split("== end env", 1)[0].splitlines()
    names = {line.split("=", 1)[0] for line in env_lines if "=" in line}
    assert names <= ALLOWED_ENV, names - ALLOWED_ENV
    for leaked in (
        PASSWORD,
        "STARBURST_DATABASE_URL",
        "victim-output-7f3a",
        "hunter2-victim",
        "READ-SPAWN-OK",
        "READ-LOG-OK",
        "LIST-STATE-OK",
        "READ-PROC-OK",
        "SIGNAL-OK",
        "ESCALATED",
    ):
        assert leaked not in out, f"{leaked} in the attacker's output:\n{out}"
    assert whoami["role"] == "user"
    assert promote.status_code == 403
    assert state.stat().st_mode & 0o777 == 0o700
    victim_dir = state / "cluster" / victim
    assert victim_dir.stat().st_mode & 0o777 == 0o700
    for name in ("spawn.json", "output.log", "exit_code", "pid"):
        assert (victim_dir / name).stat().st_mode & 0o777 == 0o600, name
    with httpx.Client(base_url=url, timeout=10) as anyone:
        victim_log = anyone.get(f"/v1/jobs/{victim}/logs", headers=headers).text
    assert "victim-output-7f3a" in victim_log  # the controller still reads every log


def test_emulated_cloud_jobs_run_as_the_run_as_user_with_a_minimal_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from starburst.adapters.local import EmulatedCloud
    from starburst.adapters.local.isolation import resolve_run_as
    from starburst.core.job import Job

    monkeypatch.setenv("STARBURST_DATABASE_URL", f"postgresql://u:{PASSWORD}@db/x")
    run_as = resolve_run_as("nobody", tmp_path / "work")
    assert run_as is not None
    cloud = EmulatedCloud(tmp_path / "state", run_as=run_as)
    job = Job("burst-1", 0.0, 1, extra={"command": "id -u; env; pwd", "env": '{"MINE": "1"}'})
    handle = cloud.launch(job, "budget expired")
    assert wait_for(lambda: cloud.poll(handle).value != "running")
    out = cloud.logs(handle)
    assert "65534" in out and "MINE=1" in out and PASSWORD not in out
    assert f"PWD={tmp_path / 'work'}" in out  # its own working directory
    names = {line.split("=", 1)[0] for line in out.splitlines()[2:] if "=" in line}
    assert names <= ALLOWED_ENV | {"MINE", "STARBURST_EMULATED"}, names


def test_an_unknown_or_root_run_as_user_is_refused() -> None:
    from starburst.adapters.local.isolation import resolve_run_as
    from starburst.core.errors import ConfigError

    with pytest.raises(ConfigError, match="local_run_as: no OS user 'no-such-user-x'"):
        resolve_run_as("no-such-user-x", Path("/tmp/w"))
    with pytest.raises(ConfigError, match="is root"):
        resolve_run_as("0", Path("/tmp/w"))
