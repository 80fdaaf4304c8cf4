"""``starburst doctor`` on a fresh install, as a new user runs it: no settings at all, a home
directory of their own (the process's environment has no ``STARBURST_*`` variable).

Green once the schema exists (the shipped price table's age and a controller never started
are warnings with their fix, not problems); the defaults' cluster and cloud are named; a
missing schema or a mistyped SQLite URL is one line with the fix, and nothing is created.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from starburst.settings import load_settings


def run(home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("STARBURST_")}
    return subprocess.run(
        [sys.executable, "-m", "starburst.cli", *args],
        env={**clean, "HOME": str(home), **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def by_name(out: str) -> dict[str, str]:
    return {
        line[8:].split(":", 1)[0]: line
        for line in out.splitlines()
        if line.startswith(("OK", "WARNING", "PROBLEM"))
    }


def test_fresh_install_is_one_clear_line_then_green(tmp_path: Path) -> None:
    defaults = load_settings()
    first = run(tmp_path, "doctor")
    found = by_name(first.stdout)
    assert first.returncode == 1, first.stdout
    problems = [line for line in found.values() if line.startswith("PROBLEM")]
    assert problems == [found["database"]] and "no such SQLite file" in problems[0]
    assert "fix: run starburst db upgrade" in first.stdout
    assert "leader" not in found and "sqlite3" not in first.stdout + first.stderr
    assert not (tmp_path / ".local").exists()  # checking created nothing

    assert run(tmp_path, "db", "upgrade").returncode == 0
    done = run(tmp_path, "doctor")
    found = by_name(done.stdout)
    assert done.returncode == 0, done.stdout
    assert found["cluster"].startswith("OK")
    assert f"local, {defaults.local_gpus} GPU slots" in found["cluster"]
    assert found["cloud"].startswith("OK") and "emulated" in found["cloud"]
    assert found["prices"].startswith("WARNING") and "the shipped defaults" in found["prices"]
    assert "python -m starburst.pricing show > prices.yaml" in done.stdout
    assert found["leader"].startswith("WARNING")
    assert "0 problem(s)" in done.stdout


def test_configured_cluster_and_cloud_are_named(tmp_path: Path) -> None:
    out = run(
        tmp_path,
        "doctor",
        STARBURST_LOCAL_GPUS="7",
        STARBURST_CLOUD="none",
        STARBURST_DATABASE_URL=f"sqlite:///{tmp_path}/sb.db",
    ).stdout
    found = by_name(out)
    assert "local, 7 GPU slots" in found["cluster"]
    assert found["cloud"].startswith("OK") and "never burst" in found["cloud"]


def test_a_mistyped_sqlite_url_creates_nothing(tmp_path: Path) -> None:
    typo = tmp_path / "nodir" / "starbrust.db"
    done = run(tmp_path, "doctor", STARBURST_DATABASE_URL=f"sqlite:///{typo}")
    found = by_name(done.stdout)
    assert done.returncode == 1 and found["database"].startswith("PROBLEM")
    assert "database schema" not in found and "Traceback" not in done.stderr
    assert not typo.parent.exists()
