"""Helpers for restart tests: an earlier controller life in a child Python process, killed -9.

A *life* is one backend object. ``earlier_life`` runs a snippet that builds a backend on a
state directory and starts jobs, waits until it prints ``ready``, then SIGKILLs it — as a
crash of the controller — and reaps it. The jobs it started run on in their own sessions.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from starburst.core.capacity import Part, Placement
from starburst.core.job import Job

ROOT = Path(__file__).resolve().parents[2]


def job(job_id: str, command: str, gpus: int = 1, **extra: str) -> Job:
    return Job(job_id, 0.0, gpus, team="ml", extra={"command": command, **extra})


def on_local(gpus: int) -> Placement:
    return (Part(0, "local", gpus, 0.0, 0.0),)


def appends(runs: Path, then: str = "") -> str:
    """A command that appends one line to ``runs`` per run (so running twice shows)."""
    return f'echo "run $STARBURST_JOB_ID" >> {runs}' + (f"; {then}" if then else "")


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def gone(pid: int) -> bool:
    """True when the process no longer runs (a zombie awaiting an absent reaper counts)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return True
    return "\nState:\tZ" in status


def earlier_life(snippet: str, **values: Any) -> Any:
    """Run ``snippet`` in a child Python (``values`` bound as JSON), SIGKILL it once it prints
    ``ready <json>``, and return that JSON value."""
    prelude = "".join(
        f"{name} = json.loads({json.dumps(json.dumps(v))})\n" for name, v in values.items()
    )
    script = "import json\n" + prelude + textwrap.dedent(snippet)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, env=env, cwd=ROOT, text=True
    ) as child:
        assert child.stdout is not None
        line = child.stdout.readline()
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert line.startswith("ready "), f"the earlier life did not get ready: {line!r}"
    return json.loads(line.removeprefix("ready "))
