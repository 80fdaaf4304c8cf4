"""Per-job and per-team ceilings on cloud $/h: a submission above one is refused (422) with
the price, through the real CLI against a served app (SQLite and PostgreSQL)."""

from __future__ import annotations

from decimal import Decimal

import pytest
from typer.testing import CliRunner

from starburst.cli.main import build_app
from starburst.core.lifecycle import JobState
from starburst.core.records import CloudLaunch, JobSpec
from tests.support.databases import BOTH

CEILINGS = {"settings": {"max_job_cloud_price": 10.0, "max_team_cloud_price": 12.0}}


def run(args: list[str], env: dict[str, str]):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(build_app(args), args, env=env, catch_exceptions=False)


@BOTH
@pytest.mark.parametrize("api_options", [CEILINGS], indirect=True)
def test_submissions_over_a_ceiling_are_refused_with_the_price(api) -> None:  # type: ignore[no-untyped-def]
    env = {"STARBURST_SERVER": api.url, "STARBURST_TOKEN": api.tokens["alice"]}
    submit = ["submit", "--image", "i", "--gpu-type", "A100"]
    big = run([*submit, "--gpus", "4", "--", "true"], env)  # 4 × $3.00 (gcp) = $12/h
    assert big.exit_code == 1 and big.stdout == ""
    assert big.stderr == (
        "error: this job would cost $12.00/h in the cloud (A100:4 at emulated gcp), "
        "above the per-job ceiling of $10.00/h (max_job_cloud_price); an admin allows it "
        "with team_job_cloud_price: {ml: 12.00} (HTTP 422)\n"
    )
    assert api.store.jobs.queue(limit=5, states=tuple(JobState)).jobs == []

    ok = run([*submit, "--gpus", "2", "--", "true"], env)  # $6/h
    assert ok.exit_code == 0, ok.stderr

    # team ml already runs $8/h in the cloud: a $6/h job would take it to $14 > $12
    running = api.store.submissions.submit(JobSpec(gpus=2, user="alice", team="ml")).job.id
    for state in (JobState.QUEUED, JobState.BURSTING, JobState.RUNNING_CLOUD):
        api.store.lifecycle.transition(running, state, reason="t", actor="controller")
    api.store.ledger.record_launch(CloudLaunch(running, "l1", "aws", "A100:2", Decimal("8.00")))
    team = run([*submit, "--gpus", "2", "--", "true"], env)
    assert team.exit_code == 1
    assert team.stderr == (
        "error: team ml runs $8.00/h in the cloud now; this job ($6.00/h, A100:2 at emulated gcp) "
        "would take it above its ceiling of $12.00/h (HTTP 422)\n"
    )
    bobs = run(
        [*submit, "--gpus", "2", "--", "true"], {**env, "STARBURST_TOKEN": api.tokens["bob"]}
    )  # team vision: nothing running
    assert bobs.exit_code == 0, bobs.stderr
    onprem_only = run(["submit", "--image", "i", "--gpus", "0", "--", "true"], env)
    assert onprem_only.exit_code == 0  # no GPUs: nothing to price


def test_the_price_check_takes_a_thread_only_when_it_may_wait() -> None:
    """Once the cloud is built, a quote only computes: the check runs on the event loop
    (a thread hand-off cost more than the check). The first quote (it builds the cloud)
    and the team ceiling (it reads the store) still go to a worker thread."""
    from starburst.api import submit_ceilings
    from starburst.api.context import ApiContext
    from starburst.api.finance import BurstQuote
    from starburst.settings import Settings
    from starburst.wallclock import WallClock

    settings = Settings(cloud="emulated")
    quote = BurstQuote(settings, WallClock())
    ctx = ApiContext(settings=settings, store=None, clock=WallClock(), quote=quote)  # type: ignore[arg-type]
    spec = JobSpec(gpus=1, user="alice", team="ml")
    assert submit_ceilings.waits(ctx, spec)  # the cloud is not built yet
    assert quote() is not None and quote.built
    assert not submit_ceilings.waits(ctx, spec)
    capped = ApiContext(
        settings=Settings(cloud="emulated", max_team_cloud_price=12.0),
        store=None,  # type: ignore[arg-type]
        clock=WallClock(),
        quote=quote,
    )
    assert submit_ceilings.waits(capped, spec)  # the team's running rate is read
    assert not submit_ceilings.waits(capped, JobSpec(gpus=1, user="alice"))  # no team
    other = ApiContext(settings=settings, store=None, clock=WallClock(), quote=lambda: None)  # type: ignore[arg-type]
    assert submit_ceilings.waits(other, spec)  # a quote of unknown cost
