"""``starburst db`` and ``starburst admin`` read settings like every other command.

The bug this guards: with ``database_url`` pointing at PostgreSQL in the YAML settings file
(``--config`` or ``$STARBURST_CONFIG``), ``db upgrade``/``db current`` and the ``admin`` verbs
used the default SQLite file instead, so tokens and budgets landed in the wrong database.
Each case runs the real ``starburst`` command in a child process whose home directory is
empty (the default SQLite path is computed from it when the settings load), and checks both
that PostgreSQL got the data and that no SQLite file appeared. The commands of one case run
one after another in one child (``starburst_each``: each through the command's own entry
point, settings loaded again each time; nothing of the settings is cached between commands),
so the case pays for one interpreter's imports, not one per command.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from starburst.adapters.db.store import SqlStore
from tests.support.databases import upgrade

pytestmark = pytest.mark.postgres


def child_env(home: Path, **env: str) -> dict[str, str]:
    """This process's environment without Starburst's variables, at home ``home``, plus ``env``."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("STARBURST_")}
    return {**clean, "HOME": str(home), **env}


def starburst(home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "starburst.cli", *args],
        env=child_env(home, **env),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


#: runs each command of argv[1] (JSON) through ``starburst.cli.main.main`` and prints one JSON
#: list of [exit status, stdout, stderr] per command
EACH = """
import contextlib, io, json, sys
from starburst.cli.main import main
ran = []
for args in json.loads(sys.argv[1]):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(args)
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    ran.append([code, out.getvalue(), err.getvalue()])
print(json.dumps(ran))
"""


def starburst_each(
    home: Path, commands: list[list[str]], **env: str
) -> list[subprocess.CompletedProcess[str]]:
    """Run ``commands`` one after another in one child (see the module docstring)."""
    done = subprocess.run(
        [sys.executable, "-c", EACH, json.dumps(commands)],
        env=child_env(home, **env),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    ran = json.loads(done.stdout.strip().splitlines()[-1])
    return [
        subprocess.CompletedProcess(c, code, out, err)
        for c, (code, out, err) in zip(commands, ran, strict=True)
    ]


@pytest.fixture
def settings_file(tmp_path: Path, postgres_database: str) -> Path:
    path = tmp_path / "settings.yaml"
    path.write_text(f"database_url: {postgres_database}\npolicy: compute\n")
    return path


def no_sqlite_in(home: Path) -> bool:
    return not list(home.rglob("*.db"))


@pytest.mark.parametrize("how", ["--config", "STARBURST_CONFIG"])
def test_db_and_admin_use_the_database_of_the_settings_file(
    how: str, tmp_path: Path, settings_file: Path, postgres_database: str
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    opts = ["--config", str(settings_file)] if how == "--config" else []
    env = {} if opts else {"STARBURST_CONFIG": str(settings_file)}
    *changes, current, shown = starburst_each(
        home,
        [
            [*args, *opts]
            for args in (
                ["db", "upgrade"],
                ["admin", "users", "add", "alice", "--team", "ml"],
                ["admin", "budgets", "set", "ml", "5000"],
                ["db", "current"],
                ["admin", "users", "show", "alice"],
            )
        ],
        **env,
    )
    for done in changes:
        assert done.returncode == 0, done.stderr
    assert current.stdout.startswith("postgresql+psycopg://"), current.stdout
    assert "team ml" in shown.stdout, shown.stderr
    store = SqlStore.open(postgres_database)
    try:
        user = store.accounts.user("alice")
        budget = store.accounts.team_budget("ml")
    finally:
        store.close()
    assert user is not None and user.team == "ml"
    assert budget is not None and budget.monthly_limit == 5000
    assert no_sqlite_in(home), "a command fell back to the default SQLite file"


def test_url_option_and_environment_still_win_over_the_file(
    tmp_path: Path, settings_file: Path
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    other = f"sqlite:///{tmp_path / 'other.db'}"
    env_url = f"sqlite:///{tmp_path / 'env.db'}"
    # --url wins over the environment and the file, the environment over the file: each
    # command upgrades one database, so each file exists only if its command chose it
    with_url, with_env = starburst_each(
        home,
        [
            ["db", "upgrade", "--config", str(settings_file), "--url", other],
            ["db", "upgrade", "--config", str(settings_file)],
        ],
        STARBURST_DATABASE_URL=env_url,
    )
    assert with_url.returncode == 0, with_url.stderr
    assert with_env.returncode == 0, with_env.stderr
    assert (tmp_path / "other.db").exists()
    assert (tmp_path / "env.db").exists()


def test_a_bad_settings_file_is_one_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "settings.yaml"
    bad.write_text("database_url: not-a-url\n")
    done = starburst(tmp_path, "admin", "users", "show", "alice", "--config", str(bad))
    assert done.returncode == 2
    assert "database_url" in done.stderr and "Traceback" not in done.stderr


def test_bootstrap_registers_the_token_once(tmp_path: Path, postgres_database: str) -> None:
    token = "sb_" + "b" * 40
    upgrade(postgres_database)  # `db upgrade --url` is tested above
    first, again = starburst_each(
        tmp_path,
        [["admin", "bootstrap", "--url", postgres_database]] * 2,
        STARBURST_BOOTSTRAP_TOKEN=token,
    )
    assert first.returncode == 0 and again.returncode == 0, first.stderr + again.stderr
    assert "already registered" in again.stdout
    assert token not in first.stdout + first.stderr + again.stdout + again.stderr
    store = SqlStore.open(postgres_database)
    try:
        holder = store.accounts.authenticate(token)
    finally:
        store.close()
    assert holder is not None and (holder.user, holder.role.value) == ("admin", "admin")


def test_bootstrap_without_a_token_or_with_a_weak_one_fails(
    tmp_path: Path, postgres_database: str
) -> None:
    upgrade(postgres_database)
    missing = starburst(tmp_path, "admin", "bootstrap", "--url", postgres_database)
    assert missing.returncode == 1 and "STARBURST_BOOTSTRAP_TOKEN" in missing.stderr
    weak = starburst(
        tmp_path,
        "admin",
        "bootstrap",
        "--url",
        postgres_database,
        STARBURST_BOOTSTRAP_TOKEN="hunter2",
    )
    assert weak.returncode == 2 and "32+" in weak.stderr and "Traceback" not in weak.stderr
