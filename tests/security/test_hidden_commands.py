"""Issue 38, finding 2: a job cannot read another job's command, nor what it runs.

The root wrapper carried each job's whole command in its argv, and so did the job's own
``/bin/sh -c``: ``tr '\\0' ' ' </proc/<pid>/cmdline`` (or ``ps aux``) from any job showed
every running job's command line, secrets in it included. Now the command reaches the job's
shell on its standard input (a memory file only the wrapper and the job hold), and each job
sees a ``/proc`` of its own (``hidepid``, in a mount namespace of its own) where processes of
other uids do not exist — so neither the command nor the argv of what it starts shows.
The attacker's positive controls: its own processes are listed, its own argv readable.
"""

from __future__ import annotations

import contextlib
import re
from pathlib import Path

from starburst.adapters.local import LocalCluster
from tests.local.lives import job, on_local
from tests.security.local_jobs import outside, pool, run
from tests.support.waiting import wait_for

__all__ = ["outside"]

IN_COMMAND = "hunter2-in-the-command-5be1"
IN_ARGV = "hunter2-in-a-childs-argv-77c0"
VICTIM = f"""
: {IN_COMMAND}
echo "victim uid $(id -u) pid $$"
sleep 120 &
exec /bin/sh -c 'wait; sleep 120' starburst-test {IN_ARGV}
"""
ATTACK = r"""
echo "attacker uid $(id -u)"
cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\0' ' '; echo
ps -eo uid=,args= 2>/dev/null
tr '\0' ' ' < /proc/self/cmdline && echo OWN-CMDLINE-OK
echo "== done"
"""


def test_a_job_sees_neither_the_command_nor_the_processes_of_another(
    outside: Path, tmp_path: Path
) -> None:
    cluster = LocalCluster(tmp_path / "state", 2, users=pool(outside / "work"))
    cluster.start(job("victim", VICTIM), on_local(1), "fits")
    try:
        started = wait_for(lambda: re.search(r"victim uid (\d+)", cluster.logs("victim")))
        victim_uid = int(started[1])
        # the control: the victim's child runs with the secret in its argv
        assert wait_for(lambda: any(IN_ARGV.encode() in argv for argv in _cmdlines()))
        end = run(cluster, "attacker", ATTACK)
    finally:
        cluster.cancel("victim")
    out = cluster.logs("attacker")
    assert end.succeeded and "== done" in out, out
    attacker_uid = int(out.split("attacker uid ", 1)[1].split()[0])
    assert attacker_uid != victim_uid
    assert "OWN-CMDLINE-OK" in out
    assert f"{attacker_uid} " in out  # ps lists the attacker's own processes
    for leaked in (IN_COMMAND, IN_ARGV, str(victim_uid)):
        assert leaked not in out, f"{leaked} in the attacker's output:\n{out}"


def _cmdlines() -> list[bytes]:
    """Every process's argv, as the machine's /proc shows it (to root)."""
    found = []
    for entry in Path("/proc").iterdir():
        with contextlib.suppress(OSError):
            if entry.name.isdigit():
                found.append((entry / "cmdline").read_bytes())
    return found
