"""``starburst simulate TRACE | head`` ends quietly: a reader that went away (a closed pipe)
is no traceback, on the fast path and on typer's. The child writes into a pipe whose read end
is closed before it starts, so every write fails at once (no race with a real ``head``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from starburst.sim.synthetic import Workload, generate
from starburst.sim.trace import write_trace


@pytest.fixture(scope="module")
def trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("pipe") / "trace.csv"
    write_trace(generate(Workload(50, 16, load=1.0, seed=3)), path)
    return path


@pytest.mark.parametrize(
    ("extra", "code"),
    [
        ([], 141),  # the fast path: as a shell reports a writer killed by SIGPIPE
        (["--order", "fifo", "--order=fifo"], 1),  # typer's (click's own quiet exit)
    ],
)
def test_a_closed_pipe_ends_simulate_without_a_traceback(
    trace: Path, extra: list[str], code: int
) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # `head` already gone
    try:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "starburst.cli",
                "simulate",
                str(trace),
                "--nodes",
                "2",
                "--gpus-per-node",
                "8",
                *extra,
            ],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    finally:
        os.close(write_end)
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr, done.stderr
    assert done.stderr == ""
    assert done.returncode == code
