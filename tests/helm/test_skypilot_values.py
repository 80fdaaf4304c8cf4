"""A team's SkyPilot API server: its endpoint and service-account token reach every pod.

- ``cloud.skypilot.apiServer.endpoint`` (no credentials) goes into the settings file as
  ``skypilot_api_server``; ``existingSecret`` (an endpoint that may embed basic auth) becomes
  ``STARBURST_SKYPILOT_API_SERVER`` from that Secret, so Starburst validates it and
  ``starburst doctor`` names it;
- the token (``token.existingSecret``, or ``token.value`` kept in the chart's Secret) is a
  Secret volume mounted read-only, named by ``skypilot_api_token_file``: never an
  environment variable, never the ConfigMap;
- the migration hook mounts it from its own hook-scoped Secret copy (the release's Secret does
  not exist yet before an install), since Settings checks the file at start-up.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from starburst.settings import load_settings
from tests.helm import podview
from tests.helm.conftest import (
    CASES,
    CHART,
    DB,
    EXISTING,
    SKYPILOT_ENDPOINT,
    SKYPILOT_TOKEN,
    Render,
    by_kind,
    named,
    run_helm,
)

TOKEN_DIR = "/var/run/secrets/skypilot"


def pods(objects: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {
        o["metadata"]["name"]: o["spec"]["template"]["spec"]
        for o in objects
        if o["kind"] in ("Deployment", "Job")
    }


def token_volume(pod: dict[str, Any]) -> dict[str, Any]:
    return dict(next(v for v in pod["volumes"] if v["name"] == "skypilot-token")["secret"])


def load(
    pod: dict[str, Any], objects: list[dict[str, Any]], tmp: Path, mp: pytest.MonkeyPatch
) -> Any:
    container = pod["containers"][0]
    view = podview.settings_view(pod, container, tmp, podview.rendered(objects, EXISTING))
    for name in [n for n in os.environ if n.startswith("STARBURST_")]:
        mp.delenv(name)
    for name, value in view.env.items():
        if name.startswith("STARBURST_"):
            mp.setenv(name, value)
    return load_settings(view.config)


def test_endpoint_and_token_from_existing_secrets(
    render: Render, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    objects = render(CASES["ha"])
    for name, pod in pods(objects).items():
        volume = token_volume(pod)
        assert volume["secretName"] == "skypilot-sa", name
        assert volume["items"] == [{"key": "sa-token", "path": "token"}]
        for container in [*(pod.get("initContainers") or []), *pod["containers"]]:
            mount = next(m for m in container["volumeMounts"] if m["name"] == "skypilot-token")
            assert (mount["mountPath"], mount["readOnly"]) == (TOKEN_DIR, True)
            env = {e["name"]: e for e in container["env"]}
            assert env["STARBURST_SKYPILOT_API_SERVER"]["valueFrom"]["secretKeyRef"] == {
                "name": "skypilot-api",
                "key": "endpoint",
            }
    controller = pods(objects)["sb-starburst-controller"]
    settings = load(controller, objects, tmp_path, monkeypatch)
    assert settings.skypilot_api_server == EXISTING["skypilot-api"]["endpoint"]
    assert settings.skypilot_api_token_file == Path(tmp_path / TOKEN_DIR.lstrip("/") / "token")
    assert settings.skypilot_token() == SKYPILOT_TOKEN


def test_a_plain_endpoint_and_a_token_kept_in_the_chart_secret(
    render: Render, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    objects = render(CASES["skypilot-endpoint"])
    config = yaml.safe_load(named(objects, "ConfigMap", "sb-starburst")["data"]["settings.yaml"])
    assert config["skypilot_api_server"] == SKYPILOT_ENDPOINT
    assert config["skypilot_api_token_file"] == f"{TOKEN_DIR}/token"
    secrets = {s["metadata"]["name"]: s for s in by_kind(objects, "Secret")}
    assert set(secrets) == {"sb-starburst", "sb-starburst-hook"}
    for secret in secrets.values():
        assert "skypilot-token" in secret["data"]
    by_name = pods(objects)
    assert token_volume(by_name["sb-starburst-hook-migrate"])["secretName"] == "sb-starburst-hook"
    controller = by_name["sb-starburst-controller"]
    assert token_volume(controller)["secretName"] == "sb-starburst"
    settings = load(controller, objects, tmp_path, monkeypatch)
    assert settings.skypilot_api_server == SKYPILOT_ENDPOINT
    assert settings.skypilot_token() == SKYPILOT_TOKEN


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_token_is_never_in_an_environment_variable_or_the_config_map(
    case: str, render: Render
) -> None:
    objects = render(CASES[case])
    for obj in by_kind(objects, "ConfigMap"):
        assert "sky_" not in yaml.safe_dump(obj["data"]), obj["metadata"]["name"]
    for name, pod in pods(objects).items():
        for container in [*(pod.get("initContainers") or []), *pod["containers"]]:
            for var in container.get("env") or []:
                assert "TOKEN" not in var["name"] or var["name"] == "STARBURST_BOOTSTRAP_TOKEN", (
                    name,
                    var["name"],
                )
                assert not str(var.get("value", "")).startswith("sky_"), (name, var["name"])


def test_without_skypilot_nothing_of_it_is_rendered(render: Render) -> None:
    values = {**CASES["skypilot-endpoint"], "cloud": {"provider": "none"}}
    objects = render(values)
    config = yaml.safe_load(named(objects, "ConfigMap", "sb-starburst")["data"]["settings.yaml"])
    assert not {k for k in config if k.startswith("skypilot")}
    for pod in pods(objects).values():
        assert "skypilot-token" not in {v["name"] for v in pod["volumes"]}
    assert "skypilot-token" not in named(objects, "Secret", "sb-starburst")["data"]


BAD: list[tuple[dict[str, Any], str]] = [
    ({"endpoint": "https://user:pw@sky.internal"}, "cloud.skypilot.apiServer.endpoint"),
    ({"endpoint": "sky.internal:46580"}, "cloud.skypilot.apiServer.endpoint"),
    (
        {"endpoint": SKYPILOT_ENDPOINT, "existingSecret": "skypilot-api"},
        "cloud.skypilot.apiServer.endpoint",
    ),
    ({"endpoint": SKYPILOT_ENDPOINT, "token": {"value": "guess"}}, "token.value"),
    ({"token": {"existingSecret": "skypilot-sa"}}, "cloud.skypilot.apiServer.token"),
    (
        {"endpoint": SKYPILOT_ENDPOINT, "token": {"value": SKYPILOT_TOKEN, "existingSecret": "s"}},
        "cloud.skypilot.apiServer.token.value",
    ),
    ({"endpoint": SKYPILOT_ENDPOINT, "tokn": {}}, "tokn"),
]


@pytest.mark.parametrize(("api_server", "field"), BAD, ids=[f for _, f in BAD])
def test_bad_api_server_values_fail_naming_the_field(
    api_server: dict[str, Any], field: str, helm: Path, tmp_path: Path
) -> None:
    values = {"database": DB, "cloud": {"skypilot": {"apiServer": api_server}}}
    done = run_helm(helm, "template", "sb", str(CHART), values=values, tmp=tmp_path)
    assert done.returncode != 0
    assert field in done.stderr, done.stderr
