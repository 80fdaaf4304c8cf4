"""Admins list and show users, teams and tokens (never a secret), over REST and through the
admin CLI on the same database; the API's name rule holds in the CLI too. On SQLite and
PostgreSQL, against the served app."""

from __future__ import annotations

import pytest

from starburst.core.records import Role
from tests.api.test_cli import run

BOTH = pytest.mark.parametrize(
    "db_url", ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)], indirect=True
)


@BOTH
def test_rest_lists_users_teams_and_tokens_without_secrets(api) -> None:  # type: ignore[no-untyped-def]
    root = api.client("root")
    issued = root.post("/v1/tokens", json={"user": "alice", "label": "laptop"}).json()
    assert root.delete(f"/v1/tokens/{issued['id']}").status_code == 204

    users = root.get("/v1/users").json()
    assert [u["name"] for u in users] == ["alice", "bob", "fin", "root"]
    assert root.get("/v1/users", params={"team": "ml"}).json() == [
        {"name": "alice", "team": "ml", "email": None}
    ]
    teams = root.get("/v1/teams").json()
    assert {"name": "ml", "members": ["alice"]} in teams
    assert root.get("/v1/teams/vision").json() == {"name": "vision", "members": ["bob"]}
    assert root.get("/v1/teams/nope").status_code == 404

    listed = root.get("/v1/tokens")
    assert listed.status_code == 200
    for secret in (*api.tokens.values(), issued["secret"]):
        assert secret not in listed.text and secret[:12] not in listed.text
    mine = root.get("/v1/tokens", params={"user": "alice"}).json()
    revoked = next(t for t in mine if t["id"] == issued["id"])
    assert revoked["label"] == "laptop" and revoked["role"] == "user"
    assert revoked["revoked_at"] is not None and revoked["live"] is False
    assert root.get("/v1/users", params={"team": "bad name"}).status_code == 422
    made = root.put("/v1/teams/bad%20name/budget", json={"monthly_limit": "10"})
    assert made.status_code == 422 and "bad name" not in api.store.accounts.teams()
    for who in ("alice", "fin"):
        client = api.client(who)
        assert [
            client.get(path).status_code
            for path in ("/v1/users", "/v1/teams", "/v1/teams/ml", "/v1/tokens")
        ] == [403] * 4


@BOTH
def test_admin_cli_lists_what_the_api_made(api) -> None:  # type: ignore[no-untyped-def]
    api.client("root").post("/v1/users", json={"name": "carol", "team": "ml"})
    issued = api.store.accounts.issue_token("carol", Role.FINANCE, label="reports")
    url = ["--url", api.db_url]

    users = run(["admin", "users", "list", *url])
    assert users.exit_code == 0 and "carol" in users.stdout and "bob" in users.stdout
    ml = run(["admin", "users", "list", "--team", "ml", *url]).stdout
    assert "carol" in ml and "bob" not in ml
    teams = run(["admin", "teams", "list", *url]).stdout
    assert any(line.split() == ["ml", "alice,carol"] for line in teams.splitlines()), teams
    shown = run(["admin", "teams", "show", "vision", *url])
    assert shown.exit_code == 0 and "bob" in shown.stdout
    assert run(["admin", "teams", "show", "nope", *url]).exit_code == 1

    tokens = run(["admin", "tokens", "list", "--user", "carol", *url])
    assert tokens.exit_code == 0 and "reports" in tokens.stdout and "finance" in tokens.stdout
    assert "live" in tokens.stdout
    everything = run(["admin", "tokens", "list", *url]).stdout
    for secret in (*api.tokens.values(), issued.secret):
        assert secret not in everything and secret[:12] not in everything


@BOTH
@pytest.mark.parametrize(
    ("args", "body"),
    [
        (["users", "add", "bad name"], {"name": "bad name"}),
        (["users", "add", "a\x01b"], {"name": "a\x01b"}),
        (["users", "add", "dave", "--team", "x y"], {"name": "dave", "team": "x y"}),
        (["users", "add", "dave", "--email", "d\n@x"], {"name": "dave", "email": "d\n@x"}),
        (["teams", "add", "bad\tteam"], {"name": "bad\tteam"}),
        (["budgets", "set", "bad team", "10"], {"name": "bad team"}),
    ],
)
def test_admin_cli_refuses_names_the_api_refuses(
    api, args: list[str], body: dict[str, str]
) -> None:  # type: ignore[no-untyped-def]
    from starburst.cli.main import main

    path = "/v1/teams" if args[0] != "users" else "/v1/users"
    assert api.client("root").post(path, json=body).status_code == 422
    before = ([u.name for u in api.store.accounts.users()], api.store.accounts.teams())
    with pytest.raises(SystemExit) as done:
        main(["admin", *args, "--url", api.db_url])
    assert done.value.code == 2
    after = ([u.name for u in api.store.accounts.users()], api.store.accounts.teams())
    assert after == before
