"""Ids people can type, through the real CLI against a served app: unique id prefixes and
job names wherever an id is taken, 409 listing the candidates when ambiguous, other users'
jobs never found by prefix; ``cancel`` with several ids or a filter, a count and a question."""

from __future__ import annotations

from typer.testing import CliRunner

from starburst.cli.main import build_app
from starburst.core.lifecycle import JobState
from starburst.core.records import JobSpec
from tests.support.databases import BOTH


def run(args: list[str], env: dict[str, str], stdin: str | None = None):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(build_app(args), args, env=env, input=stdin, catch_exceptions=False)


def env_of(api, who: str = "alice") -> dict[str, str]:  # type: ignore[no-untyped-def]
    return {"STARBURST_SERVER": api.url, "STARBURST_TOKEN": api.tokens[who]}


def _job(
    api,
    user: str = "alice",
    name: str | None = None,
    *,  # type: ignore[no-untyped-def]
    queued: bool = False,
) -> str:
    job_id: str = api.store.submissions.submit(JobSpec(gpus=1, user=user, name=name)).job.id
    if queued:
        api.store.lifecycle.transition(
            job_id, JobState.QUEUED, reason="admitted", actor="controller", wait_budget=600
        )
    api.clock.advance(1)
    return job_id


@BOTH
def test_prefixes_and_names_resolve_everywhere_an_id_is_taken(api) -> None:  # type: ignore[no-untyped-def]
    train = _job(api, name="train", queued=True)
    env = env_of(api)
    for args in (
        ["status", train[:8]],
        ["status", "train"],
        ["explain", train[:6]],
        ["explain", "train"],
    ):
        shown = run(args, env)
        assert shown.exit_code == 0, (args, shown.stderr)
        assert train in shown.stdout
    assert api.client("alice").get(f"/v1/jobs/{train[:5]}").json()["id"] == train
    cancelled = run(["cancel", "train"], env)
    assert cancelled.stdout.split() == [train, "cancelled"]


@BOTH
def test_an_ambiguous_prefix_or_name_is_409_listing_the_candidates(api) -> None:  # type: ignore[no-untyped-def]
    first, second = _job(api, name="sweep"), _job(api, name="sweep")
    both = run(["status", "sweep"], env_of(api))
    assert both.exit_code == 1 and both.stdout == ""
    assert "'sweep' matches several jobs" in both.stderr and "(HTTP 409)" in both.stderr
    assert f"{first} (sweep, submitted)" in both.stderr and second in both.stderr
    answer = api.client("alice").get("/v1/jobs/sweep/explain")
    assert answer.status_code == 409 and first in answer.json()["detail"]
    assert api.store.jobs.get(first).state is JobState.SUBMITTED  # cancel refused too:
    assert run(["cancel", "sweep"], env_of(api)).exit_code == 1
    assert api.store.jobs.get(first).state is JobState.SUBMITTED


def test_other_users_jobs_are_not_found_by_prefix_or_name(api) -> None:  # type: ignore[no-untyped-def]
    bobs = _job(api, "bob", name="secret")
    for path in (f"/v1/jobs/{bobs[:8]}", "/v1/jobs/secret", f"/v1/jobs/{bobs}"):
        assert api.client("alice").get(path).status_code == 404, path
    missing = run(["cancel", bobs[:8]], env_of(api))
    assert missing.exit_code == 1 and "no job" in missing.stderr
    assert api.store.jobs.get(bobs).state is JobState.SUBMITTED
    # admins resolve anyone's prefix, names only of their own jobs
    assert api.client("root").get(f"/v1/jobs/{bobs[:8]}").json()["id"] == bobs
    assert api.client("root").get("/v1/jobs/secret").status_code == 404
    # a prefix is literal: LIKE wildcards match nothing
    assert api.client("alice").get("/v1/jobs/%25").status_code == 404
    assert api.client("root").get("/v1/jobs/_").status_code == 404


def test_a_name_wins_over_the_same_text_as_another_jobs_id_prefix(api) -> None:  # type: ignore[no-untyped-def]
    """Docker's rule: a job named ``bc`` is found by ``bc`` even when another job's id
    starts with ``bc`` (ids are random: the CLI's multi-cancel test met it one run in 16)."""
    other = _job(api)
    named = _job(api, name=other[:2])
    got = api.client("alice").get(f"/v1/jobs/{other[:2]}")
    assert got.status_code == 200 and got.json()["id"] == named
    assert api.client("alice").get(f"/v1/jobs/{other[:8]}").json()["id"] == other
    twins = _job(api, name="twin"), _job(api, name="twin")
    clash = api.client("alice").get("/v1/jobs/twin")
    assert clash.status_code == 409 and all(t in clash.json()["detail"] for t in twins)


def test_cancel_takes_several_ids_and_reports_each(api) -> None:  # type: ignore[no-untyped-def]
    a, b = _job(api, name="a"), _job(api, name="b")
    done = run(["cancel", a[:8], "b", "nope"], env_of(api))
    assert done.exit_code == 1  # one of three failed; the others were cancelled
    assert done.stdout.splitlines() == [
        f"{a}  cancelled",
        f"{b}  cancelled",
        "cancelled 2 of 3 jobs",
    ]
    assert "error: no job or array nope (HTTP 404)" in done.stderr


@BOTH
def test_cancel_by_filter_counts_and_asks_before_cancelling_many(api) -> None:  # type: ignore[no-untyped-def]
    sweeps = [_job(api, name=f"sweep-{i}", queued=True) for i in range(5)]
    other = _job(api, name="keep", queued=True)
    fresh = _job(api, name="sweep-new")  # submitted, not queued
    bobs = _job(api, "bob", name="sweep-0", queued=True)
    env = env_of(api)
    refused = run(["cancel", "--all", "--state", "queued"], env, stdin="n\n")
    assert refused.exit_code == 1 and "Cancel 6 jobs?" in refused.stderr
    assert {api.store.jobs.get(j).state for j in [*sweeps, other]} == {JobState.QUEUED}

    named = run(["cancel", "--name", "sweep-?", "--state", "queued"], env, stdin="y\n")
    assert named.exit_code == 0, named.stderr
    assert "Cancel 5 jobs?" in named.stderr
    assert named.stdout.splitlines()[-1] == "cancelled 5 of 5 jobs"
    assert {api.store.jobs.get(j).state for j in sweeps} == {JobState.CANCELLED}
    assert api.store.jobs.get(other).state is JobState.QUEUED
    assert api.store.jobs.get(fresh).state is JobState.SUBMITTED
    assert api.store.jobs.get(bobs).state is JobState.QUEUED  # never someone else's

    rest = run(["cancel", "--all"], env)  # two jobs: no question
    assert rest.stdout.splitlines()[-1] == "cancelled 2 of 2 jobs"
    assert run(["cancel", "--all", "--yes"], env).stdout == "no job matches; nothing cancelled\n"


def test_cancel_needs_jobs_or_a_filter(api) -> None:  # type: ignore[no-untyped-def]
    bare = run(["cancel"], env_of(api))
    assert bare.exit_code == 2 and "--all, --state or --name" in bare.stderr
    mixed = run(["cancel", "x", "--all"], env_of(api))
    assert mixed.exit_code == 2 and "either jobs or a filter" in mixed.stderr
    bad = run(["cancel", "--state", "bogus"], env_of(api))
    assert bad.exit_code == 2 and "valid: submitted" in bad.stderr
