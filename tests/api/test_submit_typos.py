"""Typos refused, and ``--wait`` that shows the job as it runs (issue 34, item 6), through the
real CLI against a served app: a job file that is not there is one line naming it (never a
command named ``job.yml``); an idempotency key reused for another job is 409 naming the
fields that differ (the same job again still gets that job); ``submit --wait`` prints the
output as it comes, as ``logs -f`` does."""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from starburst.core.lifecycle import JobState
from tests.api import test_sky_tasks
from tests.api.test_cli import run
from tests.support.databases import BOTH

live = test_sky_tasks.live  # the fixture: a served app over a real local cluster with logs


def env_of(api) -> dict[str, str]:  # type: ignore[no-untyped-def]
    return {"STARBURST_SERVER": api.url, "STARBURST_TOKEN": api.tokens["alice"]}


def _nothing_stored(api) -> bool:  # type: ignore[no-untyped-def]
    return api.store.jobs.queue(limit=5, states=list(JobState)).jobs == []


@BOTH
@pytest.mark.parametrize("name", ["nonexist.yaml", "train.yml", "job.JSON", "sub/dir/task.yaml"])
def test_a_job_file_that_is_not_there_is_refused_naming_it(api, name: str) -> None:  # type: ignore[no-untyped-def]
    made = run(["submit", name], env_of(api))
    assert made.exit_code == 2
    assert made.stderr == f"error: job file {name} does not exist; nothing submitted\n"
    assert made.stdout == "" and _nothing_stored(api)


def test_a_directory_is_not_a_job_file(api, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    folder = tmp_path / "jobs.yaml"
    folder.mkdir()
    made = run(["submit", str(folder)], env_of(api))
    assert made.exit_code == 2 and made.stderr == f"error: job file {folder} is not a file\n"
    assert _nothing_stored(api)


def test_a_json_job_file_is_read(api, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    task = tmp_path / "task.json"
    task.write_text('{"name": "j", "run": "echo hi", "resources": {"accelerators": "A100:1"}}')
    made = run(["submit", str(task)], env_of(api))
    assert made.exit_code == 0, made.stderr
    stored = api.store.jobs.get(made.stdout.split()[0])
    assert (stored.job.name, stored.job.gpus, stored.command) == ("j", 1, "bash -c 'echo hi'")


@BOTH
def test_a_key_reused_for_another_job_is_409_naming_what_differs(api) -> None:  # type: ignore[no-untyped-def]
    env = env_of(api)
    first = ["submit", "--idempotency-key", "run-7", "--gpus", "2", "--env", "LR=1", "--"]
    made = run([*first, "python", "train.py"], env)
    assert made.exit_code == 0, made.stderr
    job_id = made.stdout.split()[0]
    again = run([*first, "python", "train.py"], env)  # the same job: that job, as before
    assert again.exit_code == 0 and again.stdout.split()[0] == job_id
    typo = run([*first, "python", "trian.py"], env)
    assert typo.exit_code == 1
    assert typo.stderr == (
        f"error: idempotency key 'run-7' already made job {job_id}, which differs in "
        "command: resubmit the same job to get it back, or use a new key for a new job "
        "(HTTP 409)\n"
    )
    other = run(
        ["submit", "--idempotency-key", "run-7", "--gpus", "4", "--", "python", "train.py"], env
    )
    assert other.exit_code == 1 and "which differs in gpus, env:" in other.stderr
    assert [s.id for s in api.store.jobs.queue(states=list(JobState)).jobs] == [job_id]
    # over the API as well (the fast path and the route answer alike)
    body = {"command": "python train.py", "gpus": 2, "env": {"LR": "2"}}
    answer = api.client("alice").post("/v1/jobs", json=body, headers={"Idempotency-Key": "run-7"})
    assert answer.status_code == 409 and "differs in env" in answer.json()["detail"]


def test_wait_streams_the_output_as_it_comes(live, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The job prints a line, then waits for a file only the test creates once that line
    came through ``submit --wait``: a ``--wait`` that printed nothing until the end would
    never see it (the job would never end), and this test would fail at the first get."""
    go = tmp_path / "go"
    script = f"echo first; while [ ! -e {go} ]; do sleep 0.05; done; echo second; exit 4"
    argv = [sys.executable, "-m", "starburst.cli", "submit", "--wait", "--interval", "0.1"]
    cli = subprocess.Popen(
        [*argv, "--", "sh", "-c", script],
        env={**os.environ, **env_of(live)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    reader = threading.Thread(target=lambda: [lines.put(x) for x in cli.stdout or ()], daemon=True)
    reader.start()
    try:
        job_id = lines.get(timeout=60).split()[0]
        seen = [lines.get(timeout=60) for _ in range(2)]  # the local cluster's header, then
        assert seen[0].startswith("# starburst local: job") and seen[1] == "first\n"
        go.touch()
        assert lines.get(timeout=60) == "second\n"
        assert cli.wait(timeout=60) == 4
        assert cli.stderr is not None
        assert cli.stderr.read() == f"job {job_id} failed: failed on-prem: exit code 4\n"
    finally:
        go.touch()
        if cli.poll() is None:
            cli.kill()
        cli.wait()
        for stream in (cli.stdout, cli.stderr):
            if stream is not None:
                stream.close()
