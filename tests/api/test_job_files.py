"""``starburst submit job.yaml`` (Starburst keys or a SkyPilot task as is) and ``--wait``,
through the real CLI against a served app."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from starburst.adapters.local import LocalCluster
from starburst.controller.loop.scheduling import SchedulingLoop
from starburst.core.cycle import SchedulerConfig
from starburst.core.lifecycle import JobState
from starburst.core.policy import PolicyKind, WaitPolicy
from tests.api.conftest import LiveServer, build_api
from tests.api.test_cli import run
from tests.support.clock import ManualClock
from tests.support.databases import BOTH

SKY_TASK = """\
name: resnet
resources:
  accelerators: A100:2
  cpus: 8+
  memory: 32+
  image_id: docker:pytorch/pytorch:2.4
envs:
  SEED: 7
  LR: 3e-4
setup: pip install -r requirements.txt
run: |
  python train.py --seed $SEED
"""


def env_of(api) -> dict[str, str]:  # type: ignore[no-untyped-def]
    return {"STARBURST_SERVER": api.url, "STARBURST_TOKEN": api.tokens["alice"]}


@BOTH
def test_a_skypilot_task_is_accepted_as_is_and_flags_win(api, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    task = tmp_path / "task.yaml"
    task.write_text(SKY_TASK)
    made = run(["submit", str(task)], env_of(api))
    assert made.exit_code == 0, made.stderr
    stored = api.store.jobs.get(made.stdout.split()[0])
    assert (stored.job.name, stored.job.gpus, stored.job.gpu_type) == ("resnet", 2, "A100")
    assert stored.job.cpus == 8 and stored.job.memory_mb == 32 * 1024
    assert stored.image == "pytorch/pytorch:2.4"
    assert stored.command == (  # under bash, as SkyPilot runs setup and run
        "bash -c '(\npip install -r requirements.txt\n) || exit $?\npython train.py --seed $SEED'"
    )
    assert json.loads(stored.job.extra["env"]) == {"SEED": "7", "LR": "3e-4"}

    again = run(
        [
            "submit",
            str(task),
            "--gpus",
            "4",
            "--name",
            "big",
            "--env",
            "SEED=8",
            "--runtime",
            "2h",
            "--",
            "python",
            "other.py",
        ],
        env_of(api),
    )
    bigger = api.store.jobs.get(again.stdout.split()[0])
    assert (bigger.job.name, bigger.job.gpus, bigger.job.estimate) == ("big", 4, 7200)
    assert bigger.command == "python other.py"
    assert json.loads(bigger.job.extra["env"]) == {"SEED": "8", "LR": "3e-4"}


def test_starburst_keys_in_a_job_file(api, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    own = tmp_path / "job.yml"
    own.write_text(
        "image: img\ngpus: 3\nruntime: 90m\ncommand: [python, a b.py]\nenv: {A: '1'}\nproject: p1\n"
    )
    made = run(["submit", str(own)], env_of(api))
    stored = api.store.jobs.get(made.stdout.split()[0])
    assert stored.job.gpus == 3 and stored.job.estimate == 5400
    assert stored.command == "python 'a b.py'" and stored.job.extra["project"] == "p1"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("image: i\nrun: x\nfile_mounts: {}\n", "`file_mounts` is not supported"),
        ("image: i\nrun: x\nnum_nodes: 2\n", "num_nodes must be 1"),
        ("image: i\nrun: x\ngpu: 2\n", "unknown key 'gpu'; known: image, gpus"),
        ("image: i\nrun: x\nresources: {accelerators: 'A100:many'}\n", "is not NAME:COUNT"),
        ("image: i\nrun: x\nresources: {gpus: 2}\n", "unknown resources key 'gpus'"),
        ("run: x\nresources: {infra: aws/us-east-1/us-east-1a}\n", "names a zone"),
        ("run: x\nresources: {infra: aws, cloud: aws}\n", "infra or cloud/region, not both"),
        ("run: x\nresources: {region: us-east-1}\n", "resources.region needs resources.cloud"),
        ("run: x\nresources: {use_spot: maybe}\n", "use_spot must be true or false"),
        ("run: x\nresources: {disk_size: big}\n", "is not a number of GB"),
        ("run: x\nresources: {image_id: ami-0123}\n", "is a machine image"),
        ("setup: pip install x\n", "`setup` needs a `run`"),
        ("run: x\nnum_nodes: two\n", "num_nodes must be 1"),
        ("run: x\nenvs: [A]\n", "envs must be a mapping"),
        ("[1, 2]\n", "expected a mapping"),
        ("image: [\n", "cannot read job file"),
    ],
)
def test_a_bad_job_file_is_one_clear_line(api, tmp_path: Path, text: str, message: str) -> None:  # type: ignore[no-untyped-def]
    bad = tmp_path / "bad.yaml"
    bad.write_text(text)
    refused = run(["submit", str(bad)], env_of(api))
    assert refused.exit_code == 2 and message in refused.stderr, refused.stderr
    assert "Traceback" not in refused.stderr
    assert api.store.jobs.queue(limit=5, states=tuple(JobState)).jobs == []  # nothing submitted


def test_a_job_needs_a_command(api, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    bare = run(["submit", "--image", "i"], env_of(api))
    assert bare.exit_code == 2 and "give the command after `--`" in bare.stderr


@pytest.fixture
def live(
    db_url: str,
    clock: ManualClock,
    resources: ExitStack,  # type: ignore[no-untyped-def]
    open_store: Callable[[str], Any],
    serve: Callable[[Any], LiveServer],
    tmp_path: Path,
) -> Iterator[Any]:
    """An API over a store that a scheduling loop (local cluster, no cloud) drives in a
    thread until the test ends."""
    store = open_store(db_url)
    cluster = LocalCluster(tmp_path / "cluster", 2)
    loop = SchedulingLoop(
        store,
        cluster,
        None,
        clock,
        SchedulerConfig(WaitPolicy(PolicyKind.INFINITE), out_of_order=True),
    )
    api = build_api(db_url, store, clock, resources, serve)
    stop = threading.Event()

    def drive() -> None:
        while not stop.wait(0.05):
            loop.run_pass()

    thread = threading.Thread(target=drive, daemon=True)
    thread.start()
    yield api
    stop.set()
    thread.join()


def test_wait_exits_with_the_jobs_exit_code(live) -> None:  # type: ignore[no-untyped-def]
    env = env_of(live)
    failed = run(
        [
            "submit",
            "--image",
            "i",
            "--wait",
            "--interval",
            "0.1",
            "--",
            "sh",
            "-c",
            "echo bye; exit 3",
        ],
        env,
    )
    assert failed.exit_code == 3, failed.stderr
    job_id = failed.stdout.split()[0]
    assert failed.stderr == f"job {job_id} failed: failed on-prem: exit code 3\n"
    ok = run(["submit", "--image", "i", "--wait", "--interval", "0.1", "--", "true"], env)
    assert ok.exit_code == 0 and ok.stderr.endswith(" succeeded\n")
