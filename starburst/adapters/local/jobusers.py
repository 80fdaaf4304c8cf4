"""Job users: every running local job gets an OS uid (and gid) of its own, from a range.

Jobs of different users must not see each other. Processes of one uid can read each other's
``/proc/<pid>/environ``, follow ``/proc/<pid>/cwd`` into each other's working directories and
signal each other, so the only sound line between two jobs is two uids. When the controller
runs as root, each spawn takes a free uid of the range ``local_job_uids`` (default
``60000-60999``) for as long as it runs, and gives it back when its end is seen.

Terms:
- *job user* (``JobUser``): a uid, the gid of the same number, and the job's *home*: a fresh
  directory ``<work root>/<name>`` (0700, owned by the job user; the work root is 0711,
  enterable but not listable, and owned by the controller). The uid needs no entry in
  ``/etc/passwd``: the range must hold none (nor ``/etc/group`` entries), so a job never
  gets the files of a real user or group.
- *claim*: this process holds an exclusive ``flock`` on ``<lock dir>/<uid>`` (a root-only
  directory, machine-wide), so two controllers on one machine never hand out one uid; the
  kernel drops the lock when the process dies. The lock file holds the spawn token of the job
  the uid was last given to (its *owner job*); it outlives the process that wrote it.
- *busy* uid: claimed (by any process), or the uid of any live process (``procfs``) — a
  job that left a process behind keeps its uid out of the pool until that process is gone.
- *release*: when the job's end is seen: every process still running as its uid is killed
  (a job cannot outlive its end by escaping its process group), its home is removed, and
  what it left in the world-writable directories (``SHARED_TEMP``: ``/tmp``, ``/var/tmp``,
  ``/dev/shm``, ``/run/lock``, ``/dev/mqueue``; every entry its uid owns, there or in a
  world-writable directory inside them) is removed, so the next job given the uid finds
  nothing of this one; then the owner job is cleared and the claim dropped.
- *reclaim*: after a restart, a job adopted from its spawn record takes its uid again — only
  if it is still the uid's owner job. A leader that saw a job end, gave its uid to a new job
  and died before recording the end leaves a record whose uid is another job's now: the new
  leader adopting that record must not kill the new job.

Invariants: no two running jobs on this machine share a uid; a uid is handed out again only
after its previous job's end was seen and released (or, after a crash, once no process of it
is left); a uid's processes are killed and its shared files swept only by a release of its
owner job, by the process that holds its claim; a job's home is reachable only by its own
uid and root. Not covered: System V IPC
objects a job leaves behind (remove them with ``ipcrm``, or run such jobs on Kubernetes).
"""

from __future__ import annotations

import contextlib
import fcntl
import grp
import logging
import os
import pwd
import shutil
import stat
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from starburst.adapters.local import procfs, procview
from starburst.core.errors import ConfigError, TransientError

log = logging.getLogger(__name__)

PRIVATE_DIR = 0o700
WORK_ROOT_MODE = 0o711
#: the world-writable directories of a standard image (``find / -xdev -perm -0002 -type d``,
#: plus the tmpfs mounts): every place a job can write outside its home
SHARED_TEMP = tuple(Path(p) for p in ("/tmp", "/var/tmp", "/dev/shm", "/run/lock", "/dev/mqueue"))
MAX_SWEEP_DEPTH = 32
SETTING = "local_job_uids"


@dataclass(frozen=True, slots=True)
class JobUser:
    """One running job's OS identity: ``uid``, ``gid`` (the same number) and its home."""

    uid: int
    gid: int
    home: Path
    #: whether this process holds the uid's claim for this job (its owner job); an adopted
    #: job whose uid was given to another job since (the job had ended, so the uid was
    #: free) is not, and its release then touches nothing of the uid's new job
    owned: bool = True
    #: the spawn token of the job this user was given to
    token: str = ""

    def command_prefix(self, setpriv: str) -> list[str]:
        """argv that runs the rest of the argv as this user, with no way back to root:
        no supplementary groups, ``no_new_privs`` (no setuid program gives root back)."""
        return [
            setpriv,
            f"--reuid={self.uid}",
            f"--regid={self.gid}",
            "--clear-groups",
            "--no-new-privs",
            "--",
        ]

    def describe(self) -> str:
        return f"uid {self.uid}"


class JobUsers:
    """The pool of job uids: claims one per spawn, releases it at the job's end."""

    def __init__(
        self,
        first: int,
        last: int,
        setpriv: str,
        work_root: Path,
        lock_dir: Path,
        *,
        proc_prefix: Sequence[str] = (),
    ) -> None:
        self.first, self.last = first, last
        self.setpriv = setpriv
        #: argv before ``setpriv`` that gives each job a private /proc (``procview.py``)
        self.proc_prefix = list(proc_prefix)
        self.work_root = Path(work_root)
        self.lock_dir = Path(lock_dir)
        self._held: dict[int, int] = {}  # uid -> the fd of its lock file
        self._lock = threading.Lock()

    @property
    def size(self) -> int:
        return self.last - self.first + 1

    def claim(self, name: str, token: str = "") -> JobUser:
        """A free uid for the spawn ``token``, with a fresh home ``<work root>/<name>``.

        ``TransientError`` when every uid of the range is busy: the job starts when one is
        released."""
        root, locks = self._work_root(), self._lock_root()
        with self._lock:
            running = procfs.uids_running()
            for uid in range(self.first, self.last + 1):
                if uid in self._held or uid in running or not self._lock_uid(uid, locks):
                    continue
                try:
                    self._set_owner(uid, token)
                    return JobUser(uid, uid, _home(root / name, uid), token=token)
                except OSError:
                    self._unlock(uid)
                    raise
        raise TransientError(
            f"all {self.size} job uids of {SETTING} ({self.first}-{self.last}) are in use; "
            "the job starts when a running one ends"
        )

    def reclaim(self, uid: int, home: str | Path, token: str) -> JobUser:
        """The user of the spawn ``token`` adopted after a restart (from its spawn record).

        Owned only if this process holds (or now takes) the uid's claim and the spawn is
        still its owner job. Otherwise the uid was given to another job since — by another
        process on this machine, or by a leader that died before recording this job's end —
        so the adopted job has ended: its user is returned as not ``owned``."""
        with self._lock:
            owned = self._own(uid, token)
        if not owned:
            log.info("job uid %s was given to another job since; it is not released again", uid)
        return JobUser(uid, uid, Path(home), owned, token)

    def release(self, user: JobUser) -> None:
        """The job ended: kill what it left running, remove its files, free its uid.

        Ownership is checked now, not trusted from ``reclaim`` (a claim busy then may have
        been dropped since; a second object of the same spawn may have released it): for a
        user that is not its uid's owner job only its old home goes, the processes and
        shared files of its uid are another job's."""
        with self._lock:
            owned = self._own(user.uid, user.token) if user.token else user.uid in self._held
        if not owned:
            _remove(user.home)
            return
        killed = procfs.kill_user(user.uid)
        if killed:
            log.info("killed %d leftover processes of job uid %s", killed, user.uid)
        _remove(user.home)
        for shared in SHARED_TEMP:
            _sweep(shared, user.uid)
        with self._lock:
            self._set_owner(user.uid, "")
            self._unlock(user.uid)

    def prepare(self) -> None:
        """Create and check the work root and the lock directory (``ConfigError``)."""
        self._work_root()
        self._lock_root()

    def held(self) -> set[int]:
        """The uids this process holds now."""
        with self._lock:
            return set(self._held)

    # -- internals ----------------------------------------------------------------------
    def _work_root(self) -> Path:
        root = self.work_root
        root.mkdir(mode=WORK_ROOT_MODE, parents=True, exist_ok=True)
        info = os.lstat(root)
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
            raise ConfigError(f"local_work_dir {root} is not a directory owned by this user")
        os.chmod(root, WORK_ROOT_MODE)
        for parent in root.parents:  # a job must reach its home: every parent lets it pass
            if not os.stat(parent).st_mode & stat.S_IXOTH:
                raise ConfigError(
                    f"local_work_dir {root}: jobs cannot reach their homes in it, {parent} "
                    "does not let other users pass (chmod o+x it, or choose another directory)"
                )
        return root

    def _lock_uid(self, uid: int, locks: Path) -> bool:
        fd = os.open(locks / str(uid), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        self._held[uid] = fd
        return True

    def _own(self, uid: int, token: str) -> bool:
        """(Holding ``_lock``.) Whether this process holds the uid's claim for the spawn
        ``token`` — taking the claim if it is free; a claim taken for another job's uid is
        dropped again at once."""
        took = uid not in self._held and self._lock_uid(uid, self._lock_root())
        if uid not in self._held:
            return False
        fd = self._held[uid]
        if token and os.pread(fd, 256, 0).decode(errors="replace") == token:
            return True
        if took:
            self._unlock(uid)
        return False

    def _set_owner(self, uid: int, token: str) -> None:
        """(Holding the uid's claim.) Record ``token`` as the uid's owner job."""
        fd = self._held[uid]
        os.ftruncate(fd, 0)
        os.pwrite(fd, token.encode(), 0)

    def _unlock(self, uid: int) -> None:
        fd = self._held.pop(uid, None)
        if fd is not None:
            os.close(fd)  # closing the only descriptor drops the flock

    def _lock_root(self) -> Path:
        root = self.lock_dir
        root.mkdir(mode=PRIVATE_DIR, parents=True, exist_ok=True)
        info = os.lstat(root)
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
            raise ConfigError(f"job uid lock directory {root} is not a directory of this user")
        os.chmod(root, PRIVATE_DIR)
        return root


def _home(directory: Path, uid: int) -> Path:
    directory.mkdir(mode=PRIVATE_DIR)
    os.chmod(directory, PRIVATE_DIR)  # before the chown: changing an owned mode needs no cap
    os.lchown(directory, uid, uid)
    return directory


def _remove(path: Path) -> None:
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    try:
        if stat.S_ISDIR(info.st_mode):
            shutil.rmtree(path)  # fd-based on Linux: a symlink planted inside is not followed
        else:
            path.unlink()
    except OSError as exc:
        log.warning("could not remove %s: %s", path, exc.strerror)


def _sweep(shared: Path, uid: int) -> None:
    """Remove what ``uid`` owns in ``shared``: its entries there, and in every
    world-writable directory inside (another user's ``/tmp/x``, 1777), at any depth.

    Walked through directory descriptors, never following a link, so an entry swapped for
    a link meanwhile leads nowhere else."""
    try:
        fd = os.open(shared, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return
    try:
        _sweep_at(fd, uid, MAX_SWEEP_DEPTH)
    finally:
        os.close(fd)


def _sweep_at(fd: int, uid: int, depth: int) -> None:
    try:
        entries = list(os.scandir(fd))
    except OSError:
        return
    for entry in entries:
        with contextlib.suppress(OSError):
            info = entry.stat(follow_symlinks=False)
            if info.st_uid == uid and stat.S_ISDIR(info.st_mode):
                shutil.rmtree(entry.name, dir_fd=fd)
            elif info.st_uid == uid:
                os.unlink(entry.name, dir_fd=fd)
            elif stat.S_ISDIR(info.st_mode) and info.st_mode & stat.S_IWOTH and depth > 0:
                inner = os.open(entry.name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
                try:
                    _sweep_at(inner, uid, depth - 1)
                finally:
                    os.close(inner)


def resolve_job_users(
    uids: tuple[int, int] | None, work_root: Path, lock_dir: Path, *, euid: int | None = None
) -> JobUsers | None:
    """The pool of ``uids`` (first, last) when this process is root (``euid``); None
    otherwise, or without a range (jobs then run as this process's own user).

    A range that holds a uid of ``/etc/passwd`` or a gid of ``/etc/group``, or a missing
    ``setpriv``, is a ``ConfigError`` naming the setting."""
    if uids is None or (os.geteuid() if euid is None else euid) != 0:
        return None
    first, last = uids
    users = sorted(e.pw_name for e in pwd.getpwall() if first <= e.pw_uid <= last)
    groups = sorted(g.gr_name for g in grp.getgrall() if first <= g.gr_gid <= last)
    if users or groups:
        taken = ", ".join([*(f"user {u}" for u in users[:3]), *(f"group {g}" for g in groups[:3])])
        raise ConfigError(
            f"{SETTING} {first}-{last} holds uids or gids this machine already uses ({taken}); "
            "choose a range no account or group uses"
        )
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        raise ConfigError(f"{SETTING} needs `setpriv` (util-linux) to run jobs as their uids")
    proc_prefix, why_not = procview.resolve_prefix()
    if why_not:
        log.warning(
            "local jobs see every process of this machine in /proc, with its command line: "
            "a private /proc (hidepid) per job is not possible here: %s",
            why_not,
        )
    pool = JobUsers(first, last, setpriv, work_root, lock_dir, proc_prefix=proc_prefix)
    pool.prepare()
    return pool


def default_lock_dir() -> Path:
    """Machine-wide: ``/run/starburst-job-uids``, else under the temporary directory."""
    import tempfile

    run = Path("/run")
    if os.access(run, os.W_OK):
        return run / "starburst-job-uids"
    return Path(tempfile.gettempdir()) / "starburst-job-uids"
