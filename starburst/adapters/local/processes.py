"""Job processes on this machine: spawn, adopt, watch, kill — never waiting on a running process.

Terms:
- *command*: the job's shell command (``Job.extra["command"]``), run by ``/bin/sh -c``.
- *env*: extra environment variables (``Job.extra["env"]``, a JSON object of strings), laid
  over a minimal base, never over this process's environment (``isolation.py``). They are
  exported by the job's own shell (``job_script``), after it dropped to the job's uid: the
  processes that run as root to start a job never see them.
  ``Job.extra["image"]`` is recorded in the log header but not used: local execution runs on
  the host, not in a container.
- *wrapper*: the shell that runs the command. It records its own pid first, runs the command
  (as a child, not ``exec``, so it outlives it, and through the output copier, which keeps
  at most ``output_max`` bytes of its output: ``outputcap.py``), then records the command's
  exit status atomically and exits with it. So the outcome is on disk even if no controller
  was alive when the job ended. Files and their order: ``statedir.py``.
- *enter*: what runs as the job's user (after ``setpriv``, and in the job's private
  ``/proc``, ``procview.py``): it enters the working directory, then reads the command from
  its standard input (a memory file) and runs it. The command is in no process's argv,
  which every uid may read.
- *process group*: every job runs in its own session led by the wrapper (pid = pgid), so
  cancel reaches the wrapper, the command and every child it started (``kill(-pgid)``).
- *owned* vs *adopted*: a process spawned by this object is owned (a ``Popen``, reaped by
  ``poll``); one found in the state directory after a restart is adopted (no ``Popen``: its
  liveness and identity come from ``/proc`` and its spawn token, see ``procfs.py``).
- *lost*: the wrapper is gone without an ``exit_code`` (e.g. killed by a reboot or OOM
  killer): a failure, "the job's process disappeared without an exit status".

Invariants: ``spawn`` writes the spawn record before the process exists and returns as soon
as it does; ``adopt`` returns None only if no process of the record's spawn ever ran the
command (then spawning again cannot run it twice); ``poll`` never blocks; ``kill`` records
the cancel, sends SIGTERM to the group and, ``grace`` seconds later on a later ``poll``,
SIGKILL — only ever to a group that still holds a process of this spawn. The parent's copy of
the log file is closed right after spawning; every owned process is reaped by ``poll``.

Children outlive their backend object by design: every unreaped ``Popen`` is kept in the
registry of ``children.py`` until it is reaped, and each ``spawn`` first reaps the
registered children that ended.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from starburst.adapters.local import outputcap, procfs
from starburst.adapters.local.children import reap_ended_children, reaped, register
from starburst.adapters.local.isolation import (
    PRIVATE_FILE,
    job_environment,
    private_dir,
    usable_workdir,
)
from starburst.adapters.local.jobusers import JobUser, JobUsers
from starburst.adapters.local.statedir import (
    CANCELLED,
    EXIT_CODE,
    LOG,
    PID,
    SPAWN,
    age,
    job_dirname,
    read_int,
    read_json,
    read_tail,
    write_atomically,
)
from starburst.core.errors import ConfigError, PermanentError
from starburst.core.failure import with_output
from starburst.core.job import Job, job_env

CANCELLED_EXIT = -int(signal.SIGTERM)
#: the log's own header lines (local cluster, emulated cloud), not the job's output
_HEADERS = ("# starburst local: ", "# emulated cloud: ")
WORKDIR = "workdir"  # Job.extra key: the directory the job runs in (``--workdir``)
_TAIL_BYTES = 16384  # enough for the last lines of output, whatever the log's size
DEFAULT_OUTPUT_MAX = 100 * 1024 * 1024  # bytes of a job's output kept (outputcap.py)
LOST = "the job's process disappeared without an exit status"
_SHELL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

# The wrapper runs, in a subshell, the argv it is given: with a run-as user, `setpriv` and then
# ENTER, as that user. Not `exec`: the wrapper must outlive the command to record its
# status. `command -p`: the default PATH, whatever PATH the job sets.
WRAPPER = (
    "umask 077\n"
    'printf "%s\\n" "$$" > .pid.tmp && command -p mv -f .pid.tmp pid\n'
    '(umask 022 && exec "$@")\n'
    "code=$?\n"
    'printf "%s\\n" "$code" > .exit_code.tmp && command -p mv -f .exit_code.tmp exit_code\n'
    'exit "$code"\n'
)
#: the kernel's limit on one argument (MAX_ARG_STRLEN), which bounded a command when it was
#: one; kept now that it is not, so what runs here also fits a container's argv elsewhere
MAX_COMMAND_BYTES = 128 * 1024
#: exit status of a job whose user could not enter its working directory
CANNOT_ENTER = 126
# Run as the job's user: enter the working directory ($1) — so the kernel checks every
# directory and link on the way as that user, not as root — then read the job's script (its
# variables, then its command: ``job_script``) from standard input and run it. The command
# is never in an argv: any uid may read any argv (/proc/<pid>/cmdline), only root and the
# job's uid its standard input.
ENTER = (
    'cd -- "$1" 2>/dev/null || {\n'
    "  printf 'starburst: workdir %s cannot be entered by the job'\"'\"'s user (uid %s)\\n' "
    '"$1" "$(command -p id -u)" >&2\n'
    f"  exit {CANNOT_ENTER}\n"
    "}\n"
    "set --\n"
    "starburst_command=$(command -p cat) || exit 125\n"
    "exec </dev/null\n"
    'eval "$starburst_command"\n'
)


def command_of(job: Job) -> str:
    """The job's shell command; a job without one cannot run anywhere (``PermanentError``)."""
    command = job.extra.get("command", "").strip()
    if not command:
        raise PermanentError(f"job {job.id} has no command (extra['command'] is empty)")
    return command


def env_of(job: Job) -> dict[str, str]:
    """The job's extra environment from ``extra["env"]`` (``core.job.job_env``)."""
    return job_env(job)


@dataclass(frozen=True, slots=True)
class Outcome:
    """How a process ended: its exit code (None: lost), and whether it was cancelled."""

    exit_code: int | None
    cancelled: bool

    @property
    def succeeded(self) -> bool:
        return self.exit_code == 0 and not self.cancelled

    @property
    def reason(self) -> str:
        code = self.exit_code
        if self.cancelled:
            return "cancelled: process group killed"
        if code is None:
            return LOST
        if code == 0:
            return "exit code 0"
        if code < 0:
            return f"killed by signal {-code}"
        if code > 128:
            return f"exit code {code} (128+{code - 128}: killed by a signal?)"
        return f"exit code {code}"


class JobProcess:
    """One spawn's process group, its log file and, once it ended, its outcome."""

    def __init__(
        self,
        job_id: str,
        directory: Path,
        pid: int,
        token: str,
        grace: float,
        popen: subprocess.Popen[bytes] | None = None,
        on_end: Callable[[], None] | None = None,
    ) -> None:
        self.job_id = job_id
        self.directory = directory
        self.pid = pid
        self.token = token
        self._popen = popen
        self._grace = grace
        self._on_end = on_end  # once, when the outcome is first known (frees the job's uid)
        # an adopted job an earlier life cancelled gets the SIGKILL that life could not send
        cancelling = popen is None and (directory / CANCELLED).exists()
        self._kill_after = time.monotonic() + grace if cancelling else None
        self.outcome: Outcome | None = None
        self.watched = popen is not None  # this life saw it running: its end is seen live
        self.ended_ago = 0.0  # for an end found, not seen: how long before it was found

    @property
    def adopted(self) -> bool:
        return self._popen is None

    @property
    def log_path(self) -> Path:
        return self.directory / LOG

    def poll(self) -> Outcome | None:
        """The outcome if the process ended (reaping an owned one), else None; never blocks."""
        if self.outcome is not None:
            return self.outcome
        if self._running():
            self.watched = True
            if self._kill_after is not None and time.monotonic() >= self._kill_after:
                self._signal(signal.SIGKILL)
            return None
        exit_file = self.directory / EXIT_CODE
        code = read_int(exit_file)  # read after the liveness check: written before exiting
        if self._popen is not None:
            reaped(self._popen)
        if code is None and self._popen is not None:
            code = self._popen.returncode  # the wrapper itself was killed
            write_atomically(exit_file, f"{code}\n")
        cancelled = (self.directory / CANCELLED).exists()
        if cancelled:
            self._signal(signal.SIGKILL)  # children that outlived the wrapper go too
        if not self.watched and code is not None:
            self.ended_ago = age(exit_file) or 0.0
        self.outcome = Outcome(code, cancelled)
        if self._on_end is not None:
            on_end, self._on_end = self._on_end, None
            on_end()
        return self.outcome

    def kill(self) -> None:
        """SIGTERM the whole group now; a later ``poll`` escalates to SIGKILL after ``grace``."""
        if self.outcome is not None or self._kill_after is not None:
            return
        write_atomically(self.directory / CANCELLED, f"{time.time()}\n")
        self._kill_after = time.monotonic() + self._grace
        self._signal(signal.SIGTERM)
        self.poll()

    def logs(self, tail: int | None = None) -> str:
        """The job's log; with ``tail``, its newest lines only, read from its end."""
        return read_tail(self.log_path, tail)

    def failure(self, outcome: Outcome) -> str:
        """The reason of an ended process: its outcome, and for a failure (not a cancel) the
        last lines of its output (``starburst.core.failure``), read from the log's end."""
        if outcome.succeeded or outcome.cancelled:
            return outcome.reason
        return with_output(outcome.reason, self.output_tail())

    def output_tail(self) -> str:
        """The end of the job's output (the log's own header lines left out)."""
        try:
            with self.log_path.open("rb") as log:
                log.seek(max(0, log.seek(0, os.SEEK_END) - _TAIL_BYTES))
                text = log.read().decode("utf-8", errors="replace")
        except FileNotFoundError:
            text = ""
        return "".join(
            line for line in text.splitlines(keepends=True) if not line.startswith(_HEADERS)
        )

    def _running(self) -> bool:
        if self._popen is not None:
            return self._popen.poll() is None
        # an adopted wrapper writes exit_code as its last act: once it is there the command
        # has ended, even if the wrapper is caught alive in the instant before it exits
        if (self.directory / EXIT_CODE).exists():
            return False
        return procfs.alive(self.pid, self.token)

    def _signal(self, sig: signal.Signals) -> None:
        if self._popen is not None and self._popen.returncode is None:
            # our unreaped child: its pid (= pgid) cannot have been recycled
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, sig)
        else:
            procfs.signal_group(self.pid, self.token, sig)


def spawn(
    job: Job,
    state_dir: Path,
    extra_env: Mapping[str, str],
    header: str,
    record: Mapping[str, Any],
    grace: float = 5.0,
    users: JobUsers | None = None,
    *,
    output_max: int = DEFAULT_OUTPUT_MAX,
) -> JobProcess:
    """Record the spawn (``record`` plus a fresh token), then start the job's wrapper.

    The job sees only ``isolation.job_environment``; with ``users`` it runs as a uid of its
    own (``jobusers.py``) in its own home, else in its state-directory entry.
    """
    command_of(job)  # a job that cannot run is refused before it takes a uid
    env_of(job)
    reap_ended_children()
    token = uuid.uuid4().hex
    private_dir(state_dir)
    directory = private_dir(state_dir / job_dirname(job.id))
    user = users.claim(f"{job_dirname(job.id)}-{token[:16]}", token) if users else None
    try:
        process = _start(
            job, directory, extra_env, header, record, token, grace, user, users, output_max
        )
    except BaseException:
        if users is not None and user is not None:
            users.release(user)
        raise
    return process


def _start(
    job: Job,
    directory: Path,
    extra_env: Mapping[str, str],
    header: str,
    record: Mapping[str, Any],
    token: str,
    grace: float,
    user: JobUser | None,
    users: JobUsers | None,
    output_max: int,
) -> JobProcess:
    command, job_vars = command_of(job), env_of(job)
    home = user.home if user else directory
    workdir = home
    if wanted := job.extra.get(WORKDIR):  # the job's own: its code is there; HOME stays private
        try:
            workdir = usable_workdir(wanted, user)
        except ConfigError as exc:
            raise PermanentError(f"job {job.id} cannot start: {exc}") from None
    fixed = {**extra_env, "STARBURST_JOB_ID": job.id, procfs.TOKEN_VAR: token}
    env = job_environment({}, home, fixed)  # the root side's: none of the job's own
    prefix = [*users.proc_prefix, *user.command_prefix(users.setpriv)] if user and users else []
    for stale in (PID, EXIT_CODE, CANCELLED):  # left by an attempt that never ran
        (directory / stale).unlink(missing_ok=True)
    identity = {"uid": user.uid, "home": str(user.home)} if user else {}
    spawn_json = json.dumps({**record, **identity, "token": token}, sort_keys=True)
    write_atomically(directory / SPAWN, spawn_json)
    fd = os.open(directory / LOG, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, PRIVATE_FILE)
    with os.fdopen(fd, "wb") as log:
        log.write(f"{header}\n".encode())
        log.flush()
        try:
            if len(command.encode()) > MAX_COMMAND_BYTES:
                raise OSError(errno.E2BIG, "command too large")
            with _command_file(job_script(command, job_vars, fixed)) as script:
                popen = subprocess.Popen(
                    [
                        "/bin/sh",
                        "-c",
                        WRAPPER,
                        "starburst-job",
                        *_copier(output_max),
                        *prefix,
                        "/bin/sh",
                        "-c",
                        ENTER,
                        "/bin/sh",
                        str(workdir),
                    ],
                    stdin=script,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=env,
                    cwd=directory,
                    start_new_session=True,
                )
        except (OSError, ValueError, subprocess.SubprocessError) as exc:
            # nothing ran: forget the attempt, and never retry what cannot start
            (directory / SPAWN).unlink(missing_ok=True)
            raise PermanentError(f"job {job.id} cannot start: {_unstartable(exc)}") from None
    register(popen)
    write_atomically(directory / PID, f"{popen.pid}\n")
    on_end = _releaser(users, user)
    return JobProcess(job.id, directory, popen.pid, token, grace, popen, on_end)


def _copier(output_max: int) -> list[str]:
    """The argv that runs the rest with its output capped at ``output_max`` bytes."""
    return [_copier_python(), "-I", "-S", outputcap.__file__, str(output_max)]


@functools.cache
def _copier_python() -> str:
    """A Python this process's user can start afresh: this one, else the system's (the
    copier needs the standard library only). This interpreter's path may pass through a
    directory only root may enter although this process, started otherwise, runs it."""
    for candidate in (sys.executable, "/usr/bin/python3", shutil.which("python3")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return sys.executable  # its exec fails, and the job with the reason in its log


def job_script(command: str, job_vars: Mapping[str, str], fixed: Mapping[str, str]) -> str:
    """What the job's shell runs: ``export`` of the job's own variables (but those the
    backend sets), then its command. The variables are set only here, by the shell that
    already runs as the job's uid: a process that runs as root (the wrapper, ``unshare``,
    ``setpriv``) never gets them, so none of them (``LD_PRELOAD``…) can act as root.
    ``ValueError`` for a NUL byte or a name that is no shell variable."""
    if "\0" in command or any("\0" in value for value in job_vars.values()):
        raise ValueError("embedded null byte")
    exports = []
    for name, value in job_vars.items():
        if not _SHELL_NAME.fullmatch(name):
            raise ValueError(f"env name {name[:64]!r} is not a shell variable name")
        if name not in fixed:
            exports.append(f"export {name}={shlex.quote(value)}\n")
    return "".join(exports) + command


@contextlib.contextmanager
def _command_file(command: str) -> Iterator[int]:
    """A memory file holding ``command``, read from its start: the job's standard input."""
    fd = os.memfd_create("starburst-command", os.MFD_CLOEXEC)
    try:
        os.write(fd, command.encode())  # a memory file takes any size in one write
        os.lseek(fd, 0, os.SEEK_SET)
        yield fd
    finally:
        os.close(fd)


def _releaser(users: JobUsers | None, user: JobUser | None) -> Callable[[], None] | None:
    if users is None or user is None:
        return None
    return lambda: users.release(user)


def _unstartable(exc: BaseException) -> str:
    """Why ``Popen`` refused, without the command or environment it was given."""
    if isinstance(exc, ValueError) and "null byte" in str(exc):
        return "its command or environment holds a NUL byte"
    if isinstance(exc, ValueError) and "env name" in str(exc):
        return str(exc)
    if isinstance(exc, OSError) and exc.errno == errno.E2BIG:
        return "its command or environment is too large for the operating system"
    if isinstance(exc, OSError):
        return f"{type(exc).__name__}: {exc.strerror or exc.errno}"
    return type(exc).__name__


def spawn_record(state_dir: Path, job_id: str) -> dict[str, Any] | None:
    """The spawn record of ``job_id`` under ``state_dir``, if a spawn was ever attempted."""
    return read_json(state_dir / job_dirname(job_id) / SPAWN)


def adopt(
    state_dir: Path,
    job_id: str,
    record: Mapping[str, Any],
    grace: float,
    users: JobUsers | None = None,
) -> JobProcess | None:
    """The process of an earlier spawn (running or ended); None if it never ran the command.

    The wrapper records its pid before running the command, so a spawn without a ``pid``
    file whose token no live process carries never ran it. With ``users``, the job takes
    its recorded uid again, released when its end is seen.
    """
    directory = state_dir / job_dirname(job_id)
    token = str(record.get("token", ""))
    pid = read_int(directory / PID) or (procfs.find_leader(token) if token else None)
    if pid is None or not token:
        return None
    user = None
    if users is not None and isinstance(record.get("uid"), int) and record.get("home"):
        user = users.reclaim(int(record["uid"]), str(record["home"]), token)
    return JobProcess(job_id, directory, pid, token, grace, on_end=_releaser(users, user))
