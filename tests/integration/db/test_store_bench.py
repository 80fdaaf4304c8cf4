"""``bench/store_bench.py`` runs: a small run against a real PostgreSQL completes every section.

The bench had stopped running at all (it passed ``submit_many`` pairs after the items became
``(spec, key, actor)``) and nothing noticed; its figures are only as good as its running.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.postgres
def test_a_small_store_bench_completes_every_section(postgres_database: str) -> None:
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "store_bench.py"),
            "--url",
            postgres_database,
            "--jobs",
            "300",
            "--batch",
            "100",
            "--queued",
            "100",
            "--page",
            "50",
            "--costs",
            "300",
            "--only",
            "job",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout
    assert "submit            300 jobs+events" in lines
    assert "admission          20 passes of 500 new jobs" in lines
    assert "identical" in lines and "DIFFERENT" not in lines  # rollups agree with entries
