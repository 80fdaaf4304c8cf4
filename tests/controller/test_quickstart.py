"""The README's first command: ``starburst quickstart`` runs Starburst end to end and exits.

It runs at ``--speed 6``: the same sample jobs and decisions, every duration a sixth as long
(the story's assertions depend on proportions, not on seconds), so the test takes ~9 s, not ~50.
At 6 the story is still the one at 3 (6 jobs on-prem, 3 of them out of order, 10 burst, ~58%
saved); at 8 it starts to change (7 on-prem), so 6 is as fast as it goes.
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest


@pytest.mark.slow
def test_quickstart_shows_waiting_out_of_order_bursting_and_the_savings() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "starburst.cli", "quickstart", "--speed", "6"],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    out = done.stdout
    assert done.returncode == 0, done.stderr[-2000:]
    assert "queued with a" in out and "wait budget" in out
    assert "out of order: fits on local" in out
    assert "burst to emulated" in out
    assert "succeeded" in out
    assert "saved $" in out and "against bursting everything" in out
    saved = re.search(r"saved \$(-?[\d.]+) \((-?\d+)%\)", out)
    assert saved is not None and float(saved[1]) > 0 and int(saved[2]) > 0, out[-600:]
    assert "not counted" not in out  # every job priced, on the default settings
    assert "timed out" not in out
    assert "Traceback" not in done.stderr
    # the timeline tells each job's story in order: queued first, finished last
    stories: dict[str, list[str]] = {}
    for line in out.splitlines():
        match = re.match(r"\s*\d+\.\ds\s+(\S+)\s+(\S+)", line)
        if match:
            stories.setdefault(match[1], []).append(match[2])
    assert len(stories) >= 10
    for name, states in stories.items():
        assert states[0] == "queued" and states[-1] == "succeeded", (name, states)
