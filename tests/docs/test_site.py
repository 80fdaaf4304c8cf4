"""The documentation site builds with ``mkdocs build --strict``, offline.

Strict turns every warning into a failure: a link to a page or anchor that does not exist, a
page left out of the nav, a reference page the hook (``docs/gen/reference.py``) cannot
generate. The site is built into a temporary directory, never into the checkout.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MKDOCS = Path(sys.executable).parent / "mkdocs"


def build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run(
        [str(MKDOCS), "build", "--strict", "--config-file", str(config), "--site-dir", str(site)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.mark.slow
def test_the_site_builds_strictly(tmp_path: Path) -> None:
    done = build(ROOT / "mkdocs.yml", tmp_path / "site")
    assert done.returncode == 0, done.stdout + done.stderr
    site = tmp_path / "site"
    assert (site / "index.html").is_file()
    for page in ("architecture", "reference/cli", "reference/api", "reference/settings"):
        assert (site / page / "index.html").is_file(), page


def test_a_broken_link_fails_the_strict_build(tmp_path: Path) -> None:
    """Strict really is strict: a minimal site with one dead link does not build."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("# Home\n\nSee [the missing page](missing.md).\n")
    config = tmp_path / "mkdocs.yml"
    config.write_text("site_name: t\ndocs_dir: docs\ntheme: {name: material, font: false}\n")
    done = build(config, tmp_path / "site")
    assert done.returncode != 0
    assert "missing.md" in done.stdout + done.stderr


def test_every_page_in_docs_is_in_the_nav() -> None:
    """A page written but not in ``mkdocs.yml``'s nav is one no reader finds."""
    import yaml

    def pages(nav: object) -> set[str]:
        if isinstance(nav, str):
            return {nav}
        if isinstance(nav, list):
            return set().union(*(pages(item) for item in nav))
        if isinstance(nav, dict):
            return set().union(*(pages(value) for value in nav.values()))
        return set()

    config = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=yaml.BaseLoader)
    written = {str(p.relative_to(ROOT / "docs")) for p in (ROOT / "docs").rglob("*.md")}
    assert written <= pages(config["nav"])
