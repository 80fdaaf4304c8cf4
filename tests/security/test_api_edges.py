"""Every input is validated at the edge (issue 10, items 4 and 5), on real PostgreSQL.

Each request below used to be accepted (and jam or overflow later) or answered 500 with the
SQL parameters — users' commands and env values — dumped to stderr.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from starburst.adapters.db.store import SqlStore
from starburst.api import create_app
from starburst.api.limits import MAX_BODY_BYTES
from starburst.core.lifecycle import JobState
from starburst.core.records import Role
from starburst.settings import Settings
from tests.api.conftest import LiveServer
from tests.support import http
from tests.support.databases import upgrade
from tests.support.postgres import drop_database, fresh_database

JOB = {"image": "python:3.11", "command": "python train.py", "gpus": 1}


@dataclass
class Api:
    store: SqlStore
    client: httpx.Client
    tokens: dict[str, str]

    def call(self, who: str, method: str, path: str, **kwargs: Any) -> Any:
        headers = {"Authorization": f"Bearer {self.tokens[who]}", **kwargs.pop("headers", {})}
        return self.client.request(method, path, headers=headers, **kwargs)


@pytest.fixture(scope="module")
def api(postgres_url: str) -> Iterator[Api]:
    """One database and server for the module: every test here only reads, or adds jobs."""
    database = fresh_database(postgres_url, "edges")
    upgrade(database)
    store = SqlStore.open(database)
    store.accounts.save_user("root", team="ops")
    store.accounts.save_user("alice", team="ml")
    store.accounts.save_user("bob")  # in no team
    store.accounts.ensure_team("rich")
    tokens = {
        "admin": store.accounts.issue_token("root", Role.ADMIN).secret,
        "alice": store.accounts.issue_token("alice", Role.USER).secret,
        "bob": store.accounts.issue_token("bob", Role.USER).secret,
    }
    app = create_app(Settings(database_url=database), store, auth=True)
    server = LiveServer(app).start()
    try:
        with http.client(base_url=server.url, timeout=30) as client:
            yield Api(store, client, tokens)
    finally:
        server.stop()
        store.close()
        drop_database(database)


@pytest.mark.parametrize(
    "change",
    [
        {"image": "py\x00thon"},
        {"name": "a\x00b"},
        {"command": "echo a\x00b"},
        {"env": {"TOKEN": "a\x00b"}},
        {"team": "m\x00l"},
        {"gpu_type": "a\x00"},
        {"command": ["echo", "a\x00b"]},
        {"command": "   "},
        {"command": "\ufeff\t\x1c"},
        {"declared_runtime_s": 1e308},
        {"cpus": 1e20},
        {"memory_mb": 1e300},
        {"gpus": 10**12},
        {"command": "x" * (64 * 1024 + 1)},
        {"env": {f"V{i}": "x" for i in range(65)}},
        {"env": {"1BAD": "x"}},
        {"env": {"V": "x" * (16 * 1024 + 1)}},
        {"cpus": True},
        {"declared_runtime_s": "60"},
        {"gpus": 2.5},
        {"gpus": "2"},
        {"gpus": True},
    ],
)
def test_bad_job_fields_are_422_naming_the_field(api: Api, change: dict[str, Any]) -> None:
    answer = api.call("alice", "POST", "/v1/jobs", json={**JOB, **change})
    assert answer.status_code == 422, answer.text
    assert next(iter(change)) in answer.json()["detail"]


def test_a_gpu_count_written_as_a_whole_float_is_that_count(api: Api) -> None:
    answer = api.call("alice", "POST", "/v1/jobs", json={**JOB, "gpus": 2.0})
    assert answer.status_code == 201, answer.text  # JSON Schema's integer includes 2.0
    assert answer.json()["gpus"] == 2


@pytest.mark.parametrize("raw", ["Infinity", "NaN", "-Infinity"])
def test_non_finite_json_numbers_are_422(api: Api, raw: str) -> None:
    """Python's JSON parser reads these literals; no number field may take them."""
    for field in ("declared_runtime_s", "cpus", "memory_mb"):
        body = f'{{"image": "i", "command": "c", "gpus": 1, "{field}": {raw}}}'
        answer = api.call(
            "alice", "POST", "/v1/jobs", content=body, headers={"Content-Type": "application/json"}
        )
        assert answer.status_code == 422, (field, answer.text)


def test_a_huge_body_is_413_before_anything_reads_it(api: Api) -> None:
    before = api.store.jobs.count(JobState.SUBMITTED)
    answer = api.call(
        "alice", "POST", "/v1/jobs", json={**JOB, "command": "x" * (MAX_BODY_BYTES + 1)}
    )
    assert answer.status_code == 413 and "larger than" in answer.json()["detail"]

    def chunks() -> Iterator[bytes]:  # no Content-Length: counted while it streams in
        yield b'{"image": "i", "gpus": 1, "command": "'
        for _ in range(MAX_BODY_BYTES // 65536 + 1):
            yield b"x" * 65536
        yield b'"}'

    streamed = api.call(
        "alice", "POST", "/v1/jobs", content=chunks(), headers={"Content-Type": "application/json"}
    )
    assert streamed.status_code == 413, streamed.text
    assert api.store.jobs.count(JobState.SUBMITTED) == before


@pytest.mark.parametrize(
    "path",
    [
        "/v1/jobs/a%00b",
        "/v1/jobs/a%00b/explain",
        "/v1/users/a%00b",
        "/v1/teams/m%00l/budget",
        "/v1/jobs?team=m%00l",
        "/v1/costs?user=%01x",
    ],
)
def test_control_bytes_in_path_ids_and_queries_are_422(api: Api, path: str) -> None:
    answer = api.call("admin", "GET", path)
    assert answer.status_code == 422 and "control character" in answer.json()["detail"]


def test_token_ids_beyond_int64_and_absurd_expiry_are_422(api: Api) -> None:
    assert api.call("admin", "DELETE", f"/v1/tokens/{2**63}").status_code == 422
    assert api.call("admin", "DELETE", f"/v1/tokens/{2**63 - 1}").status_code == 404
    issued = api.call("admin", "POST", "/v1/tokens", json={"user": "alice", "expires_in_s": 1e17})
    assert issued.status_code == 422 and "expires_in_s" in issued.json()["detail"]


def test_repeated_cost_groupings_are_deduplicated(api: Api) -> None:
    answer = api.call("admin", "GET", "/v1/costs", params={"by": "team,team,month,team"})
    assert answer.status_code == 200, answer.text
    assert answer.json()["by"] == ["team", "month"]


def test_a_user_submits_only_into_the_team_an_admin_assigned(api: Api) -> None:
    # bob is in no team: he may not pick one (and spend its budget) by naming it
    for team in ("rich", "brand-new-team"):
        refused = api.call("bob", "POST", "/v1/jobs", json={**JOB, "team": team})
        assert refused.status_code == 403 and "in no team" in refused.json()["detail"]
    assert api.call("bob", "POST", "/v1/jobs", json=JOB).json()["team"] is None
    assert api.call("alice", "POST", "/v1/jobs", json={**JOB, "team": "rich"}).status_code == 403
    assert api.call("alice", "POST", "/v1/jobs", json=JOB).json()["team"] == "ml"
    made = api.call("admin", "POST", "/v1/jobs", json={**JOB, "user": "bob", "team": "rich"})
    assert made.status_code == 201 and made.json()["team"] == "rich"


def test_a_user_cannot_change_any_tokens_role(api: Api) -> None:
    assert (
        api.call("alice", "POST", "/v1/tokens", json={"user": "alice", "role": "admin"}).status_code
        == 403
    )
    assert api.call("alice", "DELETE", "/v1/tokens/1").status_code == 403
    assert api.call("alice", "GET", "/v1/whoami").json()["role"] == "user"


def test_an_unexpected_error_is_a_500_whose_log_has_the_real_exception_and_no_sql_params(
    api: Api, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert api.store.engine.hide_parameters  # statement parameters hold commands and env

    def broken(*_: object, **__: object) -> object:
        raise RuntimeError("the store broke")

    monkeypatch.setattr(api.store.accounts, "user", broken)
    with caplog.at_level(logging.ERROR, logger="starburst.api"):
        answer = api.call("admin", "GET", "/v1/users/alice")
        again = api.call("admin", "GET", "/v1/whoami")  # the same keep-alive connection
    assert answer.status_code == 500 and "RuntimeError" in answer.json()["detail"]
    assert again.status_code == 200
    (record,) = [r for r in caplog.records if r.name == "starburst.api"]
    assert record.exc_info is not None and record.exc_info[0] is RuntimeError
    assert "NoneType: None" not in caplog.text


def test_openapi_declares_every_error_with_the_body_we_send(api: Api) -> None:
    spec = api.client.get("/openapi.json").json()
    schemas = spec["components"]["schemas"]
    assert schemas["ValidationErrorOut"]["properties"]["detail"]["type"] == "string"
    assert "HTTPValidationError" not in schemas
    expected = {
        ("post", "/v1/jobs"): {"400", "401", "403", "409", "413", "422", "503"},
        ("get", "/v1/jobs/{job_id}"): {"401", "404", "422", "503"},
        ("post", "/v1/jobs/{job_id}/cancel"): {"401", "403", "404", "409", "422", "503"},
        ("delete", "/v1/tokens/{token_id}"): {"401", "403", "404", "422", "503"},
        ("get", "/readyz"): {"503"},
    }
    for (method, path), codes in expected.items():
        declared = set(spec["paths"][path][method]["responses"])
        assert codes <= declared, (method, path, codes - declared)
    detail = spec["paths"]["/v1/jobs/{job_id}"]["get"]["responses"]["404"]
    assert detail["content"]["application/json"]["schema"]["$ref"].endswith("/ErrorOut")


def _keys(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            yield key
            yield from _keys(value)
    elif isinstance(node, list):
        for value in node:
            yield from _keys(value)


def test_every_bound_the_api_enforces_is_a_json_schema_keyword(api: Api) -> None:
    """A bound pydantic wrote as its own ``ge``/``le`` (not ``minimum``/``maximum``) told no
    client of it: the fuzzer sent ``array_limit: 0``, valid by the document, refused 422."""
    spec = api.client.get("/openapi.json").json()
    assert not {"ge", "le", "gt", "lt"} & set(_keys(spec))
    limit = spec["components"]["schemas"]["JobSubmit"]["properties"]["array_limit"]
    assert {"type": "integer", "minimum": 1, "maximum": 10_000} in limit["anyOf"]
    refused = api.call("alice", "POST", "/v1/jobs", json={**JOB, "array": "a", "array_limit": 0})
    assert refused.status_code == 422 and "array_limit" in refused.text
