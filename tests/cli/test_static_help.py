"""``starburst --help`` is printed from a static copy of the commands' help: it must list every
command and group, say what their own help says, and import neither typer nor any command."""

from __future__ import annotations

import subprocess
import sys
from importlib import metadata

import pytest

from starburst.cli.main import COMMANDS, GROUPS, HELP, SUMMARIES, _load, build_app, static_help


def _first_paragraph(text: str | None) -> str:
    return " ".join((text or "").strip().split("\n\n")[0].split())


def test_every_command_and_group_has_a_summary_and_only_those() -> None:
    assert set(SUMMARIES) == set(COMMANDS) | set(GROUPS)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_a_command_summary_is_the_start_of_its_own_help(name: str) -> None:
    assert _first_paragraph(_load(COMMANDS[name]).__doc__).startswith(SUMMARIES[name])  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", sorted(GROUPS))
def test_a_group_summary_is_the_start_of_its_own_help(name: str) -> None:
    assert _first_paragraph(_load(GROUPS[name]).info.help).startswith(SUMMARIES[name])  # type: ignore[attr-defined]


def test_the_static_help_is_the_apps_help() -> None:
    assert build_app().info.help == HELP
    text = static_help()
    for name, summary in SUMMARIES.items():
        assert f"  {name} " in text and summary in text


@pytest.mark.parametrize(("args", "code"), [(["--help"], 0), ([], 2)])
def test_help_imports_no_typer_and_no_command(args: list[str], code: int) -> None:
    probe = (
        "import sys; from starburst.cli.main import main\n"
        "try:\n    main(sys.argv[1:])\nexcept SystemExit as e:\n    rc = e.code\n"
        "loaded = sorted(m for m in sys.modules if m == 'typer' or m.startswith('starburst.cli.')"
        " and m != 'starburst.cli.main')\n"
        "print('LOADED', loaded, rc, file=sys.stderr)"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, *args], capture_output=True, text=True, check=True
    )
    assert f"LOADED [] {code}" in done.stderr
    assert done.stdout == static_help()


def test_version_prints_the_packages_version_without_typer() -> None:
    """``starburst --version`` (the image's smoke test runs it) says the installed version."""
    probe = (
        "import sys; from starburst.cli.main import main\n"
        "main(['--version'])\n"
        "print('LOADED', 'typer' in sys.modules, file=sys.stderr)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout == f"starburst {metadata.version('starburst')}\n"
    assert "LOADED False" in done.stderr
