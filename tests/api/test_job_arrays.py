"""``starburst submit --array``: one job per index, the index in the environment, element
names ``<name>-<index>``, per-element idempotency keys; a throttle (``%N``: see
``test_job_dependencies.py``). Through the real CLI against a served app."""

from __future__ import annotations

import json

import pytest

from starburst.cli.arrays import indices, parse
from starburst.core.lifecycle import JobState
from tests.api.test_cli import run


def env_of(api):  # type: ignore[no-untyped-def]
    return {"STARBURST_SERVER": api.url, "STARBURST_TOKEN": api.tokens["alice"]}


def test_an_array_submits_one_job_per_index_with_the_index_in_env(api) -> None:  # type: ignore[no-untyped-def]
    made = run(
        [
            "submit",
            "--image",
            "i",
            "--name",
            "sweep",
            "--array",
            "0-2,5",
            "--idempotency-key",
            "k1",
            "--env",
            "LR=1",
            "--",
            "python",
            "t.py",
        ],
        env_of(api),
    )
    assert made.exit_code == 0, made.stderr
    lines = made.stdout.splitlines()
    assert lines[-1] == "submitted 4 jobs: sweep-0 … sweep-5; array id k1"  # the key names it
    ids = [line.split()[0] for line in lines[:-1]]
    jobs = [api.store.jobs.get(i) for i in ids]
    assert [j.job.name for j in jobs] == ["sweep-0", "sweep-1", "sweep-2", "sweep-5"]
    assert [json.loads(j.job.extra["env"]) for j in jobs][3] == {
        "LR": "1",
        "STARBURST_ARRAY_INDEX": "5",
    }
    again = run(
        [
            "submit",
            "--image",
            "i",
            "--name",
            "sweep",
            "--array",
            "0-2,5",
            "--idempotency-key",
            "k1",
            "--env",
            "LR=1",
            "--",
            "python",
            "t.py",
        ],
        env_of(api),
    )
    assert [line.split()[0] for line in again.stdout.splitlines()[:-1]] == ids  # no new jobs
    listed = run(["jobs", "--name", "sweep-*", "-o", "json"], env_of(api))
    assert len(json.loads(listed.stdout)) == 4


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("0-99%0", "between 1 and 10000"),
        ("5-1", "runs backwards"),
        ("a-b", "is not an index or a range"),
        ("0-20000", "more than 10000 elements"),
    ],
)
def test_a_bad_array_spec_is_one_clear_line(api, spec: str, message: str) -> None:  # type: ignore[no-untyped-def]
    bad = run(["submit", "--image", "i", "--array", spec, "--", "true"], env_of(api))
    assert bad.exit_code == 2 and message in bad.stderr, bad.stderr
    assert api.store.jobs.queue(limit=5, states=list(JobState)).jobs == []


def test_indices() -> None:
    assert indices("3") == [3]
    assert indices("0-3, 2-4") == [0, 1, 2, 3, 4]
    assert parse("0-3, 2-4 % 2") == ([0, 1, 2, 3, 4], 2)
    assert parse("7") == ([7], None)
    with pytest.raises(Exception, match="not an index"):
        indices("0-1%1")  # a limit only where parse reads it
