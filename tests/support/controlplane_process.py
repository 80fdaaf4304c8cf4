"""The programs of a test control plane, each a child process with its output in a log file.

``Process`` starts one (etcd's stdout stays a pipe: it announces its address there) and stops
it (SIGTERM, then SIGKILL after 15 s); ``log_tail`` is what a start-up error shows.
``free_port`` probes a free loopback port (callers retry if it is taken before they bind).
"""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path


class StartError(RuntimeError):
    """A control-plane program did not start (the message carries its log)."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Process:
    def __init__(self, name: str, argv: list[str], workdir: Path) -> None:
        self.name = name
        self.log_path = workdir / f"{name}.log"
        self._log = open(self.log_path, "wb")  # noqa: SIM115 (closed in stop)
        self.popen = subprocess.Popen(
            argv,
            stdout=subprocess.PIPE if name == "etcd" else self._log,
            stderr=self._log,
            stdin=subprocess.DEVNULL,
        )

    def alive(self) -> bool:
        return self.popen.poll() is None

    def log_tail(self, lines: int = 40) -> str:
        self._log.flush()
        text = self.log_path.read_text(errors="replace").splitlines()
        return "\n".join(text[-lines:])

    def stop(self) -> None:
        if self.alive():
            self.popen.terminate()
            try:
                self.popen.wait(15)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()
        if self.popen.stdout is not None:
            self.popen.stdout.close()
        self._log.close()
