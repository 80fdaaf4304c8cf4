"""Spot bursts against the real SkyPilot API server, as far as it goes with no cloud enabled.

The fake tier (``tests/cloud/test_spot.py``) covers choosing spot, its prices, SkyPilot's
managed-job recovery after a preemption and the metering of a recovered launch. Here:
- the adapter with ``use_spot`` refuses a spot burst at once with the no-cloud cause, having
  chosen the cheapest *spot* option, and sends the server no launch;
- the spot task the adapter builds (``use_spot: true`` in its resources, the managed-job
  recovery strategy ``EAGER_NEXT_REGION``) is the one the real server receives: its request
  body carries both, the server accepts the request and it fails with ``NoCloudAccessError``,
  which the adapter classifies as the permanent no-cloud cause (not a spot capacity error to
  fail over from).
"""

from __future__ import annotations

import json
from types import ModuleType
from typing import Any

import pytest
import yaml

from starburst.adapters.skypilot import SkyPilotCloud, classify, load_sky
from starburst.adapters.skypilot.outcomes import NO_CLOUD
from starburst.adapters.skypilot.requests import LAUNCH_REQUEST
from starburst.adapters.skypilot.task import SPOT_RECOVERY, build_task, launch_options
from starburst.core.job import Job
from starburst.core.ports import CloudStatus
from starburst.pricing import default_price_table
from starburst.wallclock import WallClock
from tests.skypilot_real.conftest import settled
from tests.support.waiting import wait_for

PASS_TIMEOUT_S = 180.0


def spot_job(job_id: str, **extra: str) -> Job:
    return Job(job_id, 0.0, 1, gpu_type="A100", extra={"command": "python train.py", **extra})


def test_a_spot_burst_with_no_cloud_is_refused_before_any_launch(sky: ModuleType) -> None:
    cloud = SkyPilotCloud(WallClock(), sync_interval=0.0, spot=True)
    handle = cloud.launch(spot_job("real/spot-refused"), "waited 1m of a 1m budget")
    assert wait_for(lambda: cloud.poll(handle) is CloudStatus.REFUSED, timeout=PASS_TIMEOUT_S)
    assert cloud.reason(handle) == NO_CLOUD
    launch = cloud.launch_of("real/spot-refused")
    assert launch is not None and launch.request_id is None
    cheapest = launch_options(spot_job("x", use_spot="true"), default_price_table())[0]
    assert launch.current.price.spot and launch.current == cheapest
    assert cloud.billed_launch(handle) is None


def test_the_spot_task_reaches_the_server_with_use_spot_and_recovery(sky: ModuleType) -> None:
    api = load_sky()
    job = spot_job("real/spot-task", use_spot="true")
    option = launch_options(job, default_price_table())[0]
    assert option.price.spot
    name = "starburst-spot-real-1"
    rid = api.jobs.launch(build_task(api, job, option, name), name=name)
    (payload,) = api.api_status(request_ids=[rid])
    assert _field(payload, "name") == LAUNCH_REQUEST
    body = json.loads(_field(payload, "request_body"))
    # the task travels as YAML: a header document with the name, then the task itself
    (task,) = [d for d in yaml.safe_load_all(body["task"]) if d and "resources" in d]
    assert task["name"] == name and task["run"] == "python train.py"
    assert task["resources"]["use_spot"] is True, task
    assert task["resources"]["job_recovery"] == SPOT_RECOVERY, task
    assert task["resources"]["infra"] == option.price.cloud
    assert task["resources"]["accelerators"] == {"A100": 1}
    assert settled(sky, rid) == "FAILED"
    with pytest.raises(Exception) as caught:
        api.get(rid)
    assert type(caught.value).__name__ == "NoCloudAccessError", caught.value
    failure = classify(caught.value)
    assert failure.reason == NO_CLOUD and failure.no_cloud


def _field(record: Any, name: str) -> Any:
    return record.get(name) if isinstance(record, dict) else getattr(record, name)
