"""The researcher CLI against a live server, the admin CLI on the database, and the one-line
message for a server that cannot be reached."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from starburst.cli.main import build_app
from starburst.core.lifecycle import JobState
from tests.support.databases import upgrade


def run(args: list[str], env: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    runner = CliRunner()
    return runner.invoke(build_app(args), args, env=env or {}, catch_exceptions=False)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_submit_jobs_explain_status_cancel_through_the_server(api):  # type: ignore[no-untyped-def]
    env = {"STARBURST_SERVER": api.url, "STARBURST_TOKEN": api.tokens["alice"]}
    made = run(
        [
            "submit",
            "--gpus",
            "2",
            "--image",
            "pytorch:2.4",
            "--name",
            "resnet",
            "--runtime",
            "1h30m",
            "--env",
            "SEED=7",
            "--",
            "python",
            "train.py",
            "--lr",
            "3e-4",
        ],
        env,
    )
    assert made.exit_code == 0, made.stderr
    job_id, state = made.stdout.split()
    assert state == "submitted"
    stored = api.store.jobs.get(job_id)
    assert stored.command == "python train.py --lr 3e-4" and stored.job.estimate == 5400
    assert stored.job.user == "alice" and stored.job.gpus == 2

    listed = run(["jobs"], env)
    assert listed.exit_code == 0
    header, row = listed.stdout.splitlines()
    assert header.split()[:5] == ["POS", "ID", "NAME", "USER", "STATE"]
    assert row.split()[:6] == ["1", job_id[:8], "resnet", "alice", "submitted", "2"]

    api.store.lifecycle.transition(
        job_id, JobState.QUEUED, reason="admitted: budget 40m", actor="controller", wait_budget=2400
    )
    api.clock.advance(720)
    explained = run(["explain", job_id], env)
    assert explained.exit_code == 0
    assert explained.stdout.startswith(f"{job_id}: waiting 12m of a 40m budget")
    assert "submitted → queued  admitted: budget 40m  controller" in explained.stdout

    status = run(["status", job_id], env)
    assert "state:       queued" in status.stdout and "wait budget: 40m" in status.stdout

    cancelled = run(["cancel", job_id], env)
    assert cancelled.exit_code == 0 and cancelled.stdout.split() == [job_id, "cancelled"]
    again = run(["cancel", job_id], env)
    assert again.exit_code == 1 and again.stdout == ""
    assert again.stderr == (
        f"error: job {job_id} already cancelled; only waiting or running "
        "jobs can be cancelled (HTTP 409)\n"
    )
    unknown = run(["status", "nope", "--server", api.url], env)
    assert unknown.exit_code == 1 and unknown.stderr == "error: no job or array nope (HTTP 404)\n"


def test_costs_prints_the_report_and_tokens_decide_what_is_seen(api):  # type: ignore[no-untyped-def]
    from decimal import Decimal

    from starburst.core.records import CostEntry, JobSpec

    job = api.store.submissions.submit(JobSpec(gpus=1, user="alice", team="ml")).job.id
    now = api.clock.now()
    api.store.ledger.record_costs(
        [CostEntry(job, now - 7200, now - 3600, Decimal("12.5"), "aws", gpu_hours=1.0)]
    )
    report = run(["costs", "--by", "team,cloud", "--server", api.url, "--token", api.tokens["fin"]])
    assert report.exit_code == 0, report.stderr
    lines = report.stdout.splitlines()
    assert lines[1].split() == [
        "TEAM",
        "CLOUD",
        "AMOUNT",
        "CURRENCY",
        "GPU-H",
        "ONPREM-GPU-H",
        "SHOWBACK",
        "ENTRIES",
    ]
    assert lines[2].split() == ["ml", "aws", "12.50", "USD", "1.000", "0.000", "0.00", "1"]
    assert lines[3].split() == ["total", "12.50", "USD", "1.000", "0.000", "0.00"]
    nobody = run(["costs", "--server", api.url, "--token", "sb_wrong"])
    assert nobody.exit_code == 1
    assert nobody.stderr == "error: invalid, expired or revoked API token (HTTP 401)\n"


def test_the_requests_of_one_process_load_the_ca_bundle_once(api, monkeypatch):  # type: ignore[no-untyped-def]
    import ssl

    from starburst.cli import jobs

    built = []
    real = ssl.create_default_context
    monkeypatch.setattr(
        ssl, "create_default_context", lambda *a, **k: built.append(1) or real(*a, **k)
    )
    jobs.tls_context.cache_clear()
    env = {"STARBURST_SERVER": api.url, "STARBURST_TOKEN": api.tokens["alice"]}
    for _ in range(3):
        assert run(["jobs"], env).exit_code == 0
    assert len(built) == 1  # was one per request: ~20 ms of CPU each
    jobs.tls_context.cache_clear()


def test_an_unreachable_server_is_one_clear_line_and_exit_2() -> None:
    url = f"http://127.0.0.1:{_free_port()}"
    for args in (["jobs"], ["submit", "--image", "i", "--", "true"], ["costs"]):
        result = run(args, {"STARBURST_SERVER": url})
        assert result.exit_code == 2
        assert result.stderr == (
            f"error: cannot reach the Starburst server at {url}: "
            "connection refused; is `starburst server` running?\n"
        )


def test_the_installed_command_prints_no_traceback_when_the_server_is_down() -> None:
    url = f"http://127.0.0.1:{_free_port()}"
    script = Path(sys.executable).parent / "starburst"
    done = subprocess.run(
        [str(script), "explain", "abc"],
        capture_output=True,
        text=True,
        env={"STARBURST_SERVER": url, "PATH": "/usr/bin:/bin"},
        check=False,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == [
        f"error: cannot reach the Starburst server at {url}: connection refused; "
        "is `starburst server` running?"
    ]


def test_bad_durations_are_usage_errors() -> None:
    result = run(["submit", "--image", "i", "--runtime", "soon", "--", "true"])
    assert result.exit_code == 2 and "'soon' is not a duration" in result.stderr


@pytest.mark.parametrize(
    "text,seconds",
    [("90", 90), ("45s", 45), ("30m", 1800), ("2h", 7200), ("1h30m", 5400), ("1.5d", 129600)],
)
def test_durations(text: str, seconds: float) -> None:
    from starburst.cli.jobs import parse_duration

    assert parse_duration(text) == seconds


def test_admin_verbs_work_on_the_database_and_the_issued_token_authenticates(  # type: ignore[no-untyped-def]
    db_url, open_store
):
    env = {"STARBURST_DATABASE_URL": db_url}
    assert (
        run(["admin", "users", "add", "dana", "--team", "rl"], env).stdout
        == "user dana (team rl)\n"
    )
    issued = run(["admin", "tokens", "issue", "dana", "--role", "finance"], env)
    assert issued.exit_code == 0 and "shown once" in issued.stderr
    secret = issued.stdout.strip()
    principal = open_store(db_url).accounts.authenticate(secret)
    assert (principal.user, principal.team, principal.role.value) == ("dana", "rl", "finance")
    assert (
        run(["admin", "budgets", "set", "rl", "2500.50", "--url", db_url]).stdout
        == "team rl: 2500.5 USD per month\n"
    )
    assert open_store(db_url).accounts.team_budget("rl").monthly_limit == 2500.5
    assert run(["admin", "budgets", "show", "rl"], env).exit_code == 0
    missing = run(["admin", "budgets", "show", "none"], env)
    assert missing.exit_code == 1 and missing.stderr == "error: team none has no budget\n"
    bad = run(["admin", "tokens", "issue", "dana", "--role", "king"], env)
    assert bad.exit_code == 2 and "choose user, finance, admin" in bad.stderr
    revoked = run(["admin", "tokens", "revoke", str(principal.token_id)], env)
    assert revoked.stdout == f"token {principal.token_id} revoked\n"
    assert open_store(db_url).accounts.authenticate(secret) is None


def test_admin_errors_for_people_exit_2_without_a_traceback(db_url) -> None:  # type: ignore[no-untyped-def]
    from starburst.cli.main import main

    with pytest.raises(SystemExit) as stopped:
        main(["admin", "tokens", "issue", "ghost", "--url", db_url])
    assert stopped.value.code == 2


def test_serving_a_database_without_the_schema_says_to_run_db_upgrade(tmp_path: Path) -> None:
    env = {
        "STARBURST_DATABASE_URL": f"sqlite:///{tmp_path / 'empty.db'}",
        "STARBURST_STATE_DIR": str(tmp_path / "state"),
        "STARBURST_API_PORT": "0",
        "PATH": "/usr/bin:/bin",
    }
    done = subprocess.run(
        [str(Path(sys.executable).parent / "starburst"), "server"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "has no Starburst schema yet: run `starburst db upgrade` first" in done.stderr


def test_serving_a_database_behind_the_newest_schema_names_both_revisions(tmp_path: Path) -> None:
    from starburst.adapters.db import migrate

    url = f"sqlite:///{tmp_path / 'old.db'}"
    migrate.upgrade(url, "0001")
    with pytest.raises(Exception, match=r"schema revision 0001.*run `starburst db upgrade`"):
        migrate.require_schema(url)
    upgrade(url)
    migrate.require_schema(url)  # at head: nothing to say
