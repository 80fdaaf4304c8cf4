"""``outlook``: where a waiting job goes next and when, for every hold (``core.outlook``)."""

from __future__ import annotations

import math

from starburst.core.job import CLOUD_BLOCKER
from starburst.core.kueue_jobs import WORKLOAD
from starburst.core.lifecycle import JobState
from starburst.core.outlook import Holds, outlook
from starburst.core.records import StoredJob
from tests.builders import make_job

SHORT = "needs 16 GPUs and the private cluster has 4 GPUs in all"


def stored(budget: float | None, *, team: str | None = None, **kw: object) -> StoredJob:
    job = make_job("j1", team=team, extra=kw.pop("extra", {}))
    return StoredJob(job, JobState.QUEUED, 1, queued_at=1000.0, wait_budget=budget, **kw)  # type: ignore[arg-type]


def never_asked() -> str | None:
    raise AssertionError("the ceiling is asked only of a job that would burst now")


def test_a_held_job_has_no_wait_yet_and_no_time_it_bursts() -> None:
    seen = outlook(stored(60.0, held="after j0 succeeds"), 1100.0, Holds(ceiling=never_asked))
    assert seen.plan == "held: after j0 succeeds"
    assert seen.summary == f"{seen.plan}; its wait budget starts when it enters the queue"
    assert seen.bursts_at is None and seen.waited is None


def test_not_yet_admitted() -> None:
    seen = outlook(stored(None), 1030.0, Holds(ceiling=never_asked))
    assert seen.plan.startswith("admitted on the next pass") and seen.waited == 30.0


def test_an_infinite_budget_names_why_it_never_bursts() -> None:
    seen = outlook(stored(math.inf), 1030.0, Holds(ceiling=never_asked))
    assert seen.plan == "on-prem when GPUs free; never bursts (cluster-only policy)"
    blocked = stored(math.inf, extra={CLOUD_BLOCKER: "needs a local volume"})
    assert outlook(blocked, 1030.0, Holds()).plan.endswith("never bursts (needs a local volume)")
    failing = outlook(blocked, 1030.0, Holds(shortfall=SHORT))
    assert failing.plan.startswith("fails on the next pass") and failing.bursts_at is None


def test_within_its_budget_it_says_when_it_bursts() -> None:
    seen = outlook(stored(300.0, team="vision"), 1100.0, Holds(ceiling=never_asked))
    assert seen.plan == "on-prem when GPUs free, else the cloud in 3m20s"
    assert seen.summary == f"waiting 1m40s of a 5m budget; {seen.plan}"
    assert (seen.bursts_at, seen.budget_left) == (1300.0, 200.0)


def test_a_spent_wait_budget_bursts_on_the_next_pass() -> None:
    seen = outlook(stored(60.0, team="vision"), 1100.0, Holds())
    assert seen.plan == "the cloud on the next pass (its wait budget is spent)"
    assert (seen.bursts_at, seen.budget_left) == (1100.0, 0.0)


def test_a_team_or_ceiling_hold_keeps_it_on_prem_with_no_time() -> None:
    for holds in (
        Holds(team="team over"),
        Holds(ceiling=lambda: "team over"),
        Holds(cloud="team over"),
    ):
        seen = outlook(stored(60.0, team="vision"), 1100.0, holds)
        assert seen.plan == "on-prem when GPUs free; held from the cloud (team over)"
        assert seen.bursts_at is None
    within = outlook(stored(600.0, team="vision"), 1100.0, Holds(team="team over"))
    assert within.plan == "on-prem when GPUs free; held from the cloud (team over)"


def test_a_job_that_never_fits_is_never_shown_waiting_for_gpus() -> None:
    alone = outlook(stored(3000.0, team="ml"), 1100.0, Holds(shortfall=SHORT))
    assert alone.plan == f"the cloud on the next pass: it never fits on-prem ({SHORT})"
    assert alone.bursts_at == 1100.0
    held = outlook(stored(3000.0, team="ml"), 1100.0, Holds(team="team ml over", shortfall=SHORT))
    assert (
        held.plan == f"the cloud once a hold lifts (team ml over); it never fits on-prem ({SHORT})"
    )
    assert held.bursts_at is None and "GPUs free" not in held.plan


def test_a_kueue_job_starts_on_prem_when_kueue_admits_it() -> None:
    # Kueue's quota decides on-prem starts for these jobs: "when GPUs free" would be wrong
    kueues = stored(300.0, team="vision", extra={WORKLOAD: "team-a/job-x"})
    seen = outlook(kueues, 1100.0, Holds(ceiling=never_asked))
    assert seen.plan == "on-prem when Kueue admits it, else the cloud in 3m20s"
    held = outlook(kueues, 1100.0, Holds(team="team vision spent its cloud budget"))
    assert (
        held.plan
        == "on-prem when Kueue admits it; held from the cloud (team vision spent its cloud budget)"
    )
