"""Which processes are a spawn's: identity through ``/proc``, so a recycled pid is never ours.

A job adopted after a restart is not this process's child: there is no ``Popen`` to wait on,
and its recorded pid may, after the job ended, belong to an unrelated process. So identity is
never the pid alone: a process is a spawn's only if its environment (``/proc/<pid>/environ``,
fixed at exec and inherited by the job's children) holds ``STARBURST_SPAWN=<token>``, the
token unique to that spawn (see ``statedir.py``).

Terms:
- *alive*: the process exists, is not a zombie and carries the token. A zombie has ended
  (its environment reads empty); it only awaits a reaper that may be gone.
- *group*: the job's process group, whose id is the wrapper's pid (``start_new_session``).
- *mid-exec*: for a moment after ``Popen`` returns, the new program's environment is not
  set up yet and ``environ`` reads empty (the parent is released when the old image is gone,
  before the kernel copies the new environment). A live process with an empty environment is
  read again for up to ``EXEC_SETTLE`` seconds before it is judged not ours.

- *user's processes*: every process whose real, effective, saved or filesystem uid is a
  given uid (``/proc/<pid>/status``, which a process cannot hide by making itself
  non-dumpable, as it can its ``/proc/<pid>`` owner). ``kill_user`` signals each through a
  pidfd, so a pid recycled between the look and the signal is never hit.

Linux only (``/proc``); every read tolerates the process vanishing meanwhile.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

PROC = Path("/proc")
TOKEN_VAR = "STARBURST_SPAWN"
EXEC_SETTLE = 0.5


def _marker(token: str) -> bytes:
    return f"{TOKEN_VAR}={token}".encode()


def _environ(pid: int) -> bytes | None:
    try:
        return (PROC / str(pid) / "environ").read_bytes()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None


def _carries(pid: int, token: str) -> bool:
    environ = _environ(pid)
    give_up = time.monotonic() + EXEC_SETTLE
    while environ == b"" and time.monotonic() < give_up:  # mid-exec (or a kernel thread)
        stat = _stat(pid)
        if stat is None or stat[0] == "Z":
            return False
        time.sleep(0.001)
        environ = _environ(pid)
    return environ is not None and _marker(token) in environ.split(b"\0")


def _stat(pid: int) -> tuple[str, int] | None:
    """The process's state letter and process group id, or None if it is gone."""
    try:
        text = (PROC / str(pid) / "stat").read_text(encoding="utf-8", errors="replace")
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    fields = text.rsplit(")", 1)[-1].split()  # the command name may hold spaces and ')'
    return fields[0], int(fields[2])


def _pids() -> Iterator[int]:
    with contextlib.suppress(FileNotFoundError):
        for entry in PROC.iterdir():
            if entry.name.isdigit():
                yield int(entry.name)


def _uids(pid: int) -> set[int]:
    """The real, effective, saved and filesystem uids of ``pid`` (empty if it is gone or a
    zombie: a process that has ended, awaiting its reaper, can do nothing more)."""
    try:
        text = (PROC / str(pid) / "status").read_text(encoding="utf-8", errors="replace")
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return set()
    if "\nState:\tZ" in text:
        return set()
    for line in text.splitlines():
        if line.startswith("Uid:"):
            return {int(field) for field in line.split()[1:]}
    return set()


def uids_running() -> set[int]:
    """Every uid some live process of this machine (pid namespace) runs as."""
    running: set[int] = set()
    for pid in _pids():
        running |= _uids(pid)
    return running


def kill_user(uid: int, sig: signal.Signals = signal.SIGKILL) -> int:
    """Send ``sig`` to every process running as ``uid``; how many were signalled."""
    hit = 0
    for pid in _pids():
        if uid not in _uids(pid):
            continue
        try:
            pidfd = os.pidfd_open(pid)
        except OSError:
            continue  # gone already
        try:
            if uid in _uids(pid):  # still the same process: the pidfd pins it
                signal.pidfd_send_signal(pidfd, sig)
                hit += 1
        except OSError:
            pass
        finally:
            os.close(pidfd)
    return hit


def alive(pid: int, token: str) -> bool:
    """True if ``pid`` runs (not a zombie) and belongs to the spawn ``token``."""
    stat = _stat(pid)
    return stat is not None and stat[0] != "Z" and _carries(pid, token)


def find_leader(token: str) -> int | None:
    """The pid of the spawn's wrapper (its group leader), found by scanning ``/proc``."""
    for pid in _pids():
        stat = _stat(pid)
        if stat is not None and stat[1] == pid and stat[0] != "Z" and _carries(pid, token):
            return pid
    return None


def group_is_ours(pgid: int, token: str) -> bool:
    """True if some live member of process group ``pgid`` belongs to the spawn ``token``."""
    for pid in _pids():
        stat = _stat(pid)
        if stat is not None and stat[1] == pgid and stat[0] != "Z" and _carries(pid, token):
            return True
    return False


def signal_group(pgid: int, token: str, sig: signal.Signals) -> None:
    """Send ``sig`` to the group, only if it still holds a process of the spawn ``token``."""
    if group_is_ours(pgid, token):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, sig)
