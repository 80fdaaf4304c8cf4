"""A real SkyPilot API server for tests: ``sky api start`` in a throwaway HOME on a free port.

Terms:
- *endpoint*: ``http://127.0.0.1:<port>``; the SDK in this process reaches it through
  ``SKYPILOT_API_SERVER_ENDPOINT`` (and the CLI through ``SKYPILOT_API_SERVER_LOCAL_PORT``),
  with ``HOME`` pointing at the throwaway directory, where the server keeps its state
  (``~/.sky``) and its log (``~/.sky/api_server/server.log``).
- *warm*: the server answers ``sky api start`` before its request workers run; the first
  request it serves waits for them (tens of seconds on a loaded 2-core machine), so the
  fixture sends one request and waits for it before handing the server to tests.

Invariants: nothing here needs the network (usage collection is off); the server is stopped
by its own command (``sky api stop``) with the same environment, so it is this server that
stops, never another one on the machine.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

START_TIMEOUT_S = 240.0


class SkyServerError(RuntimeError):
    """The API server could not be started (the message carries its log's tail)."""


def sky_binary() -> Path | None:
    candidate = Path(sys.executable).parent / "sky"
    return candidate if candidate.exists() else None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class SkyServer:
    """One API server; ``env`` is what a client (SDK or CLI) needs to reach it."""

    home: Path
    port: int
    binary: Path
    extra_env: dict[str, str] = field(default_factory=dict)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def env(self) -> dict[str, str]:
        return {
            "HOME": str(self.home),
            "SKYPILOT_API_SERVER_LOCAL_PORT": str(self.port),
            "SKYPILOT_API_SERVER_ENDPOINT": self.endpoint,
            "SKYPILOT_DISABLE_USAGE_COLLECTION": "1",
            # size the server for a shared test machine: one long-request worker, few short
            "SKYPILOT_POD_CPU_CORE_LIMIT": "1",
            "SKYPILOT_POD_MEMORY_GB_LIMIT": "2",
            **self.extra_env,
        }

    @property
    def log(self) -> Path:
        return self.home / ".sky" / "api_server" / "server.log"

    def cli(self, *args: str, timeout: float = 180.0) -> subprocess.CompletedProcess[str]:
        """Run ``sky ARGS`` as a user of this server would."""
        return subprocess.run(
            [str(self.binary), *args],
            env={**os.environ, **self.env},
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def start(self) -> None:
        started = time.monotonic()
        done = self.cli(
            "api", "start", "--host", "127.0.0.1", "--port", str(self.port), timeout=START_TIMEOUT_S
        )
        if done.returncode != 0:
            raise SkyServerError(
                f"sky api start failed ({done.returncode}): "
                f"{done.stdout[-800:]}{done.stderr[-800:]}{self.log_tail()}"
            )
        self.started_in = time.monotonic() - started

    def stop(self) -> None:
        self.cli("api", "stop", timeout=120.0)

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""
