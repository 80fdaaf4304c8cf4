"""What a local job may see: its own environment, its own directory, never the controller's.

A job's command is arbitrary code from whoever holds a ``user`` token. The controller holds
secrets (the database URL with its password, the model file, every job's spawn record and
output), so a job must get only what it is given.

Terms:
- *job environment*: exactly ``PATH``, ``HOME``, ``LANG`` (the controller's ``PATH`` and
  ``LANG``, else safe defaults; ``HOME`` is the job's working directory), then the job's own
  ``env`` (which may override those three), then what the backend sets and a job cannot
  override (``CUDA_VISIBLE_DEVICES``, ``STARBURST_JOB_ID``, the spawn token). Nothing else of
  the controller's environment is ever passed on (``job_environment``).
- *run-as user* (``RunAs``): when the controller runs as root, jobs run as this unprivileged
  OS user (setting ``local_run_as``, default ``nobody``): the wrapper shell stays root, to
  record the pid and exit status in the root-only state directory, and starts the command
  through ``setpriv`` with the user's uid and gid, no supplementary groups and
  ``no_new_privs`` (so no setuid program can give root back). Such a job cannot read the state
  directory (0700), any spawn record or output log (0600), the SQLite file or the model file,
  and cannot signal the controller (another uid). Its output reaches its log through the file
  descriptor the controller opened, so ``starburst logs`` still reads it.
- *working directory*: with a run-as user, each spawn gets its own directory
  ``<work root>/<job>-<token prefix>``, 0700 and owned by that user; the work root is 0711
  (enterable, not listable) and owned by the controller. Without one (the controller is not
  root) the job runs as the controller's own user in its state-directory entry, and can read
  whatever that user can: run the controller as root, or as a user with nothing to hide.

Jobs of the same run-as user share a uid, so they could see each other's processes and, given
the (random) name, working directories; only the controller's files are kept from them.
Adoption after a restart still works: root reads any process's ``/proc/<pid>/environ``.
"""

from __future__ import annotations

import os
import pwd
import shutil
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from starburst.core.errors import ConfigError

DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"
DEFAULT_LANG = "C.UTF-8"
PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600
WORK_ROOT_MODE = 0o711


@dataclass(frozen=True, slots=True)
class RunAs:
    """The unprivileged user local jobs run as, and the tool that switches to it."""

    user: str
    uid: int
    gid: int
    setpriv: str
    work_root: Path

    def command_prefix(self) -> list[str]:
        """argv that runs the rest of the argv as this user, with no way back to root."""
        return [
            self.setpriv,
            f"--reuid={self.uid}",
            f"--regid={self.gid}",
            "--clear-groups",
            "--no-new-privs",
            "--",
        ]


def resolve_run_as(user: str | None, work_root: Path) -> RunAs | None:
    """The run-as user when this process is root and ``user`` is set; None otherwise.

    ``user`` is a name or a numeric uid; an unknown user, root itself, or a missing
    ``setpriv`` is a ``ConfigError`` naming the ``local_run_as`` setting.
    """
    if not user or os.geteuid() != 0:
        return None
    try:
        entry = pwd.getpwuid(int(user)) if user.isdigit() else pwd.getpwnam(user)
    except (KeyError, ValueError):
        raise ConfigError(f"local_run_as: no OS user {user!r} on this machine") from None
    if entry.pw_uid == 0:
        raise ConfigError(f"local_run_as: {user!r} is root; jobs must run unprivileged")
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        raise ConfigError("local_run_as needs `setpriv` (util-linux) to drop privileges")
    return RunAs(entry.pw_name, entry.pw_uid, entry.pw_gid, setpriv, Path(work_root))


def job_environment(
    job_env: Mapping[str, str], home: Path, fixed: Mapping[str, str]
) -> dict[str, str]:
    """The whole environment of a job: a minimal base, its own env, then ``fixed``."""
    base = {
        "PATH": os.environ.get("PATH") or DEFAULT_PATH,
        "HOME": str(home),
        "LANG": os.environ.get("LANG") or DEFAULT_LANG,
    }
    return {**base, **job_env, **fixed}


def private_dir(path: Path) -> Path:
    """``path`` as a directory only its owner can use (0700), created if missing."""
    path.mkdir(mode=PRIVATE_DIR, parents=True, exist_ok=True)
    os.chmod(path, PRIVATE_DIR)
    return path


def work_dir(run_as: RunAs, name: str) -> Path:
    """A fresh private working directory for one spawn, owned by the run-as user."""
    root = run_as.work_root
    root.mkdir(mode=WORK_ROOT_MODE, parents=True, exist_ok=True)
    info = os.lstat(root)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
        raise ConfigError(f"local_work_dir {root} is not a directory owned by this user")
    os.chmod(root, WORK_ROOT_MODE)
    directory = root / name
    directory.mkdir(mode=PRIVATE_DIR, exist_ok=True)
    os.lchown(directory, run_as.uid, run_as.gid)
    os.chmod(directory, PRIVATE_DIR)
    return directory


def usable_workdir(path: str, run_as: RunAs | None) -> Path:
    """The job's own ``--workdir`` once checked: an absolute path to a directory that the
    user the job runs as (``run_as``, else this process's user) can enter and list, every
    parent included. Anything else is a ``ConfigError`` with the reason and the fix."""
    directory = Path(path)
    who = f"local jobs' user {run_as.user} (uid {run_as.uid})" if run_as else "this user"
    if not directory.is_absolute():
        raise ConfigError(f"workdir {path!r} must be an absolute path")
    if not directory.is_dir():
        raise ConfigError(f"workdir {path} is not a directory on this machine")
    for part in [directory, *directory.parents]:
        if not _allows(part, run_as, os.R_OK | os.X_OK if part == directory else os.X_OK):
            raise ConfigError(
                f"workdir {path} is not readable by {who}: {part} does not let "
                "it in (make the directory and its parents world-readable, "
                "e.g. chmod o+rx, or put the code in a shared directory)"
            )
    return directory


def _allows(path: Path, run_as: RunAs | None, wanted: int) -> bool:
    if run_as is None:
        return os.access(path, wanted)
    info = os.stat(path)
    if info.st_uid == run_as.uid:
        bits = (info.st_mode >> 6) & 0o7
    elif info.st_gid == run_as.gid:
        bits = (info.st_mode >> 3) & 0o7
    else:
        bits = info.st_mode & 0o7
    need = (4 if wanted & os.R_OK else 0) | (1 if wanted & os.X_OK else 0)
    return bits & need == need
