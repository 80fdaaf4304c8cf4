"""What a SkyPilot task file says is honoured or refused, never dropped: where a burst may go
(``resources.use_spot``, ``cloud``, ``region``, ``infra``, ``disk_size``), env values given
as ``null``, ``setup`` that fails, ``array:``, and the image, optional where the backend
needs none. Through the real CLI against a served app (SQLite and PostgreSQL)."""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from starburst.adapters.local import LocalCluster
from starburst.adapters.skypilot import build_task, launch_name, launch_options
from starburst.controller.loop.report import backend_job
from starburst.core.lifecycle import JobState
from starburst.pricing import parse_price_table
from tests.api.conftest import LiveServer, serve_loop
from tests.api.test_cli import run
from tests.cloud.fake_sky import FakeSky
from tests.support.clock import ManualClock
from tests.support.databases import BOTH
from tests.support.waiting import wait_for

PRICES = {
    "taken": "2026-01-01",
    "regions": {"aws": "us-east-1", "gcp": "us-central1"},
    "gpus": {"A100": {"aws": {"on_demand": 4.0, "spot": 1.5}, "gcp": {"on_demand": 3.0}}},
}
ALL = tuple(JobState)
SKYPILOT = {"settings": {"cloud": "skypilot"}, "prices": parse_price_table(PRICES)}


def env_of(api) -> dict[str, str]:  # type: ignore[no-untyped-def]
    return {"STARBURST_SERVER": api.url, "STARBURST_TOKEN": api.tokens["alice"]}


def submit_file(api, tmp_path: Path, text: str, *flags: str):  # type: ignore[no-untyped-def]
    task = tmp_path / "task.yaml"
    task.write_text(text)
    return run(["submit", str(task), *flags], env_of(api))


@BOTH
@pytest.mark.parametrize("api_options", [SKYPILOT], indirect=True)
def test_where_a_burst_may_go_reaches_the_skypilot_task(api, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    made = submit_file(
        api,
        tmp_path,
        "resources:\n  accelerators: A100:1\n  use_spot: true\n  infra: aws/us-east-1\n"
        "  disk_size: 256\nrun: python train.py\n",
    )
    assert made.exit_code == 0, made.stderr
    job = backend_job(api.store.jobs.get(made.stdout.split()[0]))
    options = launch_options(job, parse_price_table(PRICES))
    assert [(o.price.cloud, o.price.spot, o.regions) for o in options] == [
        ("aws", True, ("us-east-1",))
    ]
    task = build_task(FakeSky(), job, options[0], launch_name(job.id, 0))  # type: ignore[arg-type]
    resources = task.kwargs["resources"].kwargs
    assert resources["infra"] == "aws/us-east-1" and resources["use_spot"] is True
    assert resources["disk_size"] == 256 and "image_id" not in resources  # no image given

    on_demand = submit_file(
        api,
        tmp_path,
        "resources: {accelerators: A100:1, cloud: GCP, use_spot: false}\nrun: x\n",
    )
    assert on_demand.exit_code == 0, on_demand.stderr
    chosen = backend_job(api.store.jobs.get(on_demand.stdout.split()[0]))
    (only,) = launch_options(chosen, parse_price_table(PRICES), spot=True)  # job says no spot
    assert (only.price.cloud, only.price.spot) == ("gcp", False)


@BOTH
@pytest.mark.parametrize("api_options", [SKYPILOT], indirect=True)
def test_a_cloud_choice_nothing_can_price_is_refused_at_submit(api, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    spot_gcp = submit_file(
        api, tmp_path, "resources: {accelerators: A100:1, cloud: gcp, use_spot: true}\nrun: x\n"
    )
    assert spot_gcp.exit_code == 1
    assert spot_gcp.stderr == (
        "error: this job cannot burst as asked: no spot price for A100:1 on gcp in the price "
        "table, so it cannot burst (spot A100 is priced on aws) (HTTP 422)\n"
    )
    nowhere = submit_file(
        api, tmp_path, "resources: {accelerators: A100:1, infra: lambda}\nrun: x\n"
    )
    assert nowhere.exit_code == 1 and "no on-demand price for A100:1 on lambda" in nowhere.stderr
    assert api.store.jobs.queue(limit=5, states=ALL).jobs == []


@BOTH
def test_a_null_env_value_must_be_given_on_the_command_line(api, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    text = "envs:\n  WANDB_API_KEY: null\n  SEED: 1\nrun: python train.py\n"
    refused = submit_file(api, tmp_path, text)
    assert refused.exit_code == 2
    assert "WANDB_API_KEY is null in the job file: give its value with --env" in refused.stderr
    assert api.store.jobs.queue(limit=5, states=ALL).jobs == []
    given = submit_file(api, tmp_path, text, "--env", "WANDB_API_KEY=k")
    assert given.exit_code == 0, given.stderr
    stored = api.store.jobs.get(given.stdout.split()[0])
    assert json.loads(stored.job.extra["env"]) == {"WANDB_API_KEY": "k", "SEED": "1"}


@BOTH
def test_array_in_a_job_file_is_the_array_flag(api, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    made = submit_file(
        api, tmp_path, "name: sweep\narray: 0-2%2\nrun: echo $STARBURST_ARRAY_INDEX\n"
    )
    assert made.exit_code == 0, made.stderr
    jobs = api.store.jobs.queue(limit=10, states=ALL).jobs
    assert sorted(s.job.name for s in jobs) == ["sweep-0", "sweep-1", "sweep-2"]
    assert {s.job.array_limit for s in jobs} == {2}
    assert "at most 2 at once" in made.stdout
    flag_wins = submit_file(api, tmp_path, "name: one\narray: 0-9\nrun: x\n", "--array", "5")
    assert flag_wins.exit_code == 0
    names = sorted(s.job.name or "" for s in api.store.jobs.queue(limit=20, states=ALL).jobs)
    assert names == ["one-5", "sweep-0", "sweep-1", "sweep-2"]


@pytest.mark.parametrize("api_options", [{"settings": {"cluster": "kubernetes"}}], indirect=True)
def test_kubernetes_needs_an_image_and_cannot_see_a_workdir(api, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    no_image = run(["submit", "--", "python", "train.py"], env_of(api))
    assert no_image.exit_code == 1
    assert no_image.stderr == (
        "error: this server runs jobs on Kubernetes, which needs a container image: give "
        "--image (or image: / resources.image_id: docker:IMAGE in a job file) (HTTP 422)\n"
    )
    workdir = run(["submit", "--image", "i", "--workdir", str(tmp_path), "--", "ls"], env_of(api))
    assert workdir.exit_code == 1 and "whose pods cannot see a directory" in workdir.stderr
    assert api.store.jobs.queue(limit=5, states=ALL).jobs == []
    ok = run(["submit", "--image", "i", "--", "ls"], env_of(api))
    assert ok.exit_code == 0, ok.stderr


@BOTH
def test_on_the_local_cluster_no_image_is_needed_and_a_failed_setup_fails_the_job(  # type: ignore[no-untyped-def]
    db_url: str,
    clock: ManualClock,
    resources: ExitStack,
    open_store: Callable[[str], Any],
    serve: Callable[[Any], LiveServer],
    tmp_path: Path,
) -> None:
    store = open_store(db_url)
    cluster = LocalCluster(tmp_path / "cluster", 2, grace=0.2)
    loop, _, env = serve_loop(db_url, store, clock, resources, serve, cluster)
    (tmp_path / "bad.yaml").write_text("setup: |\n  echo setting up\n  exit 3\nrun: echo ran\n")
    (tmp_path / "good.yaml").write_text("setup: cd /\nrun: echo ran in $(pwd)\n")
    bad = run(["submit", str(tmp_path / "bad.yaml")], env).stdout.split()[0]
    good = run(["submit", str(tmp_path / "good.yaml")], env).stdout.split()[0]

    def ended() -> bool:
        loop.run_pass()
        return all(store.jobs.get(j).state.terminal for j in (bad, good))

    assert wait_for(ended)
    failure = json.loads(run(["status", bad, "--json"], env).stdout)
    assert failure["state"] == "failed" and failure["exit_code"] == 3
    assert cluster.logs(bad).splitlines()[1:] == ["setting up"]  # run did not run
    assert store.jobs.get(good).state is JobState.SUCCEEDED
    (line,) = [x for x in cluster.logs(good).splitlines() if x.startswith("ran in ")]
    assert line != "ran in /"  # setup's `cd` stays its own, as in SkyPilot
