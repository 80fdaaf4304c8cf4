"""The output copier: a job's output into its log, up to a cap, then a line saying where it
was cut. The wrapper runs it as a script (``python -I -S outputcap.py``); it starts the job.

A job's stdout and stderr once went straight into its log file: a job printing 200 MB kept
200 MB. A file descriptor cannot be capped (``RLIMIT_FSIZE`` would cap every file the job
writes, checkpoints included), so the job writes into a pipe and this process copies.

Terms:
- *cap*: the most bytes of output kept (``local_job_output_max_mb``); the first byte beyond
  it writes ``CUT`` (with the cap) in its place; at the end, ``DROPPED`` says how many bytes
  were not kept. Output is never lost below the cap, and the job never blocks or fails
  because of it: what is beyond is read and dropped.
- *the job's end*: the job's process (this one's child) ends. Everything it wrote is in the
  pipe by then, so just that is copied, without waiting for more: a process it left behind
  that still holds the pipe cannot keep the wrapper from recording the end (it is killed
  when the end is seen, ``jobusers.py``).

Invariants: exits with the job's exit status as a shell reports it (128 + signal for a job
killed by a signal); the job gets default SIGPIPE and SIGXFSZ (Python ignores them) and no
descriptor of this process but its standard streams; it imports nothing but the standard
library (``-I -S``: nothing of the job's environment or of the controller's packages).

Usage: ``outputcap.py CAP_BYTES ARGV...`` with the log as standard output.
"""

from __future__ import annotations

import array
import fcntl
import os
import select
import signal
import sys
import termios

CHUNK = 1 << 16
CUT = "\n# starburst: output cut here: the job printed more than {cap} bytes (its cap)\n"
DROPPED = "# starburst: {dropped} more bytes of output were not kept\n"


class Capped:
    """Writes at most ``cap`` bytes to ``out``, then the cut line once; counts the rest."""

    def __init__(self, out: int, cap: int) -> None:
        self.out, self.cap = out, cap
        self.kept = 0
        self.dropped = 0

    def write(self, data: bytes) -> None:
        room = self.cap - self.kept
        if room > 0:
            _write_all(self.out, data[:room])
            self.kept += min(room, len(data))
            data = data[room:]
        if data and self.dropped == 0:
            _write_all(self.out, CUT.format(cap=self.cap).encode())
        self.dropped += len(data)

    def close(self) -> None:
        if self.dropped:
            _write_all(self.out, DROPPED.format(dropped=self.dropped).encode())


def copy(source: int, pidfd: int, capped: Capped) -> None:
    """Copy ``source`` into ``capped`` until its end, or until the process of ``pidfd`` has
    ended and what was in ``source`` then is copied."""
    poller = select.poll()
    poller.register(source, select.POLLIN)
    poller.register(pidfd, select.POLLIN)
    while True:
        ready = {fd for fd, _ in poller.poll()}
        if pidfd in ready:
            _drain(source, capped)
            return
        data = os.read(source, CHUNK)
        if not data:
            return
        capped.write(data)


def _drain(source: int, capped: Capped) -> None:
    """Copy what ``source`` holds now, and no more (a leftover may write on forever)."""
    os.set_blocking(source, False)
    pending = _available(source)
    while pending > 0:
        try:
            data = os.read(source, min(CHUNK, pending))
        except BlockingIOError:
            return
        if not data:
            return
        capped.write(data)
        pending -= len(data)


def _available(fd: int) -> int:
    count = array.array("i", [0])
    fcntl.ioctl(fd, termios.FIONREAD, count)
    return count[0]


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def main(argv: list[str]) -> int:
    cap, command = int(argv[1]), argv[2:]
    source, sink = os.pipe()
    pid = os.posix_spawnp(
        command[0],
        command,
        os.environ,
        file_actions=[(os.POSIX_SPAWN_DUP2, sink, 1), (os.POSIX_SPAWN_DUP2, sink, 2)],
        setsigdef=(signal.SIGPIPE, signal.SIGXFSZ),
    )
    os.close(sink)
    capped = Capped(sys.stdout.fileno(), cap)
    pidfd = os.pidfd_open(pid)
    try:
        copy(source, pidfd, capped)
    finally:
        capped.close()
    code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    return 128 - code if code < 0 else code


if __name__ == "__main__":
    sys.exit(main(sys.argv))
