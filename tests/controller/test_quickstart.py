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
from types import SimpleNamespace
from typing import Any

import pytest

from starburst.controller.quickstart import SAMPLE, _narrate


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


class _Racing:
    """Jobs whose controller finishes each one at the moment the narrator reads its state
    (the commit landing between the narrator's two reads of a loaded machine)."""

    def __init__(self) -> None:
        from starburst.core.lifecycle import JobState

        self.states = {f"id-{n}": JobState.RUNNING_ONPREM for n, _, _ in SAMPLE}
        self.events_of = {job_id: [_event(job_id, JobState.QUEUED)] for job_id in self.states}

    def find_by_key(self, key: str) -> Any:
        return SimpleNamespace(id=f"id-{key.removeprefix('quickstart-')}")

    def get(self, job_id: str) -> Any:
        from starburst.core.lifecycle import JobState

        if self.states[job_id] is not JobState.SUCCEEDED:
            self.states[job_id] = JobState.SUCCEEDED
            self.events_of[job_id].append(_event(job_id, JobState.SUCCEEDED))
        name = job_id.removeprefix("id-")
        return SimpleNamespace(job=SimpleNamespace(name=name), state=self.states[job_id])

    def events(self, job_id: str) -> list[Any]:
        return list(self.events_of[job_id])


def _event(job_id: str, state: Any) -> Any:
    return SimpleNamespace(job_id=job_id, at=1.0, to_state=state, reason="r")


def test_the_story_ends_with_every_jobs_last_state() -> None:
    """The narrator stops once every job is finished: each job's finishing line must have
    been told by then, however its last commit fell between the narrator's reads."""
    told: list[str] = []
    _narrate(_Racing(), started=0.0, echo=told.append, timeout_s=5.0)  # type: ignore[arg-type]
    finished = {line.split()[1] for line in told if "succeeded" in line}
    assert finished == {name for name, _, _ in SAMPLE}, told
