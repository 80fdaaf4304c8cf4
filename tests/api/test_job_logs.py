"""Job output through the API and the CLI: on-prem from the local cluster, bursts from the
(emulated) cloud, with the same visibility rules as every other job route."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from starburst.adapters.local import EmulatedCloud, LocalCluster
from starburst.controller.job_output import JobLogs
from starburst.core.lifecycle import JobState
from starburst.core.policy import PolicyKind
from starburst.core.records import JobSpec
from tests.api.conftest import LiveServer, serve_loop
from tests.api.test_cli import run
from tests.support.clock import ManualClock
from tests.support.waiting import wait_for

PRINTS = "echo first; echo second; echo third"


def test_logs_come_from_where_the_job_ran(  # type: ignore[no-untyped-def]
    db_url: str,
    clock: ManualClock,
    resources: ExitStack,
    open_store: Callable[[str], Any],
    serve: Callable[[Any], LiveServer],
    tmp_path: Path,
) -> None:
    store = open_store(db_url)
    cluster = LocalCluster(tmp_path / "cluster", 1)
    cloud = EmulatedCloud(tmp_path / "cloud")
    loop, api, _ = serve_loop(
        db_url,
        store,
        clock,
        resources,
        serve,
        cluster,
        cloud,
        PolicyKind.NO_WAIT,
        job_logs=lambda: JobLogs(cluster, cloud),
    )
    here = store.submissions.submit(JobSpec(id="here", gpus=1, user="alice", command=PRINTS)).job.id
    there = store.submissions.submit(
        JobSpec(id="there", gpus=2, gpu_type="A100", user="alice", command="echo from the cloud")
    ).job.id

    def both_ended() -> bool:
        loop.run_pass()
        clock.advance(1)
        return {store.jobs.get(i).state for i in (here, there)} == {JobState.SUCCEEDED}

    wait_for(both_ended, interval=0.05)
    assert store.jobs.get(here).ran_on == "onprem" and store.jobs.get(there).ran_on == "cloud"

    alice = api.client("alice")
    onprem = alice.get(f"/v1/jobs/{here}/logs")
    assert onprem.status_code == 200 and onprem.headers["content-type"].startswith("text/plain")
    assert onprem.text.endswith("first\nsecond\nthird\n")
    assert alice.get(f"/v1/jobs/{here}/logs", params={"tail": 1}).text == "third\n"
    burst = alice.get(f"/v1/jobs/{there}/logs").text
    assert "emulated" in burst and burst.endswith("from the cloud\n")

    assert api.client("bob").get(f"/v1/jobs/{here}/logs").status_code == 404  # not his
    assert api.client("fin").get(f"/v1/jobs/{here}/logs").status_code == 403  # read-only
    waiting = store.submissions.submit(
        JobSpec(id="waiting", gpus=1, user="alice", command="true")
    ).job.id
    early = alice.get(f"/v1/jobs/{waiting}/logs")
    assert early.status_code == 409 and "has not started yet" in early.json()["detail"]
    assert alice.get("/v1/jobs/here/logs", params={"tail": -1}).status_code == 422

    env = {"STARBURST_SERVER": api.url, "STARBURST_TOKEN": api.tokens["alice"]}
    printed = run(["logs", here, "--tail", "2"], env)
    assert printed.exit_code == 0 and printed.stdout == "second\nthird\n"
    assert run(["logs", here, "--tail", "0"], env).stdout.endswith("first\nsecond\nthird\n")
    followed = run(["logs", here, "--follow", "--interval", "0.1"], env)  # ended: prints, exits
    assert followed.exit_code == 0 and followed.stdout.endswith("first\nsecond\nthird\n")
    refused = run(["logs", waiting], env)
    assert refused.exit_code == 1 and "has not started yet" in refused.stderr


def test_an_api_without_backends_says_it_serves_no_output(api) -> None:  # type: ignore[no-untyped-def]
    job_id = api.store.submissions.submit(JobSpec(gpus=1, user="alice", command="true")).job.id
    answer = api.client("alice").get(f"/v1/jobs/{job_id}/logs")
    assert answer.status_code == 409 and "serves no job output" in answer.json()["detail"]
