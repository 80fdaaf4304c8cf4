"""Modules cite the documentation in the repository, and what they cite exists.

The contract the code implements is written in ``docs/`` (scheduling semantics, concepts,
architecture); a docstring that points a reader elsewhere — to a file outside the repository —
sends them nowhere, and one that names a ``docs/`` page that was renamed does too.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCES = [*sorted((ROOT / "starburst").rglob("*.py")), *sorted((ROOT / "bench").rglob("*.py"))]


def test_no_module_cites_a_design_document_outside_the_repository() -> None:
    citing = [str(p.relative_to(ROOT)) for p in SOURCES if "DESIGN.md" in p.read_text()]
    assert citing == [], f"cite docs/ instead: {citing}"


def test_every_cited_docs_page_exists() -> None:
    cited = {
        (str(path.relative_to(ROOT)), page)
        for path in SOURCES
        for page in re.findall(r"\bdocs/[\w/.-]+\.md\b", path.read_text())
    }
    assert cited, "the core cites its contract in docs/"
    missing = sorted((source, page) for source, page in cited if not (ROOT / page).is_file())
    assert missing == []
