"""A Kubernetes job's id is ``<namespace>/<name>``: every job route and CLI command takes it
(it answered 404 before, with the slash plain or as ``%2F``)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from starburst.cli.main import build_app
from starburst.core.lifecycle import JobState
from starburst.core.records import JobSpec


def run(args: list[str], env: dict[str, str]):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(build_app(args), args, env=env, catch_exceptions=False)


@pytest.fixture
def k8s_job(api):  # type: ignore[no-untyped-def]
    """A job the Kubernetes adapter found: its id is the Job's namespace and name."""
    api.store.submissions.submit(
        JobSpec(gpus=2, id="ml/q3", user="alice", name="q3"),
        idempotency_key="cluster:ml/q3",
        actor="cluster",
    )
    api.store.lifecycle.transition(
        "ml/q3",
        JobState.QUEUED,
        reason="queued with a 10m wait budget",
        actor="controller",
        wait_budget=600,
    )
    return "ml/q3"


@pytest.mark.parametrize("spelled", ["ml/q3", "ml%2Fq3"])
def test_every_route_takes_an_id_with_a_slash(api, k8s_job, spelled):  # type: ignore[no-untyped-def]
    client = api.client("alice")
    assert client.get(f"/v1/jobs/{spelled}").json()["id"] == k8s_job
    explained = client.get(f"/v1/jobs/{spelled}/explain").json()
    assert explained["id"] == k8s_job and explained["events"][-1]["to_state"] == "queued"
    logs = client.get(f"/v1/jobs/{spelled}/logs")
    assert logs.status_code in (200, 409)  # served by the logs route, not a 404
    assert client.get("/v1/jobs/ml/other").status_code == 404
    assert client.post(f"/v1/jobs/{spelled}/cancel").json()["state"] == "cancelled"


def test_every_cli_command_takes_an_id_with_a_slash(api, k8s_job):  # type: ignore[no-untyped-def]
    env = {"STARBURST_SERVER": api.url, "STARBURST_TOKEN": api.tokens["alice"]}
    status = run(["status", k8s_job], env)
    assert status.exit_code == 0 and "job:         ml/q3" in status.stdout
    explained = run(["explain", k8s_job], env)
    assert explained.exit_code == 0 and explained.stdout.startswith("ml/q3: waiting")
    logs = run(["logs", k8s_job], env)
    assert "HTTP 404" not in logs.stderr
    cancelled = run(["cancel", k8s_job], env)
    assert cancelled.exit_code == 0 and cancelled.stdout.split() == ["ml/q3", "cancelled"]
    odd = run(["status", "ml/q3?x=1#y"], env)  # other characters are sent encoded
    assert odd.exit_code == 1 and odd.stderr == "error: no job or array ml/q3?x=1#y (HTTP 404)\n"


def test_explain_says_why_a_job_never_bursts(api):  # type: ignore[no-untyped-def]
    blocker = "the pod template has 2 containers (main, log); a cloud task runs one"
    api.store.submissions.submit(
        JobSpec(gpus=2, id="ml/duo", user="alice", extra={"cloud_blocker": blocker}),
        idempotency_key="cluster:ml/duo",
        actor="cluster",
    )
    api.store.lifecycle.transition(
        "ml/duo",
        JobState.QUEUED,
        reason=f"queued to run on-prem only: {blocker}",
        actor="controller",
        wait_budget=float("inf"),
    )
    summary = api.client("alice").get("/v1/jobs/ml/duo/explain").json()["summary"]
    assert summary == f"waiting 0s; on-prem when GPUs free; never bursts ({blocker})"
