"""Failures carry their cause: the exit code and the last lines of output of a job that
failed on-prem (local cluster) or in the (emulated) cloud reach ``status``, the JSON and
``explain``; ``logs -f`` ends with the final state and exits with the job's exit code."""

from __future__ import annotations

import json
import re
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
from tests.support.databases import BOTH
from tests.support.waiting import wait_for

ONPREM = "echo loading data; echo 'RuntimeError: CUDA out of memory' >&2; exit 7"
CLOUD = "for i in 1 2 3 4 5 6 7 8 9 10 11 12; do echo step $i; done; exit 5"


@BOTH
def test_exit_code_and_output_tail_reach_status_json_explain_and_logs(  # type: ignore[no-untyped-def]
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
    here = store.submissions.submit(JobSpec(id="here", gpus=1, user="alice", command=ONPREM)).job.id
    there = store.submissions.submit(
        JobSpec(id="there", gpus=2, gpu_type="A100", user="alice", command=CLOUD)
    ).job.id
    ok = store.submissions.submit(
        JobSpec(id="fine", gpus=2, gpu_type="A100", user="alice", command="echo fine")
    ).job.id

    def ended() -> bool:
        loop.run_pass()
        clock.advance(1)
        return all(store.jobs.get(i).state.terminal for i in (here, there, ok))

    assert wait_for(ended)
    assert store.jobs.get(here).state is JobState.FAILED and store.jobs.get(there).ran_on == "cloud"
    env = {"STARBURST_SERVER": api.url, "STARBURST_TOKEN": api.tokens["alice"]}

    status = run(["status", here], env)
    assert "exit code:   7\n" in status.stdout
    assert "failure:     failed on-prem: exit code 7\n" in status.stdout
    assert status.stdout.endswith("loading data\n             RuntimeError: CUDA out of memory\n")
    as_json = json.loads(run(["status", here, "--json"], env).stdout)
    assert as_json["exit_code"] == 7 and "CUDA out of memory" in as_json["failure"]

    cloudy = json.loads(run(["status", there, "--json"], env).stdout)
    assert cloudy["exit_code"] == 5
    assert cloudy["failure"].startswith("cloud run failed: emulated: exit code 5; last output:\n")
    assert cloudy["failure"].endswith("step 12") and "step 2\n" not in cloudy["failure"]
    explained = run(["explain", there], env)
    assert re.search(r"→ failed +cloud run failed: emulated: exit code 5 +\w", explained.stdout)
    assert explained.stdout.endswith(
        "last output:\n" + "".join(f"  step {i}\n" for i in range(3, 13))
    )
    api_explain = api.client("alice").get(f"/v1/jobs/{here}/explain").json()
    assert api_explain["exit_code"] == 7 and api_explain["summary"] == (
        "failed: failed on-prem: exit code 7"
    )

    followed = run(["logs", here, "-f", "--interval", "0.1"], env)
    assert followed.exit_code == 7
    assert followed.stdout.endswith("RuntimeError: CUDA out of memory\n")
    assert followed.stderr == "job here failed: failed on-prem: exit code 7\n"
    fine = run(["logs", ok, "-f", "--interval", "0.1"], env)
    assert fine.exit_code == 0 and fine.stderr == "job fine succeeded\n"
    assert json.loads(run(["status", ok, "--json"], env).stdout)["failure"] is None
