"""What a local job may see: its own environment, its own directory, never the controller's.

A job's command is arbitrary code from whoever holds a ``user`` token. The controller holds
secrets (the database URL with its password, the model file, every job's spawn record and
output), so a job must get only what it is given.

Terms:
- *job environment*: exactly ``PATH``, ``HOME``, ``LANG`` (the controller's ``PATH`` and
  ``LANG``, else safe defaults; ``HOME`` is the job's working directory), then the job's own
  ``env`` (which may override those three), then what the backend sets and a job cannot
  override (``CUDA_VISIBLE_DEVICES``, ``STARBURST_JOB_ID``, the spawn token). Nothing else of
  the controller's environment is ever passed on (``job_environment``). The processes that
  start a job as root get the base and the backend's variables only; the job's own are
  exported by its shell once it runs as the job's uid (``processes.job_script``).
- *job user*: when the controller runs as root, every running job has a uid and gid of its
  own, from the range ``local_job_uids`` (``jobusers.py``): the wrapper shell stays root, to
  record the pid and exit status in the root-only state directory, and starts the command
  through ``setpriv`` with the job's uid and gid, no supplementary groups and
  ``no_new_privs``, in a private ``/proc`` that shows it only its own processes
  (``procview.py``). Such a job cannot read the state directory (0700), any spawn record or
  output log (0600), the SQLite file or the model file, cannot signal the controller or
  another job, and cannot read another job's ``/proc/<pid>/environ``, working directory or
  files (another uid). Its output reaches its log through the file descriptor the controller
  opened, so ``starburst logs`` still reads it.
- *working directory*: with a job user, each spawn's home is its own directory
  ``<work root>/<job>-<token prefix>``, 0700 and owned by the job's uid (removed at the job's
  end). Without one (the controller is not root, or ``local_job_uids`` is empty) the job runs
  as the controller's own user in its state-directory entry, and can read whatever that user
  can (with auth on the controller refuses to start so, unless ``allow_shared_uid_jobs``;
  it is non-dumpable, so its own environment stays hidden even then).
- *--workdir*: a directory the job names runs it there instead of its home. The controller
  resolves it as the job's user would (``usable_workdir``: every directory passed must let
  that user through, links followed the same way), and the job enters it only after
  dropping to its uid, so the kernel checks it again as the job — a link planted or swapped
  meanwhile cannot take the job where its uid may not go.

Adoption after a restart still works: root reads any process's ``/proc/<pid>/environ``.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from pathlib import Path

from starburst.adapters.local.jobusers import PRIVATE_DIR, JobUser
from starburst.core.errors import ConfigError

DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"
DEFAULT_LANG = "C.UTF-8"
PRIVATE_FILE = 0o600
MAX_LINKS = 40  # as the kernel's limit on links in one path lookup


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


def usable_workdir(path: str, user: JobUser | None) -> Path:
    """The job's own ``--workdir`` once checked, as the real directory it names (no link
    left in it): an absolute path to a directory that the user the job runs as (``user``,
    else this process's user) can enter and list, every directory on the way included.

    The path is walked one component at a time, as the job's user would walk it: a
    directory is looked into only if that user may pass through it, and a symbolic link is
    followed by walking its target the same way (so a link into a directory the user may
    not pass is refused, whoever planted it). Anything else is a ``ConfigError`` with the
    reason and the fix; a name behind a directory the user may not pass is never looked up,
    so the refusal tells nothing of what lies there."""
    if not Path(path).is_absolute():
        raise ConfigError(f"workdir {path!r} must be an absolute path")
    who = f"the job's own user ({user.describe()})" if user else "this user"
    current = Path("/")
    pending = list(reversed(Path(path).parts[1:]))
    links = 0
    while pending:
        name = pending.pop()
        if name == "..":
            current = current.parent
            continue
        if not _allows(current, user, os.X_OK):
            raise _refused(path, who, current)
        try:
            info = os.lstat(current / name)
        except OSError:
            raise ConfigError(f"workdir {path} is not a directory on this machine") from None
        if stat.S_ISLNK(info.st_mode):
            links += 1
            if links > MAX_LINKS:
                raise ConfigError(f"workdir {path} goes through too many symbolic links")
            target = Path(os.readlink(current / name))
            if target.is_absolute():
                current = Path("/")
            pending.extend(reversed([p for p in target.parts if p != "/"]))
            continue
        if not stat.S_ISDIR(info.st_mode):
            raise ConfigError(f"workdir {path} is not a directory on this machine")
        current = current / name
    if not _allows(current, user, os.R_OK | os.X_OK):
        raise _refused(path, who, current)
    return current


def _refused(path: str, who: str, part: Path) -> ConfigError:
    return ConfigError(
        f"workdir {path} is not readable by {who}: {part} does not let it in (make the "
        "directory and its parents world-readable, e.g. chmod o+rx, or put the code in a "
        "shared directory)"
    )


def _allows(path: Path, user: JobUser | None, wanted: int) -> bool:
    if user is None:
        return os.access(path, wanted)
    info = os.stat(path)
    if info.st_uid == user.uid:
        bits = (info.st_mode >> 6) & 0o7
    elif info.st_gid == user.gid:
        bits = (info.st_mode >> 3) & 0o7
    else:
        bits = info.st_mode & 0o7
    need = (4 if wanted & os.R_OK else 0) | (1 if wanted & os.X_OK else 0)
    return bits & need == need
