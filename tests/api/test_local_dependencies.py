"""``--after`` on the embedded local cluster (the default backend), through the real CLI
against a served app: the dependent starts once its dependency ends, and a later cluster on
the same state directory adopts it with its dependencies intact (the spawn record holds
them). SimCluster-based tests never write a spawn record, so they could not catch a job the
record cannot hold."""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from starburst.adapters.local import LocalCluster
from starburst.core.dependencies import AfterKind, Dependency
from starburst.core.lifecycle import JobState
from tests.api.conftest import LiveServer, serve_loop
from tests.api.test_cli import run
from tests.support.clock import ManualClock
from tests.support.databases import BOTH
from tests.support.waiting import wait_for


@BOTH
def test_a_dependent_job_runs_on_the_local_cluster_and_is_adopted_intact(  # type: ignore[no-untyped-def]
    db_url: str,
    clock: ManualClock,
    resources: ExitStack,
    open_store: Callable[[str], Any],
    serve: Callable[[Any], LiveServer],
    tmp_path: Path,
) -> None:
    cluster = LocalCluster(tmp_path / "cluster", 1, grace=0.2)
    store = open_store(db_url)
    loop, _, env = serve_loop(db_url, store, clock, resources, serve, cluster)
    first = run(["submit", "--image", "i", "--name", "prep", "--", "echo", "prepared"], env)
    assert first.exit_code == 0, first.stderr
    prep = first.stdout.split()[0]
    made = run(
        [
            "submit",
            "--image",
            "i",
            "--after",
            "prep:ok",
            "--",
            "sh",
            "-c",
            "echo trained; sleep 30",
        ],
        env,
    )
    assert made.exit_code == 0, made.stderr
    train = made.stdout.split()[0]

    def running() -> bool:
        loop.run_pass()
        return store.jobs.get(train).state is JobState.RUNNING_ONPREM

    assert wait_for(running)
    assert store.jobs.get(prep).state is JobState.SUCCEEDED
    shown = json.loads(run(["status", train, "--json"], env).stdout)
    assert shown["state"] == "running_onprem", store.jobs.events(train)[-1].reason

    later = LocalCluster(tmp_path / "cluster", 1, grace=0.2)
    adopted = {r.job.id: r.job for r in later.snapshot().running}
    assert adopted[train].after == (Dependency(prep, AfterKind.OK),)
    assert run(["cancel", train], env).exit_code == 0

    def ended() -> bool:
        loop.run_pass()
        return store.jobs.get(train).state is JobState.CANCELLED

    assert wait_for(ended)
