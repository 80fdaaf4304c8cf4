"""A real headless Chromium for browser tests: Debian's ``chromium`` driven by Playwright.

``chromium_path()`` returns the browser binary, installing the Debian package first when it is
missing and the tests run as root (``apt-get update && apt-get install -y chromium``, once,
under a file lock so parallel workers do not race). Playwright's own browser download
(``playwright install``) is never used. Without the browser the tests skip — or fail when
``CI`` is set, so a CI run cannot pass by skipping them.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
#: Flags for a sandbox-less, quiet, offline headless run.
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
LOCK = Path.home() / ".cache" / "starburst" / "chromium-install.lock"


def _missing(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"no Chromium for the browser tests: {reason}")
    pytest.skip(f"no Chromium: {reason}")


def _install() -> str | None:
    """Install Debian's chromium; None when done, else why it could not be."""
    if os.geteuid() != 0:
        return "not root, so `apt-get install chromium` cannot run"
    if shutil.which("apt-get") is None:
        return "no apt-get on this machine"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "chromium"]):
        done = subprocess.run(
            command, capture_output=True, text=True, env=env, check=False, timeout=1800
        )
        if done.returncode != 0:
            return f"{' '.join(command)} failed: {(done.stderr or done.stdout)[-500:]}"
    return None


def chromium_path() -> str:
    """The Chromium binary (installed now if needed; see the module docstring)."""
    if not CHROMIUM.exists():
        LOCK.parent.mkdir(parents=True, exist_ok=True)
        with LOCK.open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            problem = None if CHROMIUM.exists() else _install()
        if problem is not None or not CHROMIUM.exists():
            _missing(problem or f"{CHROMIUM} is still missing after installing chromium")
    return str(CHROMIUM)
