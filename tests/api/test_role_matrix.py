"""Roles that hold: every route of the app × every role, over HTTP on PostgreSQL.

``RULES`` names, for each route the app serves, who may call it; the test enumerates the
app's routes, so a route added without a rule fails here until someone decides who may call
it. *Allowed* means the role check lets the call through (any answer but 401/403: a 404 for
a missing budget or a 422 for an empty body is past the check); *denied* is 401 without a
token and 403 with one. Finance is read-only: no submit, cancel or job output, no command in
any job view; ``/metrics`` carries team spend, so it needs a finance or admin token.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from starburst.core.failure import with_output
from starburst.core.lifecycle import JobState
from starburst.core.records import JobSpec, Role
from tests.api.test_cli import run

PG = pytest.mark.parametrize(
    "db_url", [pytest.param("postgresql", marks=pytest.mark.postgres)], indirect=True
)
ROLES = ("anonymous", "user", "finance", "admin")
CALLERS = {"anonymous": None, "user": "alice", "finance": "fin", "admin": "root"}
EVERYONE = frozenset(ROLES)
SIGNED_IN = frozenset({"user", "finance", "admin"})
WRITERS = frozenset({"user", "admin"})
READERS = frozenset({"finance", "admin"})
ADMINS = frozenset({"admin"})

#: (method, path) → the roles the route lets through
#: a real file for each static route, so the call reaches the file and not a 404
STATIC_FILES = {
    "/ui/static/{name}": "/ui/static/dashboard.js",
    "/docs/static/{name}": "/docs/static/swagger-init.js",
}

RULES: dict[tuple[str, str], frozenset[str]] = {
    ("GET", "/openapi.json"): EVERYONE,
    ("GET", "/docs"): EVERYONE,
    ("GET", "/docs/static/{name}"): EVERYONE,
    ("GET", "/healthz"): EVERYONE,
    ("GET", "/readyz"): EVERYONE,
    ("GET", "/ui"): EVERYONE,
    ("GET", "/ui/"): EVERYONE,
    ("GET", "/ui/static/{name}"): EVERYONE,
    ("GET", "/ui/tuning"): EVERYONE,
    ("GET", "/ui/tuning/tuning.js"): EVERYONE,
    ("GET", "/metrics"): READERS,
    ("POST", "/v1/jobs"): WRITERS,
    ("POST", "/v1/jobs/quote"): WRITERS,
    ("GET", "/v1/jobs"): SIGNED_IN,
    ("GET", "/v1/jobs/{job_id:path}/explain"): SIGNED_IN,
    ("POST", "/v1/jobs/{job_id:path}/cancel"): WRITERS,
    ("POST", "/v1/jobs/{job_id:path}/hold"): WRITERS,
    ("POST", "/v1/jobs/{job_id:path}/release"): WRITERS,
    ("POST", "/v1/jobs/{job_id:path}/requeue"): WRITERS,
    ("PATCH", "/v1/jobs/{job_id:path}"): WRITERS,
    ("GET", "/v1/jobs/{job_id:path}/logs"): WRITERS,
    ("GET", "/v1/jobs/{job_id:path}"): SIGNED_IN,
    ("GET", "/v1/arrays/{array:path}"): SIGNED_IN,
    ("POST", "/v1/arrays/{array:path}/cancel"): WRITERS,
    ("GET", "/v1/queue"): SIGNED_IN,
    ("GET", "/v1/nodes"): SIGNED_IN,
    ("GET", "/v1/costs"): SIGNED_IN,
    ("GET", "/v1/costs/savings"): READERS,
    ("GET", "/v1/costs/budgets"): SIGNED_IN,
    ("GET", "/v1/whoami"): SIGNED_IN,
    ("POST", "/v1/users"): ADMINS,
    ("GET", "/v1/users"): ADMINS,
    ("GET", "/v1/teams"): ADMINS,
    ("GET", "/v1/teams/{team}"): ADMINS,
    ("GET", "/v1/tokens"): ADMINS,
    ("GET", "/v1/users/{name}"): frozenset({"user", "admin"}),  # alice's own record
    ("POST", "/v1/teams"): ADMINS,
    ("POST", "/v1/tokens"): ADMINS,
    ("DELETE", "/v1/tokens/{token_id}"): ADMINS,
    ("PUT", "/v1/teams/{team}/budget"): ADMINS,
    ("GET", "/v1/teams/{team}/budget"): SIGNED_IN,  # alice's own team
    ("POST", "/v1/tuning/runs"): ADMINS,
    ("GET", "/v1/tuning/settings"): ADMINS,
    ("POST", "/v1/tuning/settings"): ADMINS,
}


def routes(app: Any) -> set[tuple[str, str]]:
    """Every (method, path) the app answers, included routers flattened (HEAD aside: it
    goes with GET)."""

    def walk(found: list[Any], prefix: str) -> Any:
        for route in found:
            if hasattr(route, "original_router"):  # an included router (FastAPI ≥ 0.16x)
                yield from walk(route.original_router.routes, prefix + route.include_context.prefix)
            else:
                for method in getattr(route, "methods", None) or ():
                    if method != "HEAD":
                        yield method, prefix + route.path

    return set(walk(list(app.routes), ""))


def test_every_route_has_a_rule(db_url, clock, open_store) -> None:  # type: ignore[no-untyped-def]
    from starburst.api import create_app
    from starburst.settings import Settings

    app = create_app(Settings(database_url=db_url), open_store(db_url), clock=clock)
    served = routes(app)
    assert served - set(RULES) == set(), "a route without a rule: say who may call it"
    assert set(RULES) - served == set(), "a rule for a route the app no longer serves"


@PG
def test_every_route_lets_through_only_its_roles(api) -> None:  # type: ignore[no-untyped-def]
    job = api.store.submissions.submit(
        JobSpec(gpus=0, user="alice", team="ml", command="echo secret-arg"), at=api.clock.now()
    ).job.id
    spare = api.store.accounts.issue_token("bob", Role.USER).id
    values = {
        "{job_id:path}": job,
        "{array:path}": "sweep",
        "{name}": "alice",
        "{team}": "ml",
        "{token_id}": str(spare),
    }
    wrong: list[str] = []
    for (method, template), allowed in sorted(RULES.items()):
        path = STATIC_FILES.get(template, template)
        for key, value in values.items():
            path = path.replace(key, value)
        body = {} if method in ("POST", "PUT") else None
        for role in ROLES:
            answer = api.client(CALLERS[role]).request(method, path, json=body)
            denied = answer.status_code in (401, 403)
            expected = 401 if role == "anonymous" else 403
            if (role in allowed) == denied or (denied and answer.status_code != expected):
                wrong.append(f"{method} {template} as {role}: {answer.status_code}")
    assert wrong == []


@PG
def test_finance_reads_jobs_without_commands_and_changes_nothing(api) -> None:  # type: ignore[no-untyped-def]
    job = api.store.submissions.submit(
        JobSpec(gpus=0, user="alice", team="ml", command="train --key sk-SECRET"),
        at=api.clock.now(),
    ).job.id
    api.store.lifecycle.transition(
        job,
        JobState.FAILED,
        reason=with_output("exit code 3", "sk-SECRET leaked"),
        actor="controller",
        at=api.clock.now(),
    )
    fin = api.client("fin")
    seen = fin.get(f"/v1/jobs/{job}").json()
    assert seen["command"] is None and seen["failure"] == "exit code 3"
    explained = fin.get(f"/v1/jobs/{job}/explain").text
    assert "sk-SECRET" not in explained
    assert "sk-SECRET" in api.client("alice").get(f"/v1/jobs/{job}").text  # the owner's view
    env = {"STARBURST_SERVER": api.url, "STARBURST_TOKEN": api.tokens["fin"]}
    made = run(["submit", "--gpus", "0", "--", "echo", "hi"], env)
    assert made.exit_code == 1 and made.stderr.count("\n") == 1, made.stderr
    assert "read-only" in made.stderr or "needs admin or user" in made.stderr
    assert api.store.jobs.queue(limit=10, states=tuple(JobState)).jobs[1:] == []
    for verb in (["cancel", job], ["logs", job]):
        refused = run(verb, env)
        assert refused.exit_code == 1 and "HTTP 403" in refused.stderr, refused.stderr


@PG
def test_metrics_show_no_spend_without_a_finance_or_admin_token(  # type: ignore[no-untyped-def]
    db_url, clock, resources, open_store, serve
) -> None:
    from prometheus_client import CollectorRegistry, Gauge

    from tests.api.conftest import build_api

    registry = CollectorRegistry()
    spend = Gauge("starburst_team_spend", "spend", ["team"], registry=registry)
    spend.labels(team="ml").set(123.45)
    api = build_api(db_url, open_store(db_url), clock, resources, serve, metrics_registry=registry)
    for who, status in ((None, 401), ("alice", 403)):
        answer = api.client(who).get("/metrics")
        assert answer.status_code == status and "123.45" not in answer.text
    for who in ("fin", "root"):
        assert 'starburst_team_spend{team="ml"} 123.45' in api.client(who).get("/metrics").text


@PG
def test_the_dashboard_keeps_its_token_out_of_persistent_storage(api, browser) -> None:  # type: ignore[no-untyped-def]
    page_answer = api.client(None).get("/ui")
    policy = page_answer.headers["content-security-policy"]
    assert "default-src 'none'" in policy and "script-src 'self'" in policy
    assert "'unsafe-inline'" not in policy and "frame-ancestors 'none'" in policy
    for path in ("/ui/static/dashboard.js", "/ui/tuning", "/ui/tuning/tuning.js"):
        assert api.client(None).get(path).headers["content-security-policy"] == policy
    context = browser.new_context()
    page = context.new_page()
    page.goto(f"{api.url}/healthz")  # the origin, to plant what an older page left
    page.evaluate("window.localStorage.setItem('starburst-token', 'sb_left-by-an-old-page')")
    page.goto(f"{api.url}/ui#token={api.tokens['fin']}")
    page.wait_for_selector("body[data-loaded='true']", timeout=30_000)
    stored = json.loads(
        page.evaluate("JSON.stringify([{...window.localStorage}, {...window.sessionStorage}])")
    )
    assert stored[0] == {}  # nothing on disk, the old page's token removed too
    assert stored[1] == {"starburst-token": api.tokens["fin"]}
    assert "#token" not in page.url
    page.click("#tuning-link")  # the same tab keeps it for the tuning page
    page.wait_for_load_state()
    assert page.evaluate("window.sessionStorage.getItem('starburst-token')") == api.tokens["fin"]
    context.close()
