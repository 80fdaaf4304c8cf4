"""``starburst jobs`` and ``starburst queue`` through the real CLI against a served app:
active jobs by default with position, budget left and plan; filters; output formats; the
redacted queue a user may see ahead of their job; ``--watch`` redrawing."""

from __future__ import annotations

import json

import yaml
from typer.testing import CliRunner

from starburst.cli.main import build_app
from starburst.core.lifecycle import JobState
from starburst.core.records import JobSpec
from tests.support.databases import BOTH


def run(args: list[str], env: dict[str, str]):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(build_app(args), args, env=env, catch_exceptions=False)


def env_of(api, who: str = "alice") -> dict[str, str]:  # type: ignore[no-untyped-def]
    return {"STARBURST_SERVER": api.url, "STARBURST_TOKEN": api.tokens[who]}


def _job(
    api,
    user: str,
    name: str,
    *,
    budget: float | None = None,  # type: ignore[no-untyped-def]
    to: tuple[JobState, ...] = (),
    gpus: int = 1,
) -> str:
    team = {"alice": "ml", "bob": "vision"}[user]
    job_id: str = api.store.submissions.submit(
        JobSpec(gpus=gpus, user=user, team=team, name=name, command=f"secret-{name}", image="img")
    ).job.id
    for state in to:
        api.store.lifecycle.transition(
            job_id,
            state,
            reason="test",
            actor="controller",
            wait_budget=budget if state is JobState.QUEUED else None,
        )
    api.clock.advance(10)
    return job_id


def _scene(api):  # type: ignore[no-untyped-def]
    """bob waits ahead of alice; alice has a finished, a running, a queued and a new job."""
    done = _job(
        api,
        "alice",
        "old",
        to=(JobState.QUEUED, JobState.RUNNING_ONPREM, JobState.SUCCEEDED),
        budget=60,
    )
    ahead = _job(api, "bob", "bobs", to=(JobState.QUEUED,), budget=3600, gpus=4)
    running = _job(
        api, "alice", "train-a", to=(JobState.QUEUED, JobState.RUNNING_ONPREM), budget=60
    )
    queued = _job(api, "alice", "sweep-1", to=(JobState.QUEUED,), budget=2400)
    fresh = _job(api, "alice", "sweep-2")
    behind = _job(api, "bob", "bobs-later", to=(JobState.QUEUED,), budget=600)
    return done, ahead, running, queued, fresh, behind


@BOTH
def test_jobs_shows_active_jobs_newest_last_with_position_budget_and_plan(api) -> None:  # type: ignore[no-untyped-def]
    done, _, running, queued, fresh, _ = _scene(api)
    listed = run(["jobs"], env_of(api))
    assert listed.exit_code == 0, listed.stderr
    header, *rows = listed.stdout.splitlines()
    assert header.split()[:3] == ["POS", "ID", "NAME"] and "WHERE" in header
    ids = [r.split()[1] for r in rows]
    assert ids == [j[:8] for j in (running, queued, fresh)]  # active, newest last, alice's
    by_id = dict(zip((running, queued, fresh), rows, strict=True))
    assert by_id[running].split()[0] == "-" and "running on-prem" in by_id[running]
    # position counts bob's job ahead; 2400 s budget, queued 30 s ago (three jobs since)
    assert by_id[queued].split()[0] == "2"
    assert "  30s  " in by_id[queued] and "else the cloud in 39m30s" in by_id[queued]
    assert by_id[fresh].split()[0] == "3" and "admitted on the next pass" in by_id[fresh]
    assert done[:8] not in listed.stdout and "secret" not in listed.stdout

    every = run(["jobs", "--all"], env_of(api))
    assert [r.split()[1] for r in every.stdout.splitlines()[1:]] == [
        j[:8] for j in (done, running, queued, fresh)
    ]
    newest = run(["jobs", "--all", "--limit", "2"], env_of(api))
    assert newest.stdout.splitlines()[0] == "(2 older jobs not shown; --limit 0 shows all)"
    assert [r.split()[1] for r in newest.stdout.splitlines()[2:]] == [queued[:8], fresh[:8]]


@BOTH
def test_state_groups_names_and_output_formats(api) -> None:  # type: ignore[no-untyped-def]
    _, _, running, queued, fresh, _ = _scene(api)
    only = run(["jobs", "--state", "running"], env_of(api))
    assert [r.split()[1] for r in only.stdout.splitlines()[1:]] == [running[:8]]
    both = run(["jobs", "-s", "queued,running"], env_of(api))
    assert [r.split()[1] for r in both.stdout.splitlines()[1:]] == [running[:8], queued[:8]]

    named = run(["jobs", "--name", "sweep-*", "-o", "json"], env_of(api))
    rows = json.loads(named.stdout)
    assert [r["id"] for r in rows] == [queued, fresh]
    assert rows[0]["position"] == 2 and 2300 < rows[0]["budget_left_s"] <= 2370
    assert (
        yaml.safe_load(run(["jobs", "--name", "sweep-?", "-o", "yaml"], env_of(api)).stdout)[1][
            "name"
        ]
        == "sweep-2"
    )
    assert run(["jobs", "--name", "sweep_*"], env_of(api)).stdout.startswith("no jobs")
    wide = run(["jobs", "-o", "wide"], env_of(api)).stdout.splitlines()
    assert "TEAM" in wide[0] and "SUBMITTED" in wide[0] and " ml " in wide[1]
    assert wide[1].split()[1] == running  # the full id


def test_an_unknown_state_lists_the_valid_ones(api) -> None:  # type: ignore[no-untyped-def]
    bad = run(["jobs", "--state", "runing"], env_of(api))
    assert bad.exit_code == 2 and bad.stdout == ""
    assert bad.stderr.startswith("error: unknown job state 'runing'; valid: submitted, queued")
    assert "running (= running_onprem + running_cloud)" in bad.stderr
    answer = api.client("alice").get("/v1/jobs", params={"state": "runing"})
    assert answer.status_code == 422 and "valid: submitted" in answer.json()["detail"]
    grouped = api.client("alice").get("/v1/jobs", params={"state": "running"})
    assert grouped.status_code == 200


@BOTH
def test_a_user_sees_the_queue_ahead_redacted_and_admins_see_it_all(api) -> None:  # type: ignore[no-untyped-def]
    _, ahead, _, queued, fresh, behind = _scene(api)
    view = api.client("alice").get("/v1/queue").json()
    assert view["total"] == 4
    assert [e["id"] for e in view["jobs"]] == [ahead, queued, fresh]  # not bob's later job
    other = view["jobs"][0]
    assert other["mine"] is False and other["user"] is None and other["name"] is None
    assert other["gpus"] == 4 and other["wait_budget_s"] == 3600
    assert "command" not in other and "env" not in other and "image" not in other
    assert view["jobs"][1]["name"] == "sweep-1" and view["jobs"][1]["position"] == 2

    shown = run(["queue"], env_of(api))
    assert shown.exit_code == 0, shown.stderr
    assert shown.stdout.splitlines()[0] == "4 waiting in all"
    assert ahead[:8] in shown.stdout and "bobs" not in shown.stdout and "secret" not in shown.stdout
    assert behind[:8] not in shown.stdout
    root = api.client("root").get("/v1/queue").json()
    assert [e["id"] for e in root["jobs"]] == [ahead, queued, fresh, behind]
    assert root["jobs"][0]["user"] == "bob"
    assert api.client(None).get("/v1/queue").status_code == 401


def test_watch_redraws_a_bounded_number_of_times(api) -> None:  # type: ignore[no-untyped-def]
    _job(api, "alice", "w", to=(JobState.QUEUED,), budget=600)
    watched = run(["jobs", "--watch", "0.01", "--watch-count", "3"], env_of(api))
    assert watched.exit_code == 0, watched.stderr
    assert watched.stdout.count("(Ctrl-C to stop)") == 3
    assert watched.stdout.count("POS  ID") == 3
    counted = run(["queue", "--watch", "0.01"], {**env_of(api), "STARBURST_WATCH_COUNT": "2"})
    assert counted.stdout.count("waiting in all") == 2
