"""Per-user and per-team submission limits, enforced by the API (issue 38, finding 5).

Before the fix one user submitted 5,000 waiting jobs and a 10,000-deep ``after`` chain (all
201), a 100,000-element array was refused by the CLI only, and every other user's
``GET /v1/queue`` loaded the whole backlog. Here, on a real PostgreSQL with small limits,
each limit answers 429 or 422 naming its setting, and ``/v1/queue`` reads only what it shows.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from starburst.adapters.db.store import SqlStore
from starburst.api import create_app
from starburst.cli.arrays import MAX_ELEMENTS
from starburst.core.records import JobSpec, Role
from starburst.settings import Settings
from tests.api.conftest import LiveServer
from tests.support import http
from tests.support.databases import upgrade
from tests.support.postgres import drop_database, fresh_database

LIMITS = {
    "max_waiting_jobs_per_user": 5,
    "max_waiting_jobs_per_team": 8,
    "max_array_size": 4,
    "max_dependency_depth": 3,
}
JOB = {"command": "true", "gpus": 1}
USERS = {"alice": "ml", "bob": "ml", "carol": "vision", "dave": "vision", "eve": None}


@dataclass
class Api:
    store: SqlStore
    client: httpx.Client
    tokens: dict[str, str]
    rows_read: list[int]

    def submit(self, who: str, **fields: Any) -> httpx.Response:
        headers = {"Authorization": f"Bearer {self.tokens[who]}"}
        key = fields.pop("key", None)
        if key is not None:
            headers["Idempotency-Key"] = key
        return self.client.post("/v1/jobs", json={**JOB, **fields}, headers=headers)

    def get(self, who: str, path: str) -> httpx.Response:
        return self.client.get(path, headers={"Authorization": f"Bearer {self.tokens[who]}"})


@pytest.fixture
def api(postgres_url: str) -> Iterator[Api]:
    database = fresh_database(postgres_url, "limits")
    upgrade(database)
    store = SqlStore.open(database)
    tokens = {}
    for user, team in USERS.items():
        store.accounts.save_user(user, team=team)
        tokens[user] = store.accounts.issue_token(user, Role.USER).secret
    rows_read: list[int] = []
    reads = store.jobs.queue

    def counted(**kwargs: Any) -> Any:  # every job row /v1/queue reads
        page = reads(**kwargs)
        rows_read.append(len(page.jobs))
        return page

    store.jobs.queue = counted  # type: ignore[method-assign]
    app = create_app(Settings(database_url=database, **LIMITS), store, auth=True)
    server = LiveServer(app).start()
    try:
        with http.client(base_url=server.url, timeout=30) as client:
            yield Api(store, client, tokens, rows_read)
    finally:
        server.stop()
        store.close()
        drop_database(database)


def test_a_user_past_their_waiting_limit_gets_429_naming_it(api: Api) -> None:
    codes = [api.submit("alice").status_code for _ in range(5)]
    assert codes == [201] * 5
    refused = api.submit("alice")
    assert refused.status_code == 429
    assert "max_waiting_jobs_per_user" in refused.json()["detail"]
    assert refused.headers.get("retry-after")
    assert api.submit("eve").status_code == 201  # others are not held back


def test_concurrent_submissions_never_pass_the_limit(api: Api) -> None:
    results: list[int] = []
    lock = threading.Lock()

    def one() -> None:
        code = api.submit("carol").status_code
        with lock:
            results.append(code)

    threads = [threading.Thread(target=one) for _ in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert sorted(results) == [201] * 5 + [429] * 7


def test_a_team_past_its_waiting_limit_gets_429_naming_it(api: Api) -> None:
    assert [api.submit("alice").status_code for _ in range(5)] == [201] * 5
    assert [api.submit("bob").status_code for _ in range(3)] == [201] * 3
    refused = api.submit("bob")
    assert refused.status_code == 429
    assert "max_waiting_jobs_per_team" in refused.json()["detail"]


def test_an_array_past_its_size_gets_422_and_repeats_are_not_refused(api: Api) -> None:
    made = [api.submit("eve", array="sweep", key=f"k-{i}", name=f"s-{i}") for i in range(4)]
    assert [r.status_code for r in made] == [201] * 4
    refused = api.submit("eve", array="sweep", key="k-4")
    assert refused.status_code == 422
    assert "max_array_size" in refused.json()["detail"]
    again = api.submit("eve", array="sweep", key="k-2", name="s-2")  # a half-failed re-run
    assert again.status_code == 200 and again.json()["id"] == made[2].json()["id"]


def test_a_chain_deeper_than_the_limit_gets_422(api: Api) -> None:
    previous = api.submit("eve").json()["id"]
    for _ in range(3):  # depths 1, 2, 3
        answer = api.submit("eve", after=[previous])
        assert answer.status_code == 201, answer.text
        previous = answer.json()["id"]
    refused = api.submit("eve", after=[previous])
    assert refused.status_code == 422
    assert "max_dependency_depth" in refused.json()["detail"]


def test_the_default_array_limit_is_the_clis() -> None:
    assert Settings().max_array_size == MAX_ELEMENTS
    assert Settings().max_waiting_jobs_per_user >= MAX_ELEMENTS  # one array fits


def test_the_queue_costs_what_it_shows_not_others_backlog(api: Api) -> None:
    api.store.submissions.submit_many([JobSpec(gpus=1, user="dave", team="vision")] * 300)
    api.rows_read.clear()
    view = api.get("eve", "/v1/queue")
    assert view.status_code == 200
    assert view.json() == {"total": 300, "held": 0, "jobs": [], "running": None}
    assert sum(api.rows_read) == 0  # eve waits for nothing: none of dave's jobs is read
    mine = api.submit("eve").json()["id"]
    api.rows_read.clear()
    view = api.get("eve", "/v1/queue").json()
    assert [e["position"] for e in view["jobs"] if e["mine"]] == [301]
    assert [e["id"] for e in view["jobs"]][-1] == mine
    assert sum(api.rows_read) <= 301 + 1  # the line up to her job, and her own
