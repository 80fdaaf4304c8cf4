"""Kubernetes identity (``kubernetes_auth``) against the real API server, through the real CLI
and a real ``starburst api`` process.

The control plane authenticates static users with groups (``tests.support.kubepki``:
alice in ``ml-team``, boss in ``starburst-admins``, eve in ``interns``) and ServiceAccount
tokens (TokenRequest). Starburst's API runs as a ServiceAccount granted only
``TOKEN_REVIEW_RULE`` (what the Helm chart adds when ``settings.kubernetes_auth`` is true),
with grants: ``ml-team`` → team ml, ``starburst-admins`` → admin, and the ServiceAccount
``trainer`` → user ``trainer`` of team ml.

Flows: a mapped group submits and lists through ``starburst`` with ``auth = kubernetes``
(a kubeconfig token, and an exec plugin); an admin group is admin; an unmapped identity is
refused (403) and a token the cluster does not take is 401, including a ServiceAccount's once
the ServiceAccount is deleted; Starburst's own tokens still work; an API whose identity may
not create tokenreviews says so (503, the CLI exits 2 with that line). Answers are
remembered on a hand-moved clock: the audit log counts the reviews the API server received.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import stat
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import HTTPException

from starburst.adapters.db.store import SqlStore
from starburst.adapters.kubernetes.tokenreview import TOKEN_REVIEW_RULE, TokenReviewer
from starburst.api.kubeauth import KubernetesTokens
from starburst.core.records import Role
from starburst.settings import load_settings
from tests.support import http
from tests.support.clock import ManualClock
from tests.support.controlplane import RealKube, ServiceAccountCredentials
from tests.support.controlplane_process import free_port
from tests.support.databases import upgrade
from tests.support.waiting import wait_for

ALICE, BOSS, EVE = "alice@example.org", "boss@example.org", "eve@example.org"
GROUPS = {"ml-team": {"team": "ml", "role": "user"}, "starburst-admins": {"role": "admin"}}


def grants(namespace: str) -> dict[str, Any]:
    return {
        "kubernetes_auth_groups": GROUPS,
        "kubernetes_auth_users": {
            f"system:serviceaccount:{namespace}:trainer": {"user": "trainer", "team": "ml"}
        },
    }


@pytest.fixture
def reviewer(real_kube: RealKube, real_namespace: str) -> ServiceAccountCredentials:
    """The API's ServiceAccount, granted only what token reviews need."""
    role = f"starburst-token-reviewer-{real_namespace}"
    real_kube.apply_cluster_role(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": role},
            "rules": [TOKEN_REVIEW_RULE],
        }
    )
    return real_kube.service_account(real_namespace, "starburst-api", cluster_role=role)


class Served:
    """A ``starburst api`` process with ``kubernetes_auth`` on, and the real CLI beside it."""

    def __init__(self, url: str, proc: subprocess.Popen[bytes], log: Path, admin: str) -> None:
        self.url, self.proc, self.log, self.admin_token = url, proc, log, admin

    def cli(self, *args: str, kubeconfig: Path | None = None, **env: str) -> Any:
        """``starburst ARGS`` as a user with ``auth = kubernetes`` and ``kubeconfig``."""
        base = {
            "PATH": os.environ["PATH"],
            "HOME": os.environ.get("HOME", "/root"),
            "XDG_CONFIG_HOME": str(self.log.parent / "cfg"),
            "STARBURST_SERVER": self.url,
            "STARBURST_CLIENT_AUTH": "kubernetes",
            "KUBECONFIG": str(kubeconfig or self.log.parent / "none"),
        }
        return subprocess.run(
            [sys.executable, "-m", "starburst.cli", *args],
            env={**base, **env},
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    def whoami(self, token: str) -> httpx.Response:
        headers = {"Authorization": f"Bearer {token}"}
        return http.get(f"{self.url}/v1/whoami", headers=headers, timeout=30)


@pytest.fixture
def start_api(tmp_path: Path) -> Iterator[Callable[..., Served]]:
    started: list[subprocess.Popen[bytes]] = []

    def start(kubeconfig: Path, settings: dict[str, Any]) -> Served:
        where = tmp_path / f"api-{len(started)}"
        where.mkdir()
        db = f"sqlite:///{where / 'sb.db'}"
        upgrade(db)
        store = SqlStore.open(db)
        store.accounts.save_user("root")
        admin = store.accounts.issue_token("root", Role.ADMIN).secret
        store.close()
        port = free_port()
        env = {
            "PATH": os.environ["PATH"],
            "HOME": os.environ.get("HOME", "/root"),
            "STARBURST_DATABASE_URL": db,
            "STARBURST_STATE_DIR": str(where / "state"),
            "STARBURST_AUTH": "true",
            "STARBURST_CLOUD": "none",
            "STARBURST_API_PORT": str(port),
            "STARBURST_KUBERNETES_AUTH": "true",
            "STARBURST_KUBECONFIG": str(kubeconfig),
            **{f"STARBURST_{k.upper()}": json.dumps(v) for k, v in settings.items()},
        }
        log = where / "api.log"
        with log.open("ab") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", "starburst.cli", "api"],
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        started.append(proc)
        url = f"http://127.0.0.1:{port}"

        def ready() -> bool:
            try:
                return http.get(f"{url}/healthz", timeout=1).status_code == 200
            except httpx.HTTPError:
                return proc.poll() is not None

        assert wait_for(ready, timeout=60) and proc.poll() is None, log.read_text()
        return Served(url, proc, log, admin)

    yield start
    for proc in started:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture
def api(
    start_api: Callable[..., Served],
    reviewer: ServiceAccountCredentials,
    real_namespace: str,
) -> Served:
    return start_api(reviewer.kubeconfig, {**grants(real_namespace), "kubernetes_auth_cache_s": 0})


def user_kubeconfig(real_kube: RealKube, tmp_path: Path, user: str) -> Path:
    path = tmp_path / f"{user}.kubeconfig"
    return real_kube.write_kubeconfig(path, real_kube.pki.user_tokens[user], user)


def test_mapped_groups_act_as_their_team_and_role_through_the_cli(
    api: Served, real_kube: RealKube, tmp_path: Path
) -> None:
    alice = user_kubeconfig(real_kube, tmp_path, ALICE)
    made = api.cli("submit", "--gpus", "1", "--name", "from-kube", "--", "true", kubeconfig=alice)
    assert made.returncode == 0, made.stderr
    listed = api.cli("jobs", "-o", "json", kubeconfig=alice)
    assert listed.returncode == 0, listed.stderr
    (job,) = json.loads(listed.stdout)
    assert (job["user"], job["team"], job["name"]) == (ALICE, "ml", "from-kube")
    assert api.whoami(real_kube.pki.user_tokens[ALICE]).json()["role"] == "user"
    boss = api.whoami(real_kube.pki.user_tokens[BOSS]).json()
    assert (boss["user"], boss["team"], boss["role"]) == (BOSS, "ml", "admin")
    boss_jobs = api.cli("jobs", "-o", "json", kubeconfig=user_kubeconfig(real_kube, tmp_path, BOSS))
    assert boss_jobs.returncode == 0, boss_jobs.stderr
    assert [j["user"] for j in json.loads(boss_jobs.stdout)] == [ALICE]  # an admin sees all


def test_unmapped_and_invalid_tokens_are_refused_and_starburst_tokens_still_work(
    api: Served, real_kube: RealKube, tmp_path: Path
) -> None:
    eve = api.cli("jobs", kubeconfig=user_kubeconfig(real_kube, tmp_path, EVE))
    assert eve.returncode == 1 and eve.stderr.count("\n") == 1
    assert f"Kubernetes user '{EVE}' (groups: interns, system:authenticated) is not mapped" in (
        eve.stderr
    )
    assert "(HTTP 403)" in eve.stderr
    forged = real_kube.write_kubeconfig(tmp_path / "forged", "not-a-real-token", "x")
    bad = api.cli("jobs", kubeconfig=forged)
    assert bad.returncode == 1 and "did not accept the token" in bad.stderr
    assert "(HTTP 401)" in bad.stderr
    own = api.cli("jobs", "--token", api.admin_token)  # no kubeconfig needed
    assert own.returncode == 0 and own.stdout.startswith("no jobs"), own.stderr
    assert api.whoami(api.admin_token).json()["user"] == "root"


def test_a_service_account_token_works_until_its_service_account_is_deleted(
    api: Served, real_kube: RealKube, real_namespace: str, tmp_path: Path
) -> None:
    trainer = real_kube.service_account(real_namespace, "trainer")
    # the same token through an exec plugin, as cloud CLIs and kubelogin hand it out
    plugin = tmp_path / "plugin.sh"
    credential = {
        "apiVersion": "client.authentication.k8s.io/v1",
        "kind": "ExecCredential",
        "status": {"token": trainer.token},
    }
    plugin.write_text(f"#!/bin/sh\ncat <<'EOF'\n{json.dumps(credential)}\nEOF\n")
    plugin.chmod(plugin.stat().st_mode | stat.S_IXUSR)
    config = real_kube.kubeconfig(user="trainer")
    config["users"] = [
        {
            "name": "trainer",
            "user": {
                "exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": str(plugin)}
            },
        }
    ]
    exec_config = tmp_path / "exec.kubeconfig"
    exec_config.write_text(json.dumps(config))
    for kubeconfig in (trainer.kubeconfig, exec_config):
        made = api.cli("submit", "--gpus", "1", "--", "true", kubeconfig=kubeconfig)
        assert made.returncode == 0, made.stderr
    listed = api.cli("jobs", "-o", "json", kubeconfig=trainer.kubeconfig)
    assert [(j["user"], j["team"]) for j in json.loads(listed.stdout)] == [("trainer", "ml")] * 2
    real_kube.request("DELETE", f"/api/v1/namespaces/{real_namespace}/serviceaccounts/trainer")

    def refused() -> bool:
        return api.whoami(trainer.token).status_code == 401

    assert wait_for(refused, timeout=30)  # the API server's own ServiceAccount cache
    gone = api.cli("jobs", kubeconfig=trainer.kubeconfig)
    assert gone.returncode == 1 and "did not accept the token" in gone.stderr


def test_an_api_that_may_not_review_tokens_says_so(
    start_api: Callable[..., Served],
    real_kube: RealKube,
    real_namespace: str,
    tmp_path: Path,
) -> None:
    bare = real_kube.service_account(real_namespace, "starburst-bare")
    api = start_api(bare.kubeconfig, grants(real_namespace))
    done = api.cli("jobs", kubeconfig=user_kubeconfig(real_kube, tmp_path, ALICE))
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "Starburst may not check Kubernetes tokens" in done.stderr
    assert "`create` on `tokenreviews`" in done.stderr and "(HTTP 503)" in done.stderr
    assert "Traceback" not in api.log.read_text()
    own = api.cli("jobs", "--token", api.admin_token)
    assert own.returncode == 0, own.stderr  # Starburst's tokens do not depend on the cluster


def test_reviews_are_remembered_on_the_api_clock(
    real_kube: RealKube, reviewer: ServiceAccountCredentials, real_namespace: str
) -> None:
    settings = load_settings(auth=True, kubernetes_auth=True, **grants(real_namespace))
    api_client = real_kube.api_client(reviewer.token)
    tokens = KubernetesTokens(
        TokenReviewer(api_client), settings.identity_map(), ttl=settings.kubernetes_auth_cache_s
    )
    clock = ManualClock()

    def reviews() -> int:
        return sum(
            e["objectRef"]["resource"] == "tokenreviews" and e.get("stage") == "ResponseComplete"
            for e in real_kube.audit_events(user=reviewer.username)
            if e.get("objectRef")
        )

    def caller(token: str) -> Any:
        return asyncio.run(tokens.caller(token, clock.now()))

    try:
        alice, forged = real_kube.pki.user_tokens[ALICE], "forged-token"
        assert caller(alice).team == "ml"
        with pytest.raises(HTTPException) as first:
            caller(forged)
        assert first.value.status_code == 401
        assert wait_for(lambda: reviews() == 2, timeout=10)
        clock.advance(settings.kubernetes_auth_cache_s - 0.5)
        assert caller(alice).user == ALICE
        with pytest.raises(HTTPException):
            caller(forged)
        clock.advance(0.5)
        assert caller(alice).role is Role.USER
        assert wait_for(lambda: reviews() == 3, timeout=10), reviews()
        assert reviews() == 3  # the forged one's refusal is still remembered
    finally:
        api_client.close()
