"""A job's view of ``/proc``: its own processes only, never another uid's.

Any process may read any other's ``/proc/<pid>/cmdline``, so on a shared ``/proc`` every job
sees the argv of every other job's processes (``ps aux``), secrets given on a command line
included. The kernel hides other uids' processes on a ``proc`` mount with ``hidepid=2``
(``invisible``); since Linux 5.8 each ``proc`` mount is an instance of its own with its own
options, so a job can get such a ``/proc`` in a mount namespace of its own without changing
the machine's.

Terms:
- *private /proc*: ``unshare --mount`` (a mount namespace of the job's own, private
  propagation: nothing mounted in it reaches the machine), a fresh ``proc`` with
  ``hidepid=2`` mounted over ``/proc`` in it, then the rest of the argv (``setpriv`` and
  the job). The namespace ends with the job's last process.
- *prefix*: the argv that does this, put before the job user's ``setpriv``; empty where the
  machine cannot (a kernel before 5.8, where the option would apply to the machine's
  ``/proc``; no ``unshare``/``mount``; no ``CAP_SYS_ADMIN``), which ``resolve_prefix``
  finds once by trying, and says why.

Invariants: a job that was given the prefix runs only in its private ``/proc``: if the mount
fails at its start it exits with ``NO_PRIVATE_PROC`` before running anything. The controller
itself keeps the machine's ``/proc`` (it must see every job's processes).
"""

from __future__ import annotations

import os
import shutil
import subprocess

HIDEPID_KERNEL = (5, 8)
NO_PRIVATE_PROC = 125
# $1 is the `mount` program, the rest the argv to run in the new namespace
_MOUNT = (
    "mount=$1; shift\n"
    '"$mount" -t proc -o hidepid=2 proc /proc 2>/dev/null || {\n'
    "  echo 'starburst: could not give the job a private /proc (hidepid)' >&2\n"
    f"  exit {NO_PRIVATE_PROC}\n"
    "}\n"
    'exec "$@"\n'
)


def prefix(*, unshare: str, mount: str) -> list[str]:
    """The argv that runs what follows it in a mount namespace with a private ``/proc``."""
    return [
        unshare,
        "--mount",
        "--propagation",
        "private",
        "--",
        "/bin/sh",
        "-c",
        _MOUNT,
        "starburst-proc",
        mount,
    ]


def resolve_prefix(release: str | None = None) -> tuple[list[str], str | None]:
    """The private-``/proc`` prefix if this machine gives one, tried once; else ``[]`` and
    why not (``release``: the kernel's, default this machine's)."""
    kernel = _version(release or os.uname().release)
    if kernel < HIDEPID_KERNEL:
        return [], f"Linux {release or os.uname().release} is older than 5.8"
    unshare, mount = shutil.which("unshare"), shutil.which("mount")
    if unshare is None or mount is None:
        return [], "`unshare` or `mount` (util-linux) is missing"
    argv = prefix(unshare=unshare, mount=mount)
    try:
        tried = subprocess.run(
            [*argv, "true"], capture_output=True, timeout=30, check=False, cwd="/"
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return [], f"trying it failed ({type(exc).__name__})"
    if tried.returncode != 0:
        why = tried.stderr.decode(errors="replace").strip().splitlines()
        return [], f"trying it failed ({why[-1] if why else tried.returncode})"
    return argv, None


def _version(release: str) -> tuple[int, int]:
    """(major, minor) of a kernel release such as ``6.18.44-fc``."""
    major, _, rest = release.partition(".")
    minor = rest.split(".", 1)[0]
    return _leading_int(major), _leading_int(minor)


def _leading_int(text: str) -> int:
    digits = ""
    for c in text:
        if not c.isdigit():
            break
        digits += c
    return int(digits[:6] or "0")
