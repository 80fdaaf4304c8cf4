"""Every admin CLI path answers bad input with one line and a non-zero exit, and changes
nothing: an absurd budget, an unknown migration revision, a downgrade nobody confirmed, an
export into a directory that does not exist. On SQLite and PostgreSQL."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from starburst.adapters.db import migrate
from starburst.cli.main import main
from tests.support.databases import upgrade


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'sb.db'}"
    else:
        url = request.getfixturevalue("postgres_database")
    upgrade(url)
    return url


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as done:
        main(list(args))
    out, err = capsys.readouterr()
    return int(done.value.code or 0), out, err


def one_line(err: str) -> str:
    assert "Traceback" not in err
    lines = [
        line
        for line in err.splitlines()
        if line.strip() and not line.startswith(("╭", "│", "╰", "Usage", "Try"))
    ]
    assert len(lines) == 1, err
    return lines[0]


def test_an_absurd_budget_is_one_line_and_not_stored(
    db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    for amount in ("1e30", "1e13", "NaN", "Infinity", "lots"):
        code, _, err = cli(capsys, "admin", "budgets", "set", "ml", amount, "--url", db)
        assert code == 2 and amount in one_line(err)
    code, _, err = cli(capsys, "admin", "budgets", "show", "--url", db)
    assert code == 1 and "no team has a budget" in err
    assert cli(capsys, "admin", "budgets", "set", "ml", "1e12", "--url", db)[0] == 0


def test_downgrade_to_an_unknown_revision_is_one_line(
    db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = cli(capsys, "db", "downgrade", "--to", "9999", "--yes", "--url", db)
    assert code == 2 and "9999" in one_line(err)
    code, _, err = cli(capsys, "db", "upgrade", "--to", "9999", "--url", db)
    assert code == 2 and "9999" in one_line(err)
    assert migrate.current(db) == migrate.head()


def test_downgrade_without_a_terminal_needs_yes(
    db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = cli(capsys, "db", "downgrade", "--url", db)
    assert code == 1 and "--yes" in one_line(err)
    assert migrate.current(db) == migrate.head()
    assert cli(capsys, "db", "downgrade", "--yes", "--url", db)[0] == 0
    assert migrate.current(db) != migrate.head()


@pytest.mark.parametrize("answer", ["n", "y"])
def test_downgrade_asks_on_a_terminal(tmp_path: Path, answer: str) -> None:
    url = f"sqlite:///{tmp_path / 'sb.db'}"
    upgrade(url)
    main_fd, terminal = pty.openpty()
    env = {k: v for k, v in os.environ.items() if not k.startswith("STARBURST_")}
    with subprocess.Popen(
        [sys.executable, "-m", "starburst.cli", "db", "downgrade", "--url", url],
        stdin=terminal,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    ) as process:
        os.close(terminal)
        os.write(main_fd, f"{answer}\n".encode())
        out, err = process.communicate(timeout=120)
    os.close(main_fd)
    assert b"downgrade" in out and b"[y/N]" in out, out + err
    if answer == "n":
        assert process.returncode == 1 and migrate.current(url) == migrate.head()
    else:
        assert process.returncode == 0 and migrate.current(url) != migrate.head()


def test_export_into_a_missing_directory_creates_nothing(
    db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "nonexistent" / "dir" / "x.csv"
    code, _, err = cli(capsys, "history", "export", "-o", str(target), "--url", db)
    assert code == 1 and str(target.parent) in one_line(err)
    assert not (tmp_path / "nonexistent").exists()
    shape = tmp_path / "nowhere" / "cluster.yaml"
    out = tmp_path / "x.csv"
    code, _, err = cli(
        capsys, "history", "export", "-o", str(out), "--cluster", str(shape), "--url", db
    )
    assert code == 1 and "nowhere" in one_line(err)
    assert not out.exists() and not shape.parent.exists()


def test_admin_tokens_and_currencies_are_checked_as_the_api_checks_them(
    db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli(capsys, "admin", "users", "add", "alice", "--url", db)[0] == 0
    code, _, err = cli(capsys, "admin", "tokens", "revoke", "99999999999999999999", "--url", db)
    assert code == 1 and "no live token" in one_line(err)
    code, _, err = cli(
        capsys, "admin", "tokens", "issue", "alice", "--label", "a\x01b", "--url", db
    )
    assert code == 2 and "label" in one_line(err)
    code, _, err = cli(
        capsys, "admin", "budgets", "set", "ml", "5", "--currency", "XXXXX", "--url", db
    )
    assert code == 2 and "currency" in one_line(err)
    code, out, _ = cli(capsys, "admin", "tokens", "list", "--url", db)
    assert code == 0 and out.strip() == "no tokens"
