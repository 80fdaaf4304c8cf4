"""The settings every Starburst container of the chart reads are ones Starburst accepts.

For each case of the values matrix and each container (controller, API, migration hook
steps), the test plays the kubelet (``podview``): the container's env with its Secret
references resolved, its ConfigMap and Secret volumes written as files; then
``starburst.settings.load_settings`` (the loader every command uses) reads them as the
container would. Values set under ``settings:`` reach the settings file.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from starburst.core.policy import PolicyKind
from starburst.pricing import load_price_table
from starburst.settings import Settings, load_settings
from tests.helm import podview
from tests.helm.conftest import CASES, EXISTING, Render, named


def starburst_containers(
    objects: list[dict[str, Any]],
) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(where, pod spec, container) for every container running Starburst (its settings)."""
    found = []
    for obj in objects:
        if obj["kind"] not in ("Deployment", "Job"):
            continue
        pod = obj["spec"]["template"]["spec"]
        for container in [*(pod.get("initContainers") or []), *pod["containers"]]:
            if "STARBURST_CONFIG" in {e["name"] for e in container.get("env") or []}:
                found.append((f"{obj['metadata']['name']}/{container['name']}", pod, container))
    return found


def load_as(
    pod: dict[str, Any],
    container: dict[str, Any],
    objects: list[dict[str, Any]],
    root: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Settings:
    """The settings ``container`` loads in its pod."""
    view = podview.settings_view(pod, container, root, podview.rendered(objects, EXISTING))
    with monkeypatch.context() as env:
        for name in [n for n in os.environ if n.startswith("STARBURST_")]:
            env.delenv(name)
        for name, value in view.env.items():
            if name.startswith("STARBURST_"):
                env.setenv(name, value)
        return load_settings(view.config)


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_container_loads_its_settings(
    case: str, render: Render, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    objects = render(CASES[case])
    containers = starburst_containers(objects)
    assert len(containers) >= 3, [where for where, _, _ in containers]
    for n, (where, pod, container) in enumerate(containers):
        if container.get("command"):  # check-prices: not a starburst command
            continue
        settings = load_as(pod, container, objects, tmp_path / str(n), monkeypatch)
        assert settings.cluster == "kubernetes", where
        assert settings.leader_election == "lease"
        assert settings.api_host == "0.0.0.0"
        assert settings.lease_namespace == "starburst"
        assert settings.database_url.startswith("postgresql://starburst:")
        if settings.price_table is not None:
            assert load_price_table(settings.price_table).gpus


def test_values_reach_the_settings(
    render: Render, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The admin knobs the README documents pass the schema and land in the file."""
    values = {
        **CASES["defaults"],
        "cloud": {"provider": "none"},
        "settings": {
            "policy": "compute-expected",
            "budget": 0.5,
            "queue_cap": "none",
            "pass_interval_s": 5,
            "auth": False,
            "allow_insecure_no_auth": True,  # the chart listens on 0.0.0.0
            "onprem_rates": {"A100": 1.1, "*": 0.6},
            "budget_alerts": [0.5, 0.9],
            "budget_webhook": "https://hooks.example.com/starburst",
            "max_job_cloud_price": 40.0,
            "max_team_cloud_price": 200,
            "use_spot": True,
            "calibration_window": 500,
        },
    }
    objects = render(values)
    pod = named(objects, "Deployment", "-controller")["spec"]["template"]["spec"]
    s = load_as(pod, pod["containers"][0], objects, tmp_path, monkeypatch)
    assert (s.policy, s.budget, s.queue_cap) == (PolicyKind.COMPUTE_EXPECTED, 0.5, None)
    assert (s.pass_interval_s, s.auth, s.cloud) == (5.0, False, "none")
    assert s.onprem_rates == {"A100": 1.1, "*": 0.6} and s.budget_alerts == [0.5, 0.9]
    assert s.budget_webhook == "https://hooks.example.com/starburst"
    assert (s.max_job_cloud_price, s.max_team_cloud_price) == (40.0, 200.0)
    assert s.use_spot and s.calibration_window == 500
