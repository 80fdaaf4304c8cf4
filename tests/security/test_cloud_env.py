"""A cloud launch carries only the job's own env plus Starburst's variables, never the
controller's (issue 10: "Cloud launches likewise carry only the job's env").

The controller's environment here holds what a real one does — the database URL with its
password, cloud and SkyPilot credentials — and each launch is checked for exactly the
variables it may carry: the SkyPilot task the adapter hands to ``sky.jobs.launch`` (through
the fake SDK, and built with the real ``sky`` when it is installed), and the environment an
emulated burst's process really runs with.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from starburst.adapters.local import EmulatedCloud
from starburst.adapters.skypilot import Backoff, SkyPilotCloud, build_task, launch_options
from starburst.core.job import Job
from starburst.pricing import load_price_table
from tests.cloud.fake_sky import FakeSky
from tests.support.clock import ManualClock
from tests.support.waiting import wait_for

SECRETS = {
    "STARBURST_DATABASE_URL": "postgresql://starburst:pw-d41e9@db/starburst",
    "AWS_SECRET_ACCESS_KEY": "aws-secret-77c1",
    "SKYPILOT_SERVICE_ACCOUNT_TOKEN": "sky_token-0b3f",
    "STARBURST_TOKEN": "sb_controller-token-5a2c",
}
JOB_ENV = '{"LR": "0.1", "WANDB_PROJECT": "x"}'
# what a shell adds of its own, and what the local backends set (isolation.job_environment)
SHELL = {"PWD", "SHLVL", "_", "OLDPWD"}
LOCAL = {"PATH", "HOME", "LANG", "CUDA_VISIBLE_DEVICES", "STARBURST_JOB_ID", "STARBURST_SPAWN"}


@pytest.fixture(autouse=True)
def controller_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)


def burst_job() -> Job:
    extra = {"command": "python train.py", "image": "pytorch/pytorch:2.3", "env": JOB_ENV}
    return Job("team-a/train-1", 0.0, 1, gpu_type="A100", team="ml", extra=extra)


def expected() -> dict[str, str]:
    return {"LR": "0.1", "WANDB_PROJECT": "x", "STARBURST_JOB_ID": "team-a/train-1"}


def test_the_skypilot_task_launched_carries_only_the_jobs_env() -> None:
    fake, clock = FakeSky(), ManualClock(100.0)
    cloud = SkyPilotCloud(clock, load_price_table(), fake, sync_interval=0.0, backoff=Backoff())
    handle = cloud.launch(burst_job(), "waited 30m of a 30m budget")
    for _ in range(3):  # the launch request goes out on a later pass
        clock.advance(1.0)
        cloud.poll(handle)
    ((_, task),) = fake.calls.launches
    assert task.kwargs["envs"] == expected()


def test_the_real_sky_task_carries_only_the_jobs_env() -> None:
    sky = pytest.importorskip("sky")
    job = burst_job()
    option = launch_options(job, load_price_table())[0]
    task = build_task(sky, job, option, "starburst-train-1-0")
    assert dict(task.envs) == expected()
    config = str(task.to_yaml_config())  # what SkyPilot ships to the cloud
    assert not [secret for secret in SECRETS.values() if secret in config]


def test_an_emulated_burst_runs_with_only_the_jobs_env(tmp_path: Path) -> None:
    cloud = EmulatedCloud(tmp_path / "state")  # as this process's own user: no uid switch
    job = Job("burst-1", 0.0, 1, extra={"command": "env", "env": JOB_ENV})
    handle = cloud.launch(job, "budget expired")
    assert wait_for(lambda: cloud.poll(handle).value != "running")
    lines = cloud.logs(handle).splitlines()[1:]  # after the header
    env = dict(line.split("=", 1) for line in lines if "=" in line)
    assert set(env) <= LOCAL | SHELL | {"LR", "WANDB_PROJECT", "STARBURST_EMULATED"}, env
    assert (env["LR"], env["WANDB_PROJECT"], env["STARBURST_JOB_ID"]) == ("0.1", "x", "burst-1")
    assert not set(SECRETS.values()) & set(env.values())
