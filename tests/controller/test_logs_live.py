"""Every line of a real ``starburst server`` process is JSON, and an overrun is told once.

A real process on the wall clock: APScheduler ticks every 0.25 s while the first passes sleep
0.6 s (longer than their interval), and a malformed HTTP request makes uvicorn warn. The
lines asserted on — one overrun line with its duration, then the streak's count — do not
depend on how fast the machine is: a slow pass only ever lengthens the streak.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.databases import upgrade
from tests.support.waiting import wait_for

pytestmark = pytest.mark.xdist_group("timing")

SLOW_PASSES, SLEEP_S, INTERVAL_S = 3, 0.6, 0.25

# the process: ``starburst server``'s own ``serve.run``, its first passes made slow
SCRIPT = f"""
import time
from starburst.api import serve
from starburst.controller.loop.scheduling import SchedulingLoop
from starburst.settings import Settings

real, left = SchedulingLoop.run_pass, [{SLOW_PASSES}]

def run_pass(self):
    if left[0] > 0:
        left[0] -= 1
        time.sleep({SLEEP_S})
    return real(self)

SchedulingLoop.run_pass = run_pass
serve.run(Settings(), "server")
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _connect(port: int) -> socket.socket | None:
    try:
        return socket.create_connection(("127.0.0.1", port))
    except OSError:
        return None


def test_a_live_server_logs_only_json_and_one_overrun_line(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'live.db'}"
    upgrade(url)
    port = free_port()
    env = {
        **os.environ,
        "STARBURST_DATABASE_URL": url,
        "STARBURST_STATE_DIR": str(tmp_path / "state"),
        "STARBURST_CLOUD": "none",
        "STARBURST_LOCAL_GPUS": "1",
        "STARBURST_API_PORT": str(port),
        "STARBURST_PASS_INTERVAL_S": str(INTERVAL_S),
        "STARBURST_LOG_FORMAT": "json",
    }
    out = tmp_path / "server.log"
    with out.open("wb") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-c", SCRIPT], env=env, stdout=sink, stderr=subprocess.STDOUT
        )
    try:

        def parsed() -> list[dict[str, object]]:
            return [json.loads(line) for line in out.read_text().splitlines()]

        def said(msg: str) -> bool:
            return any(line["msg"] == msg for line in parsed())

        conn = wait_for(lambda: _connect(port), timeout=60, what="the server to listen")
        with conn:
            conn.sendall(b"NOT HTTP AT ALL\r\n\r\n")
            conn.recv(1024)
        wait_for(
            lambda: said("passes overran their interval"), timeout=60, what="the streak to end"
        )
        wait_for(lambda: any(line["logger"] == "uvicorn.error" for line in parsed()))
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise
    text = out.read_text()
    lines = [json.loads(line) for line in text.splitlines()]  # every line: JSON
    assert proc.returncode == 0, text[-2000:]
    messages = [line["msg"] for line in lines]
    end = messages.index("passes overran their interval")
    overran = [line for line in lines[:end] if line["msg"] == "pass overran its interval"]
    assert len(overran) == 1, messages  # once, however many ticks the streak missed
    assert float(overran[0]["seconds"]) >= SLEEP_S  # type: ignore[arg-type]
    assert overran[0]["interval_s"] == INTERVAL_S
    assert int(lines[end]["overruns"]) >= SLOW_PASSES  # type: ignore[call-overload]
    assert not any("maximum number of running instances" in str(m) for m in messages)
    (bad,) = [line for line in lines if line["logger"] == "uvicorn.error"]
    assert "Invalid HTTP request" in str(bad["msg"])
