"""A control-plane program never outlives the test process that started it, even one killed
with SIGKILL (no finaliser runs then): on a shared machine a leaked control plane would hold
memory and ports for good."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.support.waiting import wait_for

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only")


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split()[2]
    except FileNotFoundError:
        return False
    return state != "Z"  # a zombie has ended, only its exit status is left


def test_a_program_ends_when_the_test_process_is_killed(tmp_path: Path) -> None:
    parent = textwrap.dedent(f"""
        import os, signal, sys
        sys.path.insert(0, {str(Path.cwd())!r})
        from pathlib import Path
        from tests.support.controlplane_process import Process
        child = Process("sleeper", ["sleep", "300"], Path({str(tmp_path)!r}))
        print(child.popen.pid, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    done = subprocess.run(
        [sys.executable, "-c", parent], capture_output=True, text=True, check=False, timeout=60
    )
    assert done.returncode == -9, done.stderr
    pid = int(done.stdout.split()[0])
    try:
        assert wait_for(lambda: not alive(pid), timeout=10)
    finally:
        if alive(pid):
            os.kill(pid, 9)
