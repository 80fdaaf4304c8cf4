"""``map_identity``: Kubernetes users and groups become Starburst callers by the admin's
grants (the rules of ``starburst.core.identity``), and the settings that hold the grants."""

from __future__ import annotations

import pytest

from starburst.core.identity import Grant, IdentityMap, IdentityRefused, map_identity
from starburst.core.records import Principal, Role
from starburst.settings import SettingsError, load_settings

GROUPS = {
    "ml-team": Grant(team="ml", role=Role.USER),
    "vision-team": Grant(team="vision"),
    "starburst-admins": Grant(role=Role.ADMIN),
    "finance": Grant(role=Role.FINANCE),
}
MAP = IdentityMap(
    users={"system:serviceaccount:ci:runner": Grant(user="ci-bot", team="infra")},
    groups=GROUPS,
)


def test_a_group_gives_its_team_and_role() -> None:
    assert map_identity("alice@example.org", ["ml-team", "system:authenticated"], MAP) == (
        Principal(0, "alice@example.org", "ml", Role.USER)
    )


def test_the_highest_role_wins_and_the_first_listed_team() -> None:
    caller = map_identity("bob", ["finance", "vision-team", "ml-team", "starburst-admins"], MAP)
    assert (caller.role, caller.team) == (Role.ADMIN, "ml")  # ml-team is listed before vision
    assert map_identity("fin", ["finance", "ml-team"], MAP).role is Role.FINANCE
    assert map_identity("carol", ["vision-team"], MAP).role is Role.USER  # no role named


def test_the_user_grant_wins_over_groups_and_names_the_user() -> None:
    caller = map_identity("system:serviceaccount:ci:runner", ["starburst-admins"], MAP)
    assert caller == Principal(0, "ci-bot", "infra", Role.ADMIN)  # role still from the group


def test_a_service_account_keeps_its_name_with_dots() -> None:
    groups = IdentityMap(groups={"system:serviceaccounts:ml": Grant(team="ml")})
    caller = map_identity("system:serviceaccount:ml:trainer", ["system:serviceaccounts:ml"], groups)
    assert caller.user == "system.serviceaccount.ml.trainer" and caller.team == "ml"


def test_an_unmapped_identity_is_refused_naming_it_and_the_settings() -> None:
    with pytest.raises(IdentityRefused) as refused:
        map_identity("eve", ["system:authenticated", "interns"], MAP)
    message = str(refused.value)
    assert "'eve'" in message and "interns" in message
    assert "kubernetes_auth_users" in message and "kubernetes_auth_groups" in message
    everyone = IdentityMap(groups={"system:authenticated": Grant()})
    assert map_identity("eve", ["system:authenticated"], everyone).role is Role.USER


def test_a_name_that_breaks_the_account_rule_is_refused_unless_mapped() -> None:
    everyone = IdentityMap(groups={"system:authenticated": Grant()})
    with pytest.raises(IdentityRefused, match=r"no valid Starburst name.*kubernetes_auth_users"):
        map_identity("Eve Smith", ["system:authenticated"], everyone)
    named = IdentityMap(users={"Eve Smith": Grant(user="eve")}, groups=everyone.groups)
    assert map_identity("Eve Smith", ["system:authenticated"], named).user == "eve"


def test_the_settings_hold_the_grants_from_json_variables(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("STARBURST_KUBERNETES_AUTH", "true")
    monkeypatch.setenv(
        "STARBURST_KUBERNETES_AUTH_GROUPS",
        '{"ml-team": {"team": "ml", "role": "user"}, "admins": {"role": "admin"}}',
    )
    monkeypatch.setenv("STARBURST_KUBERNETES_AUTH_USERS", '{"k:u": {"user": "u"}}')
    settings = load_settings(auth=True)
    assert settings.identity_map() == IdentityMap(
        users={"k:u": Grant(user="u")},
        groups={"ml-team": Grant(team="ml", role=Role.USER), "admins": Grant(role=Role.ADMIN)},
    )
    assert list(settings.identity_map().groups) == ["ml-team", "admins"]  # the admin's order


@pytest.mark.parametrize(
    ("values", "says"),
    [
        ({"auth": False}, "kubernetes_auth needs auth: true"),
        ({"kubernetes_auth_groups": {"g": {"user": "x"}}}, "a group grant names a team"),
        ({"kubernetes_auth_groups": {"g": {"role": "root"}}}, "role"),
        ({"kubernetes_auth_groups": {"g": {"team": "bad name"}}}, "team"),
        ({"kubernetes_auth_groups": {"g": {"tema": "ml"}}}, "tema"),
        ({"kubernetes_auth_cache_s": -1}, "kubernetes_auth_cache_s"),
    ],
)
def test_bad_grants_are_refused_at_start_naming_the_field(
    values: dict[str, object], says: str
) -> None:
    with pytest.raises(SettingsError, match=says):
        load_settings(**{"auth": True, "kubernetes_auth": True, **values})
