"""``waiting_summary``: the sentence a waiting job's ``explain`` and ``status`` show."""

from __future__ import annotations

import math

import pytest

from starburst.core.explain import waiting_summary
from starburst.core.job import CLOUD_BLOCKER
from starburst.core.lifecycle import JobState
from starburst.core.records import StoredJob
from tests.builders import make_job


def stored(budget: float | None, *, team: str | None = None, **kw: object) -> StoredJob:
    job = make_job("j1", team=team, extra=kw.pop("extra", {}))
    return StoredJob(job, JobState.QUEUED, 1, queued_at=1000.0, wait_budget=budget, **kw)  # type: ignore[arg-type]


def never_asked() -> str | None:
    raise AssertionError("a hold is asked for only past the budget of a team's job")


def test_a_held_job_has_no_wait_yet() -> None:
    text, waited = waiting_summary(stored(60.0, held="after j0 succeeds"), 1100.0, never_asked)
    assert text == "held: after j0 succeeds; its wait budget starts when it enters the queue"
    assert waited is None


def test_not_yet_admitted() -> None:
    text, waited = waiting_summary(stored(None), 1030.0, never_asked)
    assert text.endswith("no wait budget yet (not yet admitted)") and waited == 30.0


def test_an_infinite_budget_names_why_it_never_bursts() -> None:
    text, _ = waiting_summary(stored(math.inf), 1030.0, never_asked)
    assert text.endswith("never bursts (cluster-only policy)")
    blocked = stored(math.inf, extra={CLOUD_BLOCKER: "needs a local volume"})
    text, _ = waiting_summary(blocked, 1030.0, never_asked)
    assert text.endswith("never bursts (needs a local volume)")


def test_within_its_budget_it_says_when_it_bursts() -> None:
    text, waited = waiting_summary(stored(300.0, team="vision"), 1100.0, never_asked)
    assert "of a " in text and "; bursts to the cloud in " in text
    assert text.endswith("unless GPUs free up on-prem") and waited == 100.0


@pytest.mark.parametrize(("hold", "expected"), [(None, "budget spent"), ("team over", "past")])
def test_past_its_budget_a_team_hold_keeps_it(hold: str | None, expected: str) -> None:
    text, _ = waiting_summary(stored(60.0, team="vision"), 1100.0, lambda: hold)
    assert expected in text
    if hold:
        assert text.endswith("past its budget: team over")
    else:
        assert "bursts on the next pass" in text


def test_past_its_budget_without_a_team_no_hold_is_asked() -> None:
    text, _ = waiting_summary(stored(60.0), 1100.0, never_asked)
    assert "budget spent: bursts on the next pass" in text
