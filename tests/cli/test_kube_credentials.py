"""The CLI's kubeconfig credential (``auth = "kubernetes"``, ``starburst.cli.kubecreds``):
tokens, token files, exec plugins (a real plugin program, run once until its expiry) and OIDC
id-tokens are sent; client certificates and passwords are refused with one line saying why;
``$KUBECONFIG`` files merge as ``kubectl`` merges them."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path
from typing import Any

import pytest

from starburst.cli import kubecreds
from starburst.cli.kubecreds import KubeCredentialError, bearer_token


def kubeconfig(path: Path, user: dict[str, Any], *, current: str = "c", name: str = "u") -> Path:
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": current,
                "clusters": [{"name": "k", "cluster": {"server": "https://k.example:6443"}}],
                "users": [{"name": name, "user": user}],
                "contexts": [{"name": "c", "context": {"cluster": "k", "user": name}}],
            }
        )
    )
    return path


def env(*paths: Path, **extra: str) -> dict[str, str]:
    return {
        "KUBECONFIG": os.pathsep.join(str(p) for p in paths),
        "PATH": os.environ["PATH"],
        **extra,
    }


@pytest.fixture(autouse=True)
def no_remembered_exec() -> None:
    kubecreds._EXECUTED.clear()


def plugin(tmp_path: Path, token: str = "exec-token", expiry: str | None = None) -> Path:
    """An exec credential plugin: prints an ExecCredential, notes each run and the
    KUBERNETES_EXEC_INFO it was given."""
    script = tmp_path / "plugin.py"
    status = {"token": token, **({"expirationTimestamp": expiry} if expiry else {})}
    script.write_text(
        f"#!{sys.executable}\n"
        "import json, os, pathlib\n"
        f"runs = pathlib.Path({str(tmp_path / 'runs')!r})\n"
        "with runs.open('a') as out: out.write(os.environ['KUBERNETES_EXEC_INFO'] + '\\n')\n"
        "print(json.dumps({'apiVersion': 'client.authentication.k8s.io/v1', "
        f"'kind': 'ExecCredential', 'status': {status!r}}}))\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def test_a_token_and_a_token_file(tmp_path: Path) -> None:
    assert bearer_token(env(kubeconfig(tmp_path / "a", {"token": "abc"}))) == "abc"
    (tmp_path / "tok").write_text("from-file\n")
    config = kubeconfig(tmp_path / "b", {"tokenFile": str(tmp_path / "tok")})
    assert bearer_token(env(config)) == "from-file"


def test_an_exec_plugin_runs_once_until_its_token_expires(tmp_path: Path) -> None:
    script = plugin(tmp_path, expiry="2030-01-01T00:00:00Z")
    config = kubeconfig(
        tmp_path / "k",
        {
            "exec": {
                "apiVersion": "client.authentication.k8s.io/v1",
                "command": str(script),
                "provideClusterInfo": True,
                "interactiveMode": "Never",
            }
        },
    )
    assert bearer_token(env(config), now=0.0) == "exec-token"
    assert bearer_token(env(config), now=1.0) == "exec-token"
    runs = (tmp_path / "runs").read_text().splitlines()
    assert len(runs) == 1  # remembered in this process
    info = json.loads(runs[0])
    assert info["kind"] == "ExecCredential" and info["spec"]["interactive"] is False
    assert info["spec"]["cluster"]["server"] == "https://k.example:6443"
    expired = 1893456000.0  # 2030-01-01: past its expiry, the plugin runs again
    assert bearer_token(env(config), now=expired) == "exec-token"
    assert len((tmp_path / "runs").read_text().splitlines()) == 2


def test_an_oidc_id_token_is_sent_as_it_is(tmp_path: Path) -> None:
    user = {"auth-provider": {"name": "oidc", "config": {"id-token": "eyJ.x.y"}}}
    assert bearer_token(env(kubeconfig(tmp_path / "k", user))) == "eyJ.x.y"


@pytest.mark.parametrize(
    ("user", "says"),
    [
        ({"client-certificate-data": "LS0t", "client-key-data": "LS0t"}, "client certificate"),
        ({"username": "u", "password": "p"}, "user name and password"),
        ({"auth-provider": {"name": "gcp"}}, "auth provider 'gcp'"),
        ({}, "has no credential"),
        (
            {"exec": {"apiVersion": "client.authentication.k8s.io/v1alpha1", "command": "x"}},
            "apiVersion",
        ),
        (
            {
                "exec": {
                    "apiVersion": "client.authentication.k8s.io/v1",
                    "command": "no-such-plugin-here",
                    "installHint": "install it with apt",
                }
            },
            "not found (install it with apt)",
        ),
    ],
)
def test_what_is_not_supported_is_said_in_one_line(
    tmp_path: Path, user: dict[str, Any], says: str
) -> None:
    with pytest.raises(KubeCredentialError, match=r"^user 'u'") as refused:
        bearer_token(env(kubeconfig(tmp_path / "k", user)))
    assert says in str(refused.value) and "\n" not in str(refused.value)


def test_kubeconfig_files_merge_as_kubectl_merges_them(tmp_path: Path) -> None:
    first = kubeconfig(tmp_path / "1", {"token": "first"}, current="")
    second = kubeconfig(tmp_path / "2", {"token": "second"})
    # the current context comes from the second file, the user "u" from the first
    assert bearer_token(env(tmp_path / "missing", first, second)) == "first"
    with pytest.raises(KubeCredentialError, match="no kubeconfig at"):
        bearer_token(env(tmp_path / "missing"))
    with pytest.raises(KubeCredentialError, match="no current context"):
        bearer_token(env(first))
    with pytest.raises(KubeCredentialError, match="no context 'other'"):
        bearer_token(env(second, STARBURST_KUBE_CONTEXT="other"))


def test_config_sets_shows_and_checks_the_auth_mode(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from starburst.cli.main import build_app

    config = kubeconfig(tmp_path / "k", {"token": "kube-secret-token"})
    home = {
        "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
        "KUBECONFIG": str(config),
        "STARBURST_TOKEN": None,
        "STARBURST_CLIENT_AUTH": None,
    }

    def run(*args: str) -> Any:
        return CliRunner().invoke(build_app(list(args)), list(args), env=home)

    assert "auth:   token\n" in run("config", "show").stdout
    assert run("config", "set", "auth", "kubernetes").exit_code == 0
    shown = run("config", "show").stdout
    assert "auth:   kubernetes\n" in shown and "token:  kube-s…\n" in shown
    assert "kube-secret-token" not in shown
    bad = run("config", "set", "auth", "oidc")
    assert bad.exit_code == 2 and "auth must be one of token, kubernetes" in bad.stderr
    config.unlink()
    broken = run("config", "show")
    assert broken.exit_code == 2 and "no kubeconfig at" in broken.stderr
