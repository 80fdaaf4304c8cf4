"""Two running jobs cannot reach each other: each local job runs as a uid of its own.

Through a real ``starburst server`` run as root (auth on, the local cluster, default
settings): a victim job with a secret in its env and a file in its home keeps running while
an attacker job, told the victim's pid and home, tries to read its
``/proc/<pid>/environ``, list and read its working directory through ``/proc/<pid>/cwd`` and
directly, read its output log, and signal it. When every local job ran as one user
(``local_run_as: nobody``) each of these worked. The attacker's positive controls — its own
``/proc/self/environ`` and a file in its own home — show that the refusals are the uid's
doing. When the victim ends its uid is given back and its home removed.
"""

from __future__ import annotations

import re
from pathlib import Path

from starburst.settings import parse_uid_range
from tests.security.served import Served, password_postgres, server, submit, wait_ended
from tests.support import http
from tests.support.waiting import wait_for

__all__ = ["password_postgres", "server"]

JOB_UIDS = parse_uid_range("60000-60999")  # the default local_job_uids
VICTIM = r"""
echo "victim pid $$ uid $(id -u) home $HOME"
echo victim-file-c41d > "$HOME/secret.txt"
echo victim-output-9e02
exec sleep 120
"""


def attack(pid: int, home: str, log: str) -> str:
    return f"""
echo "attacker uid $(id -u)"
grep -q STARBURST_JOB_ID /proc/self/environ && echo SELF-ENVIRON-OK
echo mine > "$HOME/own.txt" && cat "$HOME/own.txt" && echo OWN-HOME-OK
tr '\\0' '\\n' < /proc/{pid}/environ && echo READ-ENVIRON-OK
ls /proc/{pid}/cwd/ && echo LIST-CWD-OK
cat /proc/{pid}/cwd/secret.txt && echo READ-CWD-OK
cat {home}/secret.txt && echo READ-HOME-OK
cat {log} && echo READ-LOG-OK
kill -0 {pid} && echo SIGNAL-OK
kill -9 {pid} && echo KILL-OK
echo "== done"
"""


def test_a_running_job_cannot_read_or_signal_another(server: Served) -> None:
    headers = {"Authorization": f"Bearer {server.tokens['user']}"}
    with http.client(base_url=server.url, headers=headers, timeout=10) as user:
        victim = submit(user, VICTIM, {"VICTIM_SECRET": "hunter2-env-77aa"})

        def started() -> re.Match[str] | None:
            return re.search(
                r"victim pid (\d+) uid (\d+) home (\S+)", user.get(f"/v1/jobs/{victim}/logs").text
            )

        assert wait_for(lambda: started() is not None, timeout=60)
        found = started()
        assert found is not None
        pid, victim_uid, home = int(found[1]), int(found[2]), found[3]
        log = server.state / "cluster" / victim / "output.log"
        attacker = submit(user, attack(pid, home, str(log)))
        wait_ended(user, attacker)
        out = user.get(f"/v1/jobs/{attacker}/logs").text
        still = user.get(f"/v1/jobs/{victim}").json()["state"]
        user.post(f"/v1/jobs/{victim}/cancel")
        wait_ended(user, victim)

    assert "== done" in out, out
    attacker_uid = int(out.split("attacker uid ", 1)[1].split()[0])
    for uid in (victim_uid, attacker_uid):
        assert JOB_UIDS[0] <= uid <= JOB_UIDS[1]
    assert attacker_uid != victim_uid
    assert "SELF-ENVIRON-OK" in out and "OWN-HOME-OK" in out, out  # the controls
    for leaked in (
        "hunter2-env-77aa",
        "victim-file-c41d",
        "victim-output-9e02",
        "READ-ENVIRON-OK",
        "LIST-CWD-OK",
        "READ-CWD-OK",
        "READ-HOME-OK",
        "READ-LOG-OK",
        "SIGNAL-OK",
        "KILL-OK",
    ):
        assert leaked not in out, f"{leaked} in the attacker's output:\n{out}"
    assert still == "running_onprem"  # the kill did not reach it
    assert wait_for(lambda: not Path(home).exists())  # removed at its end
