"""The current kubeconfig's credential as the CLI's bearer token (``auth = "kubernetes"``).

When the CLI's ``auth`` is ``kubernetes`` (``starburst config set auth kubernetes`` or
``STARBURST_CLIENT_AUTH=kubernetes``), it sends the token ``kubectl`` would send to the
cluster; the server checks it with a TokenReview (the ``kubernetes_auth`` setting).

Which kubeconfig: the files in ``$KUBECONFIG`` (separated by ``:``), merged as ``kubectl``
merges them (the first file to set a context, user or the current context wins), else
``~/.kube/config``. Which credential: the current context's user (``$STARBURST_KUBE_CONTEXT``
names another context).

Supported credentials, in the order ``kubectl`` tries them:
- ``token`` and ``tokenFile`` (ServiceAccount tokens, static tokens);
- ``exec`` plugins (``client.authentication.k8s.io/v1`` and ``v1beta1``: cloud CLIs,
  ``kubelogin`` for OIDC); the plugin runs with ``KUBERNETES_EXEC_INFO`` set, its prompts on
  the terminal, and its token is reused in this process until its ``expirationTimestamp``;
- ``auth-provider`` ``oidc``: its ``id-token`` as it is (not refreshed: when it has expired,
  run any ``kubectl`` command to refresh it, or use an exec plugin).

Not supported (one line saying so): client certificates (``client-certificate[-data]``: a
certificate proves who holds its key to the cluster's API server only, it is not a token
the Starburst server can pass on), ``username``/``password``, other auth providers, and an
exec plugin that returns a certificate instead of a token.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from starburst.core.errors import ConfigError

EXEC_TIMEOUT_S = 120.0
EXEC_VERSIONS = ("client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1")

#: exec credentials already obtained in this process: (kubeconfig files, user) → (token, expiry)
_EXECUTED: dict[tuple[tuple[str, ...], str], tuple[str, float | None]] = {}


class KubeCredentialError(ConfigError):
    """The kubeconfig yields no bearer token; the message says why and what to do."""


def kubeconfig_paths(environ: dict[str, str] | None = None) -> list[Path]:
    env = os.environ if environ is None else environ
    listed = [p for p in env.get("KUBECONFIG", "").split(os.pathsep) if p]
    return [Path(p) for p in listed] or [Path.home() / ".kube" / "config"]


def bearer_token(environ: dict[str, str] | None = None, now: float | None = None) -> str:
    """The bearer token of the kubeconfig's current context (module docstring), or
    ``KubeCredentialError``."""
    env = dict(os.environ if environ is None else environ)
    paths = kubeconfig_paths(env)
    config = _merged(paths)
    context_name = env.get("STARBURST_KUBE_CONTEXT") or config["current-context"]
    if not context_name:
        raise KubeCredentialError(
            f"kubeconfig {_shown(paths)} has no current context: run `kubectl config "
            "use-context NAME` or set STARBURST_KUBE_CONTEXT"
        )
    context = config["contexts"].get(context_name)
    if context is None:
        raise KubeCredentialError(f"kubeconfig {_shown(paths)} has no context {context_name!r}")
    user_name = str(context.get("user") or "")
    user = config["users"].get(user_name)
    if user is None:
        raise KubeCredentialError(
            f"context {context_name!r} names user {user_name!r}, which kubeconfig "
            f"{_shown(paths)} does not define"
        )
    cluster = config["clusters"].get(str(context.get("cluster") or ""), {})
    at = datetime.now(UTC).timestamp() if now is None else now
    return _token_of(user, user_name, cluster, paths, env, at)


def _token_of(
    user: dict[str, Any],
    name: str,
    cluster: dict[str, Any],
    paths: list[Path],
    env: dict[str, str],
    now: float,
) -> str:
    if user.get("token"):
        return str(user["token"]).strip()
    if user.get("tokenFile"):
        file = Path(str(user["tokenFile"]))
        try:
            return _first_line(file.read_text(encoding="utf-8"), f"tokenFile {file}")
        except OSError as exc:
            raise KubeCredentialError(
                f"user {name!r}: cannot read tokenFile {file} ({exc.strerror})"
            ) from None
    if isinstance(user.get("exec"), dict):
        key = (tuple(str(p) for p in paths), name)
        known = _EXECUTED.get(key)
        if known is not None and (known[1] is None or now < known[1] - 10):
            return known[0]
        token, expiry = _run_exec(user["exec"], name, cluster, env)
        _EXECUTED[key] = (token, expiry)
        return token
    provider = user.get("auth-provider")
    if isinstance(provider, dict):
        config = provider.get("config") or {}
        if provider.get("name") == "oidc" and config.get("id-token"):
            return str(config["id-token"])
        raise KubeCredentialError(
            f"user {name!r} uses the auth provider {provider.get('name')!r}, which Starburst "
            "does not support: use an exec plugin (e.g. kubelogin) or a token"
        )
    if user.get("client-certificate") or user.get("client-certificate-data"):
        raise KubeCredentialError(
            f"user {name!r} authenticates with a client certificate, which Starburst cannot "
            "check (it checks bearer tokens with the cluster): use a context whose user has a "
            "token or an exec plugin, or a Starburst token (--token)"
        )
    if user.get("username") or user.get("password"):
        raise KubeCredentialError(
            f"user {name!r} authenticates with a user name and password, which Starburst does "
            "not support: use a token, an exec plugin or a Starburst token (--token)"
        )
    raise KubeCredentialError(f"user {name!r} has no credential in the kubeconfig")


def _run_exec(
    spec: dict[str, Any], name: str, cluster: dict[str, Any], env: dict[str, str]
) -> tuple[str, float | None]:
    """Run an exec credential plugin; its token and when it expires (epoch, or None)."""
    version = str(spec.get("apiVersion") or "")
    if version not in EXEC_VERSIONS:
        raise KubeCredentialError(
            f"user {name!r}: exec plugin apiVersion {version!r} is not supported "
            f"(use {' or '.join(EXEC_VERSIONS)})"
        )
    command = str(spec.get("command") or "")
    if not command:
        raise KubeCredentialError(f"user {name!r}: the exec plugin names no command")
    mode = spec.get("interactiveMode") or "IfAvailable"
    interactive = mode != "Never" and sys.stdin.isatty()
    info: dict[str, Any] = {"interactive": interactive}
    if spec.get("provideClusterInfo"):
        info["cluster"] = {
            k: cluster[k]
            for k in ("server", "certificate-authority-data", "insecure-skip-tls-verify")
            if k in cluster
        }
    child_env = {**env, **{str(e["name"]): str(e["value"]) for e in spec.get("env") or []}}
    child_env["KUBERNETES_EXEC_INFO"] = json.dumps(
        {"apiVersion": version, "kind": "ExecCredential", "spec": info}
    )
    try:
        done = subprocess.run(
            [command, *(str(a) for a in spec.get("args") or [])],
            env=child_env,
            stdin=None if interactive else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            timeout=EXEC_TIMEOUT_S,
            check=False,
        )
    except FileNotFoundError:
        hint = f" ({spec['installHint'].strip()})" if spec.get("installHint") else ""
        raise KubeCredentialError(
            f"user {name!r}: exec plugin {command!r} not found{hint}"
        ) from None
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise KubeCredentialError(f"user {name!r}: exec plugin {command!r}: {exc}") from None
    if done.returncode != 0:
        raise KubeCredentialError(
            f"user {name!r}: exec plugin {command!r} exited with {done.returncode}"
        )
    try:
        status = json.loads(done.stdout)["status"]
    except (ValueError, KeyError, TypeError):
        raise KubeCredentialError(
            f"user {name!r}: exec plugin {command!r} printed no ExecCredential status"
        ) from None
    token = status.get("token") if isinstance(status, dict) else None
    if not token:
        raise KubeCredentialError(
            f"user {name!r}: exec plugin {command!r} returned no token (a client "
            "certificate cannot be used with Starburst)"
        )
    return str(token), _expiry(status.get("expirationTimestamp"))


def _expiry(stamp: Any) -> float | None:
    if not stamp:
        return None
    try:
        return datetime.fromisoformat(str(stamp).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _merged(paths: list[Path]) -> dict[str, Any]:
    """The kubeconfig files merged (the first to define a name or the current context wins)."""
    import yaml

    merged: dict[str, Any] = {"current-context": "", "contexts": {}, "users": {}, "clusters": {}}
    found = False
    for path in paths:
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except FileNotFoundError:
            continue
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
            raise KubeCredentialError(f"cannot read kubeconfig {path}: {exc}") from None
        if not isinstance(data, dict):
            raise KubeCredentialError(f"kubeconfig {path} is not a mapping")
        found = True
        merged["current-context"] = merged["current-context"] or str(
            data.get("current-context") or ""
        )
        for section, inner in (("contexts", "context"), ("users", "user"), ("clusters", "cluster")):
            for entry in data.get(section) or []:
                if isinstance(entry, dict) and entry.get("name") is not None:
                    merged[section].setdefault(str(entry["name"]), entry.get(inner) or {})
    if not found:
        raise KubeCredentialError(
            f"no kubeconfig at {_shown(paths)}: set KUBECONFIG or log in to the cluster first"
        )
    return merged


def _first_line(text: str, what: str) -> str:
    token = text.strip().splitlines()[0].strip() if text.strip() else ""
    if not token:
        raise KubeCredentialError(f"{what} is empty")
    return token


def _shown(paths: list[Path]) -> str:
    return os.pathsep.join(str(p) for p in paths)
