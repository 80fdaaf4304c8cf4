"""The fake SDK (``tests/cloud/fake_sky.py``) and a real SkyPilot API server answer alike.

Every test runs twice: against the fake, and against the real server of this session (no
cloud enabled, no managed job ever launched). What the real server was found to do that the
fake did not (each now done by the fake too): request names are ``sky.jobs.*``; queue and
cancel fail with ``ClusterNotUpError`` while the jobs controller is down; ``tail_logs``
returns None; a launch with no cloud fails with ``NoCloudAccessError`` in colour codes; the
payload of a launch request carries the launch name in its body.
"""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from starburst.adapters.skypilot import SkyApi, classify, load_sky
from starburst.adapters.skypilot.outcomes import NO_CLOUD
from starburst.adapters.skypilot.requests import LAUNCH_REQUEST, QUEUE_FIELDS
from tests.cloud.fake_sky import FakeSky
from tests.skypilot_real.conftest import settled
from tests.skypilot_real.server import SkyServer


@pytest.fixture(params=["fake", "real"])
def api(request: pytest.FixtureRequest) -> SkyApi:
    if request.param == "fake":
        fake = FakeSky()
        fake.enabled = []  # as `sky check` finds it here: nothing
        return fake  # type: ignore[return-value]
    request.getfixturevalue("sky")  # the session's server, this process pointed at it
    return load_sky()


def failure_of(api: SkyApi, request_id: str) -> BaseException:
    assert settled(api, request_id) == "FAILED"
    with pytest.raises(Exception) as caught:
        api.get(request_id)
    return caught.value


def test_request_ids_are_strings_polled_to_an_end(api: SkyApi) -> None:
    rid = api.enabled_clouds()
    assert isinstance(rid, str) and rid
    assert settled(api, rid) == "SUCCEEDED"
    assert api.get(rid) == []  # no infra enabled
    assert api.api_status(request_ids=["no-such-request-0000"]) == []


def test_the_queue_of_a_server_that_never_launched_is_not_up(api: SkyApi) -> None:
    rid = api.jobs.queue_v2(refresh=False, fields=QUEUE_FIELDS, name_match="starburst-")
    error = failure_of(api, rid)
    assert type(error).__name__ == "ClusterNotUpError"
    assert "No in-progress managed jobs" in str(error)
    assert classify(error).no_managed_jobs


def test_cancel_on_an_empty_queue_is_not_up_either(api: SkyApi) -> None:
    error = failure_of(api, api.jobs.cancel(job_ids=[1]))
    assert type(error).__name__ == "ClusterNotUpError"


def test_tail_logs_of_no_job_returns_none_and_writes_nothing(api: SkyApi) -> None:
    out = io.StringIO()
    assert api.jobs.tail_logs(job_id=1, follow=False, tail=10, output_stream=out) is None
    assert out.getvalue() == ""


def test_a_launch_with_no_cloud_enabled_fails_as_no_cloud_access(api: SkyApi) -> None:
    # a CPU-only task: the server validates it without a GPU catalog (which is downloaded)
    task = api.Task(name="starburst-agree-0", run="echo hi", resources=api.Resources(cpus="1+"))
    rid = api.jobs.launch(task, name="starburst-agree-0")
    (payload,) = api.api_status(request_ids=[rid])
    assert _field(payload, "name") == LAUNCH_REQUEST
    assert json.loads(_field(payload, "request_body"))["name"] == "starburst-agree-0"
    error = failure_of(api, rid)
    assert type(error).__name__ == "NoCloudAccessError"
    assert "\x1b[" in str(error)  # colour codes, which the reason must not carry
    failure = classify(error)
    assert failure.reason == NO_CLOUD and failure.no_cloud


def test_the_server_says_who_it_is(api: SkyApi) -> None:
    info = api.api_info()
    assert str(_field(info, "status")).lower().endswith("healthy")


def _field(record: Any, name: str) -> Any:
    return record.get(name) if isinstance(record, dict) else getattr(record, name)


def test_the_cli_sees_no_infra(sky_server: SkyServer) -> None:
    done = sky_server.cli("check", timeout=300)
    assert "No infra" in done.stdout + done.stderr or "disabled" in done.stdout.lower()
