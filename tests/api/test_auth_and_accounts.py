"""Authentication, roles and the admin resources (users, teams, tokens, budgets)."""

from __future__ import annotations

from decimal import Decimal

from starburst.core.records import CostEntry, JobSpec

SPEC = {"image": "img", "command": "true", "gpus": 1}


def test_missing_malformed_and_unknown_tokens_are_401(api):  # type: ignore[no-untyped-def]
    for client in (api.client(None), api.client(token="sb_not-a-real-token")):
        for answer in (
            client.get("/v1/jobs"),
            client.post("/v1/jobs", json=SPEC),
            client.get("/v1/costs"),
        ):
            assert answer.status_code == 401
            assert answer.headers["www-authenticate"] == "Bearer"
            assert "token" in answer.json()["detail"]
    basic = api.client(None).get("/v1/jobs", headers={"Authorization": "Basic YTpi"})
    assert basic.status_code == 401 and "Bearer" in basic.json()["detail"]


def test_revoked_and_expired_tokens_stop_working(api):  # type: ignore[no-untyped-def]
    from starburst.core.records import Role

    root = api.client("root")
    issued = root.post("/v1/tokens", json={"user": "alice", "expires_in_s": 60}).json()
    temp = api.client(token=issued["secret"])
    assert temp.get("/v1/whoami").json() == {
        "user": "alice",
        "team": "ml",
        "role": "user",
        "auth": True,
    }
    api.clock.advance(61)
    assert temp.get("/v1/whoami").status_code == 401
    other = api.store.accounts.issue_token("alice", Role.USER)
    assert root.delete(f"/v1/tokens/{other.id}").status_code == 204
    assert api.client(token=other.secret).get("/v1/whoami").status_code == 401
    assert root.delete(f"/v1/tokens/{other.id}").status_code == 404


def test_admin_endpoints_refuse_users_and_finance(api):  # type: ignore[no-untyped-def]
    for who in ("alice", "fin"):
        client = api.client(who)
        answers = [
            client.post("/v1/users", json={"name": "eve"}),
            client.post("/v1/tokens", json={"user": who, "role": "admin"}),
            client.post("/v1/teams", json={"name": "x"}),
            client.put("/v1/teams/ml/budget", json={"monthly_limit": "1"}),
        ]
        assert [a.status_code for a in answers] == [403] * 4
        assert "needs admin" in answers[1].json()["detail"]
    assert api.store.accounts.user("eve") is None


def test_admin_creates_a_user_issues_a_token_and_it_works(api):  # type: ignore[no-untyped-def]
    root = api.client("root")
    made = root.post("/v1/users", json={"name": "carol", "team": "nlp", "email": "c@x.org"})
    assert made.status_code == 201 and made.json()["team"] == "nlp"
    token = root.post("/v1/tokens", json={"user": "carol", "role": "finance"})
    assert token.status_code == 201 and token.json()["secret"].startswith("sb_")
    carol = api.client(token=token.json()["secret"])
    assert carol.get("/v1/whoami").json()["role"] == "finance"
    assert carol.get("/v1/users/carol").json()["email"] == "c@x.org"
    assert api.client("alice").get("/v1/users/carol").status_code == 403
    missing = root.post("/v1/tokens", json={"user": "nobody"})
    assert missing.status_code == 404 and "no user nobody" in missing.json()["detail"]
    assert root.get("/v1/users/nobody").json() == {"detail": "no user nobody"}
    bad_role = root.post("/v1/tokens", json={"user": "carol", "role": "god"})
    assert bad_role.status_code == 422 and "role" in bad_role.json()["detail"]
    bad_name = root.post("/v1/users", json={"name": "a b"})
    assert bad_name.status_code == 422 and "name" in bad_name.json()["detail"]


def test_team_budget_shows_the_months_spending(api):  # type: ignore[no-untyped-def]
    root = api.client("root")
    assert root.get("/v1/teams/ml/budget").status_code == 404
    job = api.store.submissions.submit(JobSpec(gpus=1, user="alice", team="ml")).job.id
    now = api.clock.now()
    api.store.ledger.record_costs(
        [
            CostEntry(job, now - 3600, now, Decimal("30.5"), "aws"),
            CostEntry(job, now - 90 * 86400, now - 89 * 86400, Decimal("999"), "aws"),
        ]
    )
    put = root.put("/v1/teams/ml/budget", json={"monthly_limit": "100", "currency": "usd"})
    assert put.status_code == 200
    budget = api.client("alice").get("/v1/teams/ml/budget").json()
    assert budget == {
        "team": "ml",
        "monthly_limit": "100.00",
        "currency": "USD",
        "month": budget["month"],
        "spent": "30.50",
        "remaining": "69.50",
        "exhausted": False,
        "forecast": budget["forecast"],
        "used_fraction": 0.305,
        "alerts": [],
        "warning": None,
    }
    assert api.client("bob").get("/v1/teams/ml/budget").status_code == 403
    assert api.client("fin").get("/v1/teams/ml/budget").status_code == 200
    negative = root.put("/v1/teams/ml/budget", json={"monthly_limit": "-5"})
    assert negative.status_code == 422 and "monthly_limit" in negative.json()["detail"]


def test_without_auth_every_request_acts_as_the_local_admin(
    db_url,
    clock,
    resources,  # type: ignore[no-untyped-def]
    open_store,
    serve,
):
    from tests.api.conftest import build_api

    api = build_api(db_url, open_store(db_url), clock, resources, serve, auth=False)
    anyone = api.client(None)
    assert anyone.get("/v1/whoami").json() == {
        "user": "local",
        "team": None,
        "role": "admin",
        "auth": False,
    }
    job = anyone.post("/v1/jobs", json=SPEC).json()
    assert job["user"] == "local" and anyone.get("/v1/costs").status_code == 200
