"""Job output and user-given text cannot drive a reader's terminal (issue 38, finding 7).

Before the fix a job's last output lines carrying OSC sequences (``ESC]52`` clipboard write,
``ESC]8`` link, ``ESC]0`` title) arrived raw in ``starburst status`` and ``explain``, and
names with C1 controls (U+009B, U+0085) or U+202E were accepted and printed raw by
``starburst jobs``. The CLI runs against a real server on a real PostgreSQL.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import pytest
from typer.testing import CliRunner

from starburst.adapters.db.store import SqlStore
from starburst.api import create_app
from starburst.cli import jobs as jobs_command
from starburst.cli.main import build_app
from starburst.core.failure import with_output
from starburst.core.lifecycle import JobState
from starburst.core.records import JobSpec, Role
from starburst.settings import Settings
from tests.api.conftest import LiveServer
from tests.support import http
from tests.support.databases import upgrade
from tests.support.postgres import drop_database, fresh_database

OSC = (
    "\x1b]52;c;cm0gLXJmIH4K\x07"  # write the clipboard
    "\x1b]8;;http://evil.example/\x1b\\click me\x1b]8;;\x1b\\"  # a hidden link
    "\x1b]0;root@prod\x07"  # the window title
)
#: what no terminal may receive from others' text: ESC, C1 controls, bidi controls
RAW = re.compile("[\x1b\x07\x80-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
NAMES = ["evil\x9b2J", "line\x85break", "gpj.\u202eexe", "osc\x1b]0;t\x07"]
OUTPUT = f"epoch 1\n{OSC}\ndone\x9b31m\n"


class Logs:
    def read(self, stored: Any, launches: Any, tail: Any) -> str:
        return OUTPUT


@dataclass
class Served:
    store: SqlStore
    url: str
    tokens: dict[str, str]
    failed: str


@pytest.fixture(scope="module")
def served(postgres_url: str) -> Iterator[Served]:
    database = fresh_database(postgres_url, "terminal")
    upgrade(database)
    store = SqlStore.open(database)
    store.accounts.save_user("root")
    store.accounts.save_user("alice", team="ml")
    tokens = {
        "admin": store.accounts.issue_token("root", Role.ADMIN).secret,
        "alice": store.accounts.issue_token("alice", Role.USER).secret,
    }
    job = store.submissions.submit(JobSpec(gpus=0, user="alice", command="train")).job.id
    for state, why in (
        (JobState.QUEUED, "admitted"),
        (JobState.RUNNING_ONPREM, "started"),
        (JobState.FAILED, with_output("exit code 1", OUTPUT)),
    ):
        store.lifecycle.transition(job, state, reason=why, actor="controller")
    for name in NAMES:  # stored before names were checked
        store.submissions.submit(JobSpec(gpus=0, user="alice", name=name, command="true"))
    app = create_app(Settings(database_url=database), store, auth=True, job_logs=lambda: Logs())
    server = LiveServer(app).start()
    try:
        yield Served(store, server.url, tokens, job)
    finally:
        server.stop()
        store.close()
        drop_database(database)


def cli(served: Served, *args: str, who: str = "admin") -> Any:
    argv = [args[0], "--server", served.url, "--token", served.tokens[who], *args[1:]]
    return CliRunner().invoke(build_app(argv), argv, env={}, catch_exceptions=False)


@pytest.mark.parametrize("command", ["status", "explain"])
def test_a_jobs_output_tail_reaches_no_terminal_raw(served: Served, command: str) -> None:
    result = cli(served, command, served.failed)
    assert result.exit_code == 0, result.stderr
    assert "epoch 1" in result.stdout and "click me" in result.stdout
    assert RAW.findall(result.stdout) == []
    assert "\\x1b]52;c;" in result.stdout  # shown, not hidden


def test_names_with_controls_print_escaped_in_jobs(served: Served) -> None:
    result = cli(served, "jobs", "--all", "-o", "wide")
    assert result.exit_code == 0, result.stderr
    assert RAW.findall(result.stdout) == []
    assert "\\u202e" in result.stdout and "\\x9b" in result.stdout


def test_logs_are_raw_in_a_pipe_and_escaped_on_a_terminal(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    piped = cli(served, "logs", served.failed)
    assert piped.stdout == OUTPUT  # a file or a pipe gets what the job wrote
    terminal = SimpleNamespace(stdout=SimpleNamespace(isatty=lambda: True))
    monkeypatch.setattr(jobs_command, "sys", terminal)
    shown = cli(served, "logs", served.failed)
    assert RAW.findall(shown.stdout) == [] and "epoch 1\n" in shown.stdout
    assert cli(served, "logs", "--raw", served.failed).stdout == OUTPUT


@pytest.mark.parametrize("name", NAMES)
def test_names_with_controls_are_refused_at_submit(served: Served, name: str) -> None:
    with http.client(base_url=served.url, timeout=30) as client:
        answer = client.post(
            "/v1/jobs",
            json={"command": "true", "gpus": 0, "name": name},
            headers={"Authorization": f"Bearer {served.tokens['alice']}"},
        )
    assert answer.status_code == 422 and "name" in answer.json()["detail"]
    result = cli(served, "submit", "--name", name, "--gpus", "0", "--", "true", who="alice")
    assert result.exit_code == 1
    assert len(result.stderr.strip().splitlines()) == 1 and RAW.findall(result.stderr) == []


def test_printable_keeps_layout_and_escapes_the_rest() -> None:
    from starburst.cli.terminal import printable

    assert printable("a\tb\nc") == "a\tb\nc"
    assert printable("50%\r60%") == "50%\\x0d60%"
    assert printable("50%\r60%", keep_cr=True) == "50%\r60%"
    assert printable("\x1b[2J\x9b\u202e") == "\\x1b[2J\\x9b\\u202e"
