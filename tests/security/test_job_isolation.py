"""The escalation chain of issue 10, end to end: a ``user`` job must get nothing of the
controller's.

A real ``starburst server`` (auth on, local cluster) runs as root here — as the tests do — on a
PostgreSQL server that demands a password, with that password in its
``STARBURST_DATABASE_URL`` (``served.py``). An ordinary user submits a victim job, then an
attacker job that prints its environment, reads the victim's spawn record and output, lists
the state directory, reads the controller's ``/proc`` environment, signals the controller and
tries to make every token an admin through ``psql`` with whatever database URL it can find.
On the old code (jobs inherited the controller's environment and ran as root) every step
worked. The positive control, in the same test: ``psql`` with the controller's credentials,
run as an unprivileged uid of this machine, does reach the database — so the job's failure is
the isolation's doing, not a missing ``psql`` or an unreachable server.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from starburst.settings import parse_uid_range
from tests.security.served import (
    PASSWORD,
    Served,
    password_postgres,
    require_root,
    run_job,
    server,
)
from tests.support import http
from tests.support.waiting import wait_for

__all__ = ["password_postgres", "server"]

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
JOB_UIDS = parse_uid_range("60000-60999")  # the default local_job_uids
NOBODY = 65534


def psql_as_nobody(url: str, sql: str) -> subprocess.CompletedProcess[str]:
    """``psql`` run as an unprivileged uid, the way a job would run it."""
    psql = shutil.which("psql")
    assert psql is not None, "psql is needed for the escalation test (postgresql-client)"
    return subprocess.run(
        [
            "setpriv",
            f"--reuid={NOBODY}",
            f"--regid={NOBODY}",
            "--clear-groups",
            psql,
            url.replace("+psycopg", ""),
            "-w",
            "-tAc",
            sql,
        ],
        env={"PATH": os.environ["PATH"], "HOME": "/"},
        cwd="/",
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


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
    # the positive control: with the controller's credentials, psql (as an unprivileged uid,
    # like a job) reaches the database and reads the tokens; without them it is refused
    control = psql_as_nobody(server.db_url, "SELECT count(*) > 0 FROM api_tokens")
    assert control.returncode == 0 and control.stdout.strip() == "t", control
    guessed = psql_as_nobody(admin_url, "SELECT 1")
    assert guessed.returncode != 0 and "password" in guessed.stderr, guessed
    headers = {"Authorization": f"Bearer {tokens['user']}"}
    with http.client(base_url=url, headers=headers, timeout=10) as user:
        victim = run_job(user, "echo victim-output-7f3a", {"VICTIM_SECRET": "hunter2-victim"})
        attacker = run_job(user, attack_script(state, victim, proc.pid, admin_url))
        out = user.get(f"/v1/jobs/{attacker}/logs").text
        whoami = user.get("/v1/whoami").json()
        promote = user.post("/v1/tokens", json={"user": "mallory", "role": "admin"})

    assert "== done" in out, out
    uid = int(out.split("== id ", 1)[1].split()[0])
    assert JOB_UIDS[0] <= uid <= JOB_UIDS[1]  # a uid of its own, not the controller's root
    # psql ran and reached the server, which refused it for want of the password
    assert "password" in out.split("== end env", 1)[1], out
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
    with http.client(base_url=url, timeout=10) as anyone:
        victim_log = anyone.get(f"/v1/jobs/{victim}/logs", headers=headers).text
    assert "victim-output-7f3a" in victim_log  # the controller still reads every log


def test_emulated_cloud_jobs_run_as_their_own_uid_with_a_minimal_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from starburst.adapters.local import EmulatedCloud
    from starburst.adapters.local.jobusers import default_lock_dir, resolve_job_users
    from starburst.core.job import Job

    require_root()
    monkeypatch.setenv("STARBURST_DATABASE_URL", f"postgresql://u:{PASSWORD}@db/x")
    outside = Path(tempfile.mkdtemp(prefix="starburst-work-"))  # tmp_path is 0700
    os.chmod(outside, 0o711)
    monkeypatch.chdir("/")
    work = outside / "work"
    users = resolve_job_users(JOB_UIDS, work, default_lock_dir())
    assert users is not None
    cloud = EmulatedCloud(tmp_path / "state", users=users)
    job = Job("burst-1", 0.0, 1, extra={"command": "id -u; env; pwd", "env": '{"MINE": "1"}'})
    handle = cloud.launch(job, "budget expired")
    assert wait_for(lambda: cloud.poll(handle).value != "running")
    out = cloud.logs(handle)
    uid = int(out.splitlines()[1])
    assert JOB_UIDS[0] <= uid <= JOB_UIDS[1] and "MINE=1" in out and PASSWORD not in out
    assert f"PWD={work}/" in out  # its own working directory
    assert uid not in users.held() and not list(work.iterdir())  # given back
    shutil.rmtree(outside)
    names = {line.split("=", 1)[0] for line in out.splitlines()[2:] if "=" in line}
    assert names <= ALLOWED_ENV | {"MINE", "STARBURST_EMULATED"}, names


def test_a_uid_range_that_real_accounts_use_is_refused(tmp_path: Path) -> None:
    from starburst.adapters.local.jobusers import resolve_job_users
    from starburst.core.errors import ConfigError

    with pytest.raises(ConfigError, match=r"local_work_dir .* does not let other users pass"):
        resolve_job_users(JOB_UIDS, tmp_path / "work", tmp_path / "locks", euid=0)
    with pytest.raises(ConfigError, match=r"local_job_uids 0-0 holds .*user root"):
        resolve_job_users((0, 0), tmp_path, tmp_path, euid=0)
    with pytest.raises(ConfigError, match=r"local_job_uids 65534-65534 .*nobody"):
        resolve_job_users((NOBODY, NOBODY), tmp_path, tmp_path, euid=0)
    assert resolve_job_users(JOB_UIDS, tmp_path, tmp_path, euid=1000) is None  # not root
