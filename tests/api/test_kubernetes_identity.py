"""Kubernetes bearer tokens on the API (``kubernetes_auth``), with a hand-fed reviewer and a
hand-moved clock: a mapped group acts as its team and role, an unmapped identity is refused
(403), a token the cluster does not accept is 401, a review that cannot be made is 503 with
the reason, answers are remembered for ``kubernetes_auth_cache_s`` of the API's clock only,
and Starburst's own tokens keep working without a review. The real API server's reviews are
in ``tests/realkube/test_kubernetes_identity_real.py``."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from fastapi import HTTPException

from starburst.adapters.kubernetes.tokenreview import Review, ReviewForbidden, ReviewUnavailable
from starburst.api.kubeauth import KubernetesTokens
from starburst.core.identity import Grant, IdentityMap
from tests.api.conftest import Api, build_api
from tests.support.clock import ManualClock

SETTINGS = {
    "auth": True,
    "kubernetes_auth": True,
    "kubernetes_auth_cache_s": 10.0,
    "kubernetes_auth_groups": {
        "ml-team": {"team": "ml", "role": "user"},
        "starburst-admins": {"role": "admin"},
    },
}


class Reviews:
    """The cluster's verdicts, set by the test; ``asked`` counts reviews made."""

    def __init__(self) -> None:
        self.verdicts: dict[str, Review | Exception] = {}
        self.asked = 0

    def review(self, token: str) -> Review:
        self.asked += 1
        verdict = self.verdicts.get(token, Review(False, error="invalid bearer token"))
        if isinstance(verdict, Exception):
            raise verdict
        return verdict


@pytest.fixture
def reviews() -> Reviews:
    made = Reviews()
    made.verdicts["k-alice"] = Review(
        True, "alice@example.org", ("ml-team", "system:authenticated")
    )
    made.verdicts["k-boss"] = Review(True, "boss", ("starburst-admins",))
    made.verdicts["k-eve"] = Review(True, "eve", ("interns", "system:authenticated"))
    return made


@pytest.fixture
def kapi(
    db_url: str,
    clock: ManualClock,
    resources: ExitStack,
    open_store: Callable[[str], Any],
    serve: Any,
    reviews: Reviews,
) -> Api:
    return build_api(
        db_url,
        open_store(db_url),
        clock,
        resources,
        serve,
        settings=SETTINGS,
        token_reviews=reviews,
    )


def test_a_mapped_group_acts_as_its_team_and_role(kapi: Api, reviews: Reviews) -> None:
    alice = kapi.client(token="k-alice")
    assert alice.get("/v1/whoami").json() == {
        "user": "alice@example.org",
        "team": "ml",
        "role": "user",
        "auth": True,
    }
    made = alice.post("/v1/jobs", json={"image": "none", "command": "true", "gpus": 1})
    assert made.status_code == 201, made.text
    job = made.json()
    assert (job["user"], job["team"]) == ("alice@example.org", "ml")
    assert alice.get("/v1/users").status_code == 403  # a user, not an admin
    boss = kapi.client(token="k-boss")
    assert boss.get("/v1/whoami").json()["role"] == "admin"
    assert boss.get("/v1/users").status_code == 200


def test_unmapped_is_403_and_an_invalid_token_401(kapi: Api) -> None:
    refused = kapi.client(token="k-eve").get("/v1/jobs")
    assert refused.status_code == 403
    assert (
        "'eve'" in refused.json()["detail"] and "kubernetes_auth_groups" in refused.json()["detail"]
    )
    invalid = kapi.client(token="k-nobody").get("/v1/jobs")
    assert invalid.status_code == 401 and invalid.headers["www-authenticate"] == "Bearer"
    assert invalid.json()["detail"] == (
        "the Kubernetes API server did not accept the token: invalid bearer token"
    )


def test_starburst_tokens_work_beside_and_are_never_reviewed(kapi: Api, reviews: Reviews) -> None:
    assert kapi.client("root").get("/v1/users").status_code == 200
    assert kapi.client("alice").get("/v1/whoami").json()["user"] == "alice"
    assert kapi.client(token="sb_" + "x" * 40).get("/v1/whoami").status_code == 401
    assert reviews.asked == 0


def test_answers_are_remembered_for_the_ttl_of_the_api_clock(
    kapi: Api, reviews: Reviews, clock: ManualClock
) -> None:
    alice, nobody = kapi.client(token="k-alice"), kapi.client(token="k-nobody")
    for _ in range(3):
        assert alice.get("/v1/whoami").status_code == 200
        assert nobody.get("/v1/whoami").status_code == 401
    assert reviews.asked == 2  # one review each, the refusal remembered too
    reviews.verdicts["k-alice"] = Review(False, error="service account token has been invalidated")
    clock.advance(9.9)
    assert alice.get("/v1/whoami").status_code == 200  # still trusted: within the ttl
    clock.advance(0.1)
    revoked = alice.get("/v1/whoami")
    assert revoked.status_code == 401 and "invalidated" in revoked.json()["detail"]
    assert reviews.asked == 3


def test_a_review_that_cannot_be_made_is_503_with_the_reason_and_not_remembered(
    kapi: Api, reviews: Reviews
) -> None:
    reviews.verdicts["k-alice"] = ReviewForbidden("may not create tokenreviews")
    alice = kapi.client(token="k-alice")
    for _ in range(2):
        failed = alice.get("/v1/whoami")
        assert failed.status_code == 503 and failed.json()["detail"] == (
            "may not create tokenreviews"
        )
    reviews.verdicts["k-alice"] = ReviewUnavailable("cannot reach the Kubernetes API server")
    assert "cannot reach" in alice.get("/v1/whoami").json()["detail"]
    assert reviews.asked == 3
    reviews.verdicts["k-alice"] = Review(True, "alice", ("ml-team",))
    assert alice.get("/v1/whoami").status_code == 200


def test_the_cache_is_bounded_and_a_zero_ttl_remembers_nothing(reviews: Reviews) -> None:
    groups = IdentityMap(groups={"ml-team": Grant(team="ml")})
    for i in range(5):
        reviews.verdicts[f"t{i}"] = Review(True, f"u{i}", ("ml-team",))
    tokens = KubernetesTokens(reviews, groups, ttl=60.0, max_entries=3)
    for i in range(5):
        assert asyncio.run(tokens.caller(f"t{i}", 0.0)).user == f"u{i}"
    assert len(tokens) == 3 and reviews.asked == 5
    asyncio.run(tokens.caller("t4", 1.0))  # the newest are kept
    assert reviews.asked == 5
    asyncio.run(tokens.caller("t0", 1.0))  # the oldest went
    assert reviews.asked == 6
    never = KubernetesTokens(reviews, groups, ttl=0.0)
    for _ in range(2):
        with pytest.raises(HTTPException):
            asyncio.run(never.caller("unknown", 0.0))
    assert len(never) == 0 and reviews.asked == 8


def test_kubernetes_auth_off_takes_no_kubernetes_token(
    db_url: str,
    clock: ManualClock,
    resources: ExitStack,
    open_store: Callable[[str], Any],
    serve: Any,
    reviews: Reviews,
) -> None:
    plain = build_api(db_url, open_store(db_url), clock, resources, serve, settings={"auth": True})
    assert plain.client(token="k-alice").get("/v1/whoami").status_code == 401
    assert plain.client("root").get("/v1/whoami").status_code == 200


@pytest.mark.parametrize(
    "db_url", ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)], indirect=True
)
def test_the_cli_sends_the_kubeconfig_credential(
    kapi: Api, reviews: Reviews, tmp_path: Path
) -> None:
    from typer.testing import CliRunner

    from starburst.cli.main import build_app

    config = tmp_path / "kubeconfig"
    config.write_text(
        "current-context: c\n"
        "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
        "clusters: [{name: k, cluster: {server: 'https://k.example'}}]\n"
        "users: [{name: u, user: {token: k-alice}}]\n"
    )
    env = {
        "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
        "KUBECONFIG": str(config),
        "STARBURST_SERVER": kapi.url,
        "STARBURST_TOKEN": None,
        "STARBURST_CLIENT_AUTH": "kubernetes",
    }

    def run(*args: str, **more: str | None) -> Any:
        return CliRunner().invoke(build_app(list(args)), list(args), env={**env, **more})

    made = run("submit", "--gpus", "1", "--name", "kube", "--", "true")
    assert made.exit_code == 0, made.stderr
    listed = run("jobs", "-o", "json")
    assert listed.exit_code == 0, listed.stderr
    (job,) = json.loads(listed.stdout)
    assert (job["user"], job["team"], job["name"]) == ("alice@example.org", "ml", "kube")
    assert reviews.asked == 1  # the API remembered the answer for the second command
    # --token (a Starburst token) wins over the kubeconfig
    assert run("jobs", "--token", kapi.tokens["bob"]).stdout.startswith("no jobs")
    config.write_text(config.read_text().replace("{token: k-alice}", "{token: k-eve}"))
    refused = run("jobs")
    assert refused.exit_code == 1 and "is not mapped to Starburst" in refused.stderr
    config.write_text(config.read_text().replace("{token: k-eve}", "{client-certificate: c}"))
    cert = run("jobs")
    assert cert.exit_code == 2 and cert.stderr.count("\n") == 1
    assert "client certificate, which Starburst cannot check" in cert.stderr
    typo = run("jobs", STARBURST_CLIENT_AUTH="kube")
    assert typo.exit_code == 2 and "auth 'kube' is not one of token, kubernetes" in typo.stderr


def test_without_the_kubernetes_package_the_api_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import importlib.util

    from starburst.api.app import kubernetes_tokens
    from starburst.core.errors import ConfigError
    from starburst.settings import Settings

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "kubernetes" else real(name)
    )
    settings = Settings(auth=True, kubernetes_auth=True)
    with pytest.raises(ConfigError, match=r"pip install 'starburst\[kubernetes\]'"):
        kubernetes_tokens(settings, None)
    assert kubernetes_tokens(Settings(auth=True), None) is None
