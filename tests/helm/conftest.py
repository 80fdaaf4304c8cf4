"""Fixtures for the chart tests: the real ``helm`` binary and a renderer over value sets.

``helm`` (session) is the pinned binary from ``tests/support/helmtool.py``; ``render(values)``
runs ``helm template`` with those values (a dict written to a file, as ``-f`` would) and
returns the parsed objects; ``CASES`` is the values matrix every chart test walks.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.helmtool import require

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "helm" / "starburst"
DEPLOY = ROOT / "deploy"
KUBERNETES_VERSION = "1.34.0"
DB = {"url": "postgresql://starburst:s3cret@db.internal:5432/starburst"}
SKYPILOT_ENDPOINT = "https://skypilot.internal:46580"
SKYPILOT_TOKEN = "sky_" + "t0k3n" * 8

#: name → values: the matrix of set-ups the chart must render, lint and validate for.
CASES: dict[str, dict[str, Any]] = {
    "defaults": {"database": DB},
    "ha": {
        "database": DB,
        "controller": {"replicas": 3},
        "api": {"replicas": 3},
        "networkPolicy": {
            "enabled": True,
            "metricsFrom": [
                {
                    "namespaceSelector": {
                        "matchLabels": {"kubernetes.io/metadata.name": "monitoring"}
                    }
                }
            ],
        },
        "serviceMonitor": {"enabled": True, "labels": {"release": "prometheus"}},
        "cloud": {
            "skypilot": {
                "apiServer": {
                    "existingSecret": "skypilot-api",
                    "token": {"existingSecret": "skypilot-sa", "existingSecretKey": "sa-token"},
                }
            }
        },
    },
    "skypilot-endpoint": {
        "database": DB,
        "cloud": {
            "skypilot": {
                "apiServer": {"endpoint": SKYPILOT_ENDPOINT, "token": {"value": SKYPILOT_TOKEN}}
            }
        },
        "priceTable": {"taken": "2026-01-05", "gpus": {"H100": {"aws": {"on_demand": 6.5}}}},
        "settings": {"use_spot": True, "onprem_rates": {"H100": 2.0, "*": 0.6}},
    },
    "ingress": {
        "database": DB,
        "ingress": {
            "enabled": True,
            "className": "nginx",
            "host": "sb.example.com",
            "tls": [{"hosts": ["sb.example.com"], "secretName": "sb-tls"}],
        },
    },
    "existing-secret": {
        "database": {"existingSecret": "sb-db", "existingSecretKey": "url"},
        "bootstrapAdmin": {"existingSecret": "sb-admin", "existingSecretKey": "token"},
        "cloud": {
            "skypilot": {
                "credentials": {
                    "existingSecret": "clouds",
                    "files": [{"key": "aws", "path": ".aws/credentials"}],
                }
            }
        },
    },
    "no-cloud": {
        "database": DB,
        "cloud": {"provider": "none"},
        "bootstrapAdmin": {"enabled": False},
        "controller": {"replicas": 1},
        "api": {"replicas": 1},
    },
    "evaluation": {
        "postgresql": {"enabled": True},
        "cloud": {"provider": "emulated"},
        "priceTable": yaml.safe_load((ROOT / "starburst/pricing/prices.yaml").read_text()),
    },
    "kubernetes-auth": {
        "database": DB,
        "settings": {
            "kubernetes_auth": True,
            "kubernetes_auth_groups": {
                "ml-team": {"team": "ml", "role": "user"},
                "starburst-admins": {"role": "admin"},
            },
            "kubernetes_auth_users": {
                "system:serviceaccount:ml:trainer": {"user": "trainer", "team": "ml"}
            },
            "kubernetes_auth_cache_s": 30,
        },
    },
    "example-skypilot": yaml.safe_load((DEPLOY / "values-skypilot.yaml").read_text()),
    "example-trial": yaml.safe_load((DEPLOY / "values-trial.yaml").read_text()),
}

#: Secrets the admin creates before installing (the cases and examples above name them).
EXISTING: dict[str, dict[str, str]] = {
    "sb-db": {"url": DB["url"]},
    "starburst-db": {"database-url": DB["url"]},
    "sb-admin": {"token": "sb_" + "a" * 40},
    "clouds": {"aws": "[default]\naws_access_key_id = AKIA...\n"},
    "skypilot-api": {"endpoint": "https://user:pw@skypilot.internal"},
    "skypilot-sa": {"sa-token": SKYPILOT_TOKEN, "token": SKYPILOT_TOKEN},
}


@pytest.fixture(scope="session")
def helm() -> Path:
    return require("helm")


def run_helm(
    helm: Path, *args: str, values: dict[str, Any] | None = None, tmp: Path | None = None
) -> subprocess.CompletedProcess[str]:
    extra: list[str] = []
    if values is not None:
        assert tmp is not None
        path = tmp / "values.yaml"
        path.write_text(yaml.safe_dump(values))
        extra = ["-f", str(path)]
    return subprocess.run(
        [str(helm), *args, *extra], capture_output=True, text=True, timeout=120, check=False
    )


Render = Callable[..., list[dict[str, Any]]]


@pytest.fixture
def render(helm: Path, tmp_path: Path) -> Render:
    def _render(
        values: dict[str, Any], *, namespace: str = "starburst", show_only: str | None = None
    ) -> list[dict[str, Any]]:
        args = [
            "template",
            "sb",
            str(CHART),
            "--namespace",
            namespace,
            "--kube-version",
            KUBERNETES_VERSION,
        ]
        if show_only:
            args += ["--show-only", show_only]
        done = run_helm(helm, *args, values=values, tmp=tmp_path)
        assert done.returncode == 0, done.stderr
        return [doc for doc in yaml.safe_load_all(done.stdout) if doc]

    return _render


def by_kind(objects: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [o for o in objects if o["kind"] == kind]


def named(objects: list[dict[str, Any]], kind: str, suffix: str) -> dict[str, Any]:
    found = [o for o in by_kind(objects, kind) if o["metadata"]["name"].endswith(suffix)]
    assert len(found) == 1, f"{kind} *{suffix}: {[o['metadata']['name'] for o in found]}"
    return found[0]


# The session's throwaway PostgreSQL (re-exported for pytest); the real control plane comes
# from tests/conftest.py, so the whole run shares one.
from tests.support import postgres as _postgres  # noqa: E402

postgres_url = _postgres.postgres_url
postgres_database = _postgres.postgres_database
