"""Job processes on this machine: spawn, watch, kill — never waiting on a running process.

Terms:
- *command*: the job's shell command (``Job.extra["command"]``), run by ``/bin/sh -c``.
- *env*: extra environment variables (``Job.extra["env"]``, a JSON object of strings), laid
  over this process's environment. ``Job.extra["image"]`` is recorded in the log header but
  not used: local execution runs on the host, not in a container.
- *state directory*: ``<state_dir>/<job id>/output.log`` holds the job's stdout and stderr
  (after a header line) and ``exit_code`` its exit status once known, so logs and outcomes
  outlive this process.
- *process group*: every job runs in its own session, so cancel reaches the shell and every
  child it started (``kill(-pgid)``), not just the shell.

Invariants: ``spawn`` returns as soon as the process exists; ``poll`` never blocks (``Popen.poll``);
``kill`` sends SIGTERM to the group and, ``grace`` seconds later on a later ``poll``, SIGKILL,
so a job that ignores SIGTERM still dies without anyone waiting on it. The parent's copy of the
log file is closed right after spawning; every process is reaped by ``poll`` (no zombies, no
``ResourceWarning``).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from starburst.core.errors import PermanentError
from starburst.core.job import Job

CANCELLED_EXIT = -int(signal.SIGTERM)


def command_of(job: Job) -> str:
    """The job's shell command; a job without one cannot run anywhere (``PermanentError``)."""
    command = job.extra.get("command", "").strip()
    if not command:
        raise PermanentError(f"job {job.id} has no command (extra['command'] is empty)")
    return command


def env_of(job: Job) -> dict[str, str]:
    """The job's extra environment from ``extra["env"]`` (a JSON object of strings)."""
    raw = job.extra.get("env", "").strip()
    if not raw:
        return {}
    try:
        env = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise PermanentError(f"job {job.id}: extra['env'] is not JSON: {exc}") from None
    if not isinstance(env, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in env.items()
    ):
        raise PermanentError(f"job {job.id}: extra['env'] must be a JSON object of strings")
    return env


@dataclass(frozen=True, slots=True)
class Outcome:
    """How a process ended: its exit code, and whether it ended because it was cancelled."""

    exit_code: int
    cancelled: bool

    @property
    def succeeded(self) -> bool:
        return self.exit_code == 0 and not self.cancelled

    @property
    def reason(self) -> str:
        if self.cancelled:
            return "cancelled: process group killed"
        if self.exit_code == 0:
            return "exit code 0"
        if self.exit_code < 0:
            return f"killed by signal {-self.exit_code}"
        return f"exit code {self.exit_code}"


class JobProcess:
    """One job's process group, its log file and, once it ended, its outcome."""

    def __init__(
        self, job_id: str, popen: subprocess.Popen[bytes], directory: Path, grace: float
    ) -> None:
        self.job_id = job_id
        self.directory = directory
        self._popen = popen
        self._grace = grace
        self._kill_after: float | None = None
        self.outcome: Outcome | None = None

    @property
    def pid(self) -> int:
        return self._popen.pid

    @property
    def log_path(self) -> Path:
        return self.directory / "output.log"

    def poll(self) -> Outcome | None:
        """The outcome if the process ended (reaping it), else None; never blocks."""
        if self.outcome is not None:
            return self.outcome
        code = self._popen.poll()
        if code is None:
            if self._kill_after is not None and time.monotonic() >= self._kill_after:
                self._signal(signal.SIGKILL)
            return None
        cancelled = self._kill_after is not None
        if cancelled:
            self._signal(signal.SIGKILL)  # children that outlived the shell go too
        self.outcome = Outcome(code, cancelled)
        (self.directory / "exit_code").write_text(f"{code}\n", encoding="utf-8")
        return self.outcome

    def kill(self) -> None:
        """SIGTERM the whole group now; a later ``poll`` escalates to SIGKILL after ``grace``."""
        if self.outcome is not None or self._kill_after is not None:
            return
        self._kill_after = time.monotonic() + self._grace
        self._signal(signal.SIGTERM)
        self.poll()

    def logs(self) -> str:
        try:
            return self.log_path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return ""

    def _signal(self, sig: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._popen.pid, sig)


def spawn(
    job: Job,
    state_dir: Path,
    extra_env: Mapping[str, str],
    header: str,
    grace: float = 5.0,
) -> JobProcess:
    """Start ``job``'s command in its own process group, output to its log file."""
    command = command_of(job)
    env = {**os.environ, **env_of(job), **extra_env, "STARBURST_JOB_ID": job.id}
    directory = state_dir / job_dirname(job.id)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "exit_code").unlink(missing_ok=True)
    with (directory / "output.log").open("wb") as log:
        log.write(f"{header}\n".encode())
        log.flush()
        popen = subprocess.Popen(
            ["/bin/sh", "-c", command],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=directory,
            start_new_session=True,
        )
    return JobProcess(job.id, popen, directory, grace)


def job_dirname(job_id: str) -> str:
    """A directory name for a job id (ids may hold '/', e.g. ``namespace/name``)."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in job_id) or "_"
