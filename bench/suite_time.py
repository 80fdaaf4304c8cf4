"""The fast test tier's time on a new clone's first run, side by side with an older tree.

Each tree is cloned from this repository into a new directory (a path never used, so no
bytecode of it is cached), gets a new venv (`uv`), and runs its fast tier once, one after the
other on the same machine: the baseline with its own command (serial `pytest`, the
real-component directories ignored), this tree with the README's (`-n auto -m "not real"`).
The figures are pytest's own summary lines; the ratio is this tree's time over the baseline's.
Machines here differ by up to 2x from day to day: only figures of one run compare.

Run: .venv/bin/python bench/suite_time.py [--baseline b141ce3] [--rev HEAD]   (~15 min)
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BASELINE_TESTS = [
    "--ignore=tests/realkube",
    "--ignore=tests/skypilot_real",
    "--ignore=tests/helm",
]
SUMMARY = re.compile(r"^=*\s*(\d+ passed.*?) in ([0-9.]+)s", re.MULTILINE)


def clone(rev: str, root: Path) -> Path:
    where = root / rev
    subprocess.run(["git", "clone", "-q", str(REPO), str(where)], check=True)
    subprocess.run(["git", "-C", str(where), "checkout", "-q", rev], check=True)
    subprocess.run(["uv", "venv", "-q", ".venv"], cwd=where, check=True)
    subprocess.run(
        ["uv", "pip", "install", "-q", "-p", ".venv", "-e", ".[test]"], cwd=where, check=True
    )
    return where


def fast_tier(where: Path, args: list[str]) -> tuple[str, float]:
    env = {**os.environ, "CI": "true"}
    command = [".venv/bin/python", "-m", "pytest", "-q", "-p", "no:cacheprovider", *args]
    done = subprocess.run(command, cwd=where, env=env, capture_output=True, text=True)
    found = SUMMARY.findall(done.stdout)
    if done.returncode != 0 or not found:
        sys.exit(f"{where.name}: pytest failed ({done.returncode})\n{done.stdout[-3000:]}")
    counts, seconds = found[-1]
    return counts, float(seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default="b141ce3", help="the older tree (default b141ce3)")
    parser.add_argument("--rev", default="HEAD", help="this tree (default HEAD)")
    args = parser.parse_args()
    rev = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", args.rev],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    with tempfile.TemporaryDirectory(prefix="suite-time-", dir=REPO.parent) as tmp:
        root = Path(tmp)
        root.chmod(0o755)  # tests run servers as other users (nobody, postgres): they must reach it
        before = fast_tier(clone(args.baseline, root), BASELINE_TESTS)
        after = fast_tier(clone(rev, root), ["-n", "auto", "-m", "not real"])
    print("fast tier, first run of a new clone and venv (pytest's summary):")
    print(f"  {args.baseline:<10} {before[1]:8.1f} s   {before[0]}")
    print(f"  {rev:<10} {after[1]:8.1f} s   {after[0]}")
    print(f"  ratio {rev} / {args.baseline}: {after[1] / before[1]:.2f}")


if __name__ == "__main__":
    main()
