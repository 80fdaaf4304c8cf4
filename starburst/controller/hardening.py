"""Process hardening at start-up: what other processes of the same OS user may not do to us.

The controller's environment holds secrets (``STARBURST_DATABASE_URL`` with its password,
cloud tokens). On Linux, every process of the same uid may read ``/proc/<pid>/environ``,
``/proc/<pid>/mem`` and attach with ``ptrace`` — among them local jobs, when they run as the
controller's own uid (it is not root, or ``local_job_uids`` is empty). ``make_undumpable``
clears the process's *dumpable* flag (``prctl(PR_SET_DUMPABLE, 0)``): those files then
belong to root and ``ptrace`` needs ``CAP_SYS_PTRACE``, so a same-uid process can do
neither; it also means no core dumps. Children get the flag back when they ``exec``, so jobs
are unaffected, and the process still reads its own ``/proc/self``.

Called once, at the composition root of every long-running process (``api.serve.run``).
"""

from __future__ import annotations

import ctypes
import logging
import sys

log = logging.getLogger("starburst.controller")

PR_SET_DUMPABLE = 4
PR_GET_DUMPABLE = 3


def make_undumpable() -> bool:
    """Clear this process's dumpable flag; False where that is not possible (not Linux)."""
    if not sys.platform.startswith("linux"):
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        log.warning("could not make the process non-dumpable (errno %d)", ctypes.get_errno())
        return False
    return True


def is_dumpable() -> bool:
    """Whether other processes of this uid may read this process's memory and environment."""
    if not sys.platform.startswith("linux"):
        return True
    return bool(ctypes.CDLL(None, use_errno=True).prctl(PR_GET_DUMPABLE, 0, 0, 0, 0))
