"""The project's own promises about its code: lint, types, import contracts, light imports."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
#: mypy's incremental cache, kept outside the checkout: a fresh clone's check reuses what the
#: last one learnt of the unchanged modules (mypy compares each file's hash, not its path or
#: mtime) — ~3 s instead of ~26 s of CPU for a cold ``.mypy_cache``
MYPY_CACHE = Path.home() / ".cache" / "starburst" / "mypy"


def run(*cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)


def test_ruff_is_clean() -> None:
    done = run(str(BIN / "ruff"), "check", ".")
    assert done.returncode == 0, done.stdout + done.stderr


def test_ruff_format_is_clean() -> None:
    done = run(str(BIN / "ruff"), "format", "--check", ".")
    assert done.returncode == 0, done.stdout + done.stderr


def test_import_contracts_hold() -> None:
    done = run(str(BIN / "lint-imports"))
    assert done.returncode == 0, done.stdout + done.stderr


def test_mypy_is_clean_and_strict_on_core_and_sim() -> None:
    # no paths: the ``files`` of pyproject's [tool.mypy], the package and the API stand-in
    done = run(str(BIN / "mypy"), "--cache-dir", str(MYPY_CACHE))
    assert done.returncode == 0, done.stdout + done.stderr


HEAVY = (
    "sqlalchemy",
    "sklearn",
    "sky",
    "kubernetes",
    "scipy",
    "matplotlib",
    "fastapi",
    "numpy",
    "apscheduler",
)


def test_the_simulator_command_path_imports_no_heavy_sdk() -> None:
    code = (
        "import sys; import starburst.cli.main as m; m.build_app(['simulate']);"
        "import starburst.sim.engine, starburst.sim.trace, starburst.sim.loading;"
        f"print(sorted(k for k in {HEAVY!r} if k in sys.modules))"
    )
    done = run(sys.executable, "-c", code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_ci_runs_exactly_the_readmes_test_command() -> None:
    """``.ci/run`` promises to run the README's test command: the same line, parallel included."""
    readme = (ROOT / "README.md").read_text()
    command = next(
        line for line in (ROOT / ".ci" / "run").read_text().splitlines() if "pytest" in line
    )
    assert f"```bash\n{command}\n```" in readme
    assert "pytest -n auto" in command


def test_the_lockfile_matches_pyproject() -> None:
    """``uv.lock`` pins what the image installs (``tests/support/image.py``): it must resolve
    exactly what ``pyproject.toml`` asks for (``uv lock`` after changing a dependency)."""
    uv = shutil.which("uv")
    if uv is None:
        if os.environ.get("CI"):
            pytest.fail("no uv on PATH: the README's install step puts it there")
        pytest.skip("no uv on PATH")
    done = run(uv, "lock", "--check", "--offline")
    assert done.returncode == 0, done.stdout + done.stderr
