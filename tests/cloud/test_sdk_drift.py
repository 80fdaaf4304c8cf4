"""The seam against the REAL installed SkyPilot SDK: call shapes, statuses, errors, real Tasks.

Importing ``sky`` takes seconds and emits its own deprecation warnings; it happens once, in
the fixture below, with those warnings silenced (the suite otherwise turns warnings into
errors). No cloud credentials or network are needed: nothing here plans or launches.
"""

from __future__ import annotations

import importlib
import inspect
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from starburst.adapters.skypilot import (
    SkyJobsApi,
    build_task,
    launch_name,
    launch_options,
    load_sky,
)
from starburst.adapters.skypilot.outcomes import (
    MANAGED_STATUS,
    NO_CAPACITY_ERRORS,
    NO_CLOUD_ERRORS,
    NOT_UP_ERRORS,
    TRANSIENT_ERRORS,
    FailureKind,
    classify,
)
from starburst.adapters.skypilot.requests import QUEUE_FIELDS
from starburst.core.cloud_choice import cloud_extra
from starburst.core.errors import PermanentError
from starburst.core.job import Job
from starburst.pricing import load_price_table
from tests.cloud.fake_sky import FakeJobs, FakeSky


@pytest.fixture(scope="module")
def sky() -> Iterator[ModuleType]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import sky as real_sky

        yield real_sky


def shape(fn: Callable[..., Any]) -> list[tuple[str, Any, bool]]:
    """Parameter names, kinds and whether each has a default (``self`` dropped)."""
    params = list(inspect.signature(fn).parameters.values())
    if params and params[0].name == "self":
        params = params[1:]
    return [(p.name, p.kind, p.default is not inspect.Parameter.empty) for p in params]


JOBS_CALLS = ["launch", "queue_v2", "cancel", "tail_logs"]


@pytest.mark.parametrize("call", JOBS_CALLS)
def test_fake_and_seam_match_the_real_jobs_sdk(sky: ModuleType, call: str) -> None:
    real = shape(getattr(sky.jobs, call))
    assert shape(getattr(FakeJobs, call)) == real
    assert shape(getattr(SkyJobsApi, call)) == real


@pytest.mark.parametrize("call", ["get", "api_status"])
def test_fake_matches_the_real_request_sdk(sky: ModuleType, call: str) -> None:
    real = shape(getattr(sky, call))
    assert shape(getattr(FakeSky, call)) == real


def test_fake_matches_the_real_cloud_and_server_calls(sky: ModuleType) -> None:
    from sky.client import sdk

    assert shape(FakeSky.enabled_clouds) == shape(sdk.enabled_clouds)
    assert shape(FakeSky.api_info) == shape(sky.api_info)
    loaded = load_sky()
    assert loaded.enabled_clouds is sdk.enabled_clouds and loaded.jobs is sky.jobs


def test_calls_return_request_ids_at_once(sky: ModuleType) -> None:
    for call in ("launch", "queue_v2", "cancel"):
        returned = str(inspect.signature(getattr(sky.jobs, call)).return_annotation)
        assert "RequestId" in returned, call
    assert issubclass(sky.server.common.RequestId, str)
    default_fields = inspect.signature(sky.jobs.queue_v2).parameters["fields"].default
    assert set(QUEUE_FIELDS) <= set(default_fields) | {"failure_reason", "infra", "cloud", "region"}


def test_task_and_resources_accept_what_the_adapter_passes(sky: ModuleType) -> None:
    task_params = inspect.signature(sky.Task).parameters
    resources_params = inspect.signature(sky.Resources).parameters
    assert {"name", "run", "envs", "resources", "num_nodes", "workdir"} <= set(task_params)
    used = {"infra", "accelerators", "use_spot", "cpus", "memory", "image_id", "disk_size"}
    assert used <= set(resources_params)


def test_every_managed_job_status_is_mapped(sky: ModuleType) -> None:
    real = {s.value for s in sky.jobs.ManagedJobStatus}
    assert real <= set(MANAGED_STATUS)


def test_classified_error_names_exist_in_the_sdk(sky: ModuleType) -> None:
    for name in TRANSIENT_ERRORS | NO_CAPACITY_ERRORS | NO_CLOUD_ERRORS | NOT_UP_ERRORS:
        assert isinstance(getattr(sky.exceptions, name), type), name
    no_capacity = sky.exceptions.ResourcesUnavailableError("no A100 in us-east-1")
    assert classify(no_capacity).kind is FailureKind.NO_CAPACITY
    down = sky.exceptions.ApiServerConnectionError("http://127.0.0.1:46580")
    assert classify(down).kind is FailureKind.TRANSIENT
    assert classify(sky.exceptions.InvalidCloudCredentials("x")).kind is FailureKind.PERMANENT


def job(**extra: str) -> Job:
    fields = {
        "command": "torchrun train.py",
        "image": "nvcr.io/nvidia/pytorch:24.01-py3",
        "env": '{"WANDB_MODE": "offline"}',
        **extra,
    }
    return Job(
        "ns/llm-ft", 0.0, 8, cpus=32, memory_mb=256 * 1024, gpu_type="A100-80GB", extra=fields
    )


def build(sky: ModuleType, j: Job, option: int = 0) -> Any:
    options = launch_options(j, load_price_table())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return build_task(sky, j, options[option], launch_name(j.id, option)), options[option]


def test_job_becomes_a_real_sky_task(sky: ModuleType) -> None:
    task, option = build(sky, job(disk_gb="500"))
    assert isinstance(task, sky.Task)
    assert task.name == launch_name("ns/llm-ft", 0)
    assert task.run == "torchrun train.py"
    assert task.envs == {"WANDB_MODE": "offline", "STARBURST_JOB_ID": "ns/llm-ft"}
    (resources,) = list(task.resources)
    assert resources.accelerators == {"A100-80GB": 8}
    assert str(resources.cloud).lower() == option.price.cloud
    assert resources.use_spot is False
    assert resources.cpus == "32+" and resources.memory == "256+"
    assert resources.disk_size == 500
    assert resources.extract_docker_image() == "nvcr.io/nvidia/pytorch:24.01-py3"
    config = task.to_yaml_config()
    assert config["run"] == "torchrun train.py"


def test_a_job_larger_than_an_instance_becomes_a_multi_node_task(sky: ModuleType) -> None:
    big = Job(
        "ns/pretrain",
        0.0,
        16,
        gpu_type="H100",
        pods=2,
        extra={"command": "torchrun --nnodes=$SKYPILOT_NUM_NODES train.py"},
    )
    task, option = build(sky, big)
    assert task.num_nodes == 2 and option.price.shape == "2xH100:8"
    (resources,) = list(task.resources)
    assert resources.accelerators == {"H100": 8}  # per node
    assert task.to_yaml_config()["num_nodes"] == 2
    single, _ = build(sky, job())
    assert single.num_nodes == 1
    with pytest.raises(PermanentError, match="in pods of 12"):
        launch_options(
            Job("ns/huge", 0.0, 24, gpu_type="H100", pods=2, extra={"command": "x"}),
            load_price_table(),
        )


def test_regions_become_any_of_and_spot_is_passed(sky: ModuleType) -> None:
    task, option = build(sky, job(regions="aws/us-east-1,aws/us-west-2", spot="true"))
    assert (option.price.cloud, option.price.spot) == ("aws", True)
    assert option.regions == ("us-east-1", "us-west-2")
    assert isinstance(task.resources, set) and len(task.resources) == 2
    assert {(str(r.cloud).lower(), r.region) for r in task.resources} == {
        ("aws", "us-east-1"),
        ("aws", "us-west-2"),
    }
    assert all(r.use_spot and r.accelerators == {"A100-80GB": 8} for r in task.resources)
    # SkyPilot's managed-job recovery, as the real Resources keeps it
    assert all(r.job_recovery["strategy"] == "EAGER_NEXT_REGION" for r in task.resources)
    assert "any_of" in task.to_yaml_config()["resources"]
    mixed = job(regions="aws/us-east-1,gcp/us-central1")
    assert {o.price.cloud for o in launch_options(mixed, load_price_table())} == {"aws", "gcp"}


def test_a_workdir_becomes_the_real_tasks_workdir(sky: ModuleType, tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text("print('hi')\n")
    task, _ = build(sky, job(workdir=str(tmp_path)))
    assert task.workdir == str(tmp_path)
    assert task.to_yaml_config()["workdir"] == str(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        task.expand_and_validate_workdir()  # what jobs.launch checks before uploading it
    without, _ = build(sky, job())
    assert without.workdir is None
    with pytest.raises(PermanentError, match="is not a directory on the controller's machine"):
        build(sky, job(workdir=str(tmp_path / "gone")))


def test_cloud_choices_become_the_real_tasks_resources(sky: ModuleType) -> None:
    choice = cloud_extra(use_spot=True, cloud="AWS", region="us-west-2", disk_gb=256)
    task, option = build(sky, job(**choice))
    (resources,) = list(task.resources)
    assert (str(resources.cloud).lower(), resources.region) == ("aws", "us-west-2")
    assert resources.use_spot is True and resources.disk_size == 256
    assert option.price.spot and option.regions == ("us-west-2",)


def test_the_exit_code_phrases_read_are_the_sdks(sky: ModuleType) -> None:
    """SkyPilot has no exit-code field in a managed job's record: it writes the code into
    failure_reason (``outcomes.program_failure`` parses it). These are its words."""
    source = inspect.getsource(importlib.import_module("sky.jobs.controller"))
    assert "'Job exited with exit code '" in source
    assert "'Job exited with exit codes '" in source
    assert "(user program failure)" in source
    assert (
        "exit_code" not in QUEUE_FIELDS
        and "exit_codes" not in inspect.signature(sky.jobs.queue_v2).parameters["fields"].default
    )
