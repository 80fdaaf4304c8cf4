"""The settings file the chart renders is one Starburst accepts, with the values asked for.

The ConfigMap's ``settings.yaml`` is loaded through ``starburst.settings.load_settings`` (the
loader every command uses) with the database URL from the environment, as in the pods.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from starburst.core.policy import PolicyKind
from starburst.pricing import parse_price_table
from starburst.settings import load_settings
from tests.helm.conftest import CASES, DB, Render, named


@pytest.mark.parametrize("case", sorted(CASES))
def test_rendered_settings_load(
    case: str, render: Render, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = named(render(CASES[case]), "ConfigMap", "sb-starburst")["data"]
    path = tmp_path / "settings.yaml"
    path.write_text(config["settings.yaml"])
    monkeypatch.setenv("STARBURST_DATABASE_URL", DB["url"])
    settings = load_settings(path)
    assert settings.cluster == "kubernetes"
    assert settings.leader_election == "lease"
    assert settings.api_host == "0.0.0.0"
    assert settings.lease_namespace == "starburst"
    assert settings.database_url == DB["url"]
    if "prices.yaml" in config:
        assert str(settings.price_table) == "/etc/starburst/prices.yaml"
        assert parse_price_table(yaml.safe_load(config["prices.yaml"]))


def test_values_reach_the_settings(render: Render, tmp_path: Path) -> None:
    values = {
        **CASES["defaults"],
        "cloud": {"provider": "none"},
        "settings": {
            "policy": "star",
            "budget": 0.5,
            "queue_cap": "none",
            "pass_interval_s": 5,
            "auth": False,
            "allow_insecure_no_auth": True,  # the chart listens on 0.0.0.0
        },
    }
    path = tmp_path / "settings.yaml"
    path.write_text(named(render(values), "ConfigMap", "sb-starburst")["data"]["settings.yaml"])
    settings = load_settings(path)
    assert (settings.policy, settings.budget, settings.queue_cap) == (PolicyKind.STAR, 0.5, None)
    assert (settings.pass_interval_s, settings.auth, settings.cloud) == (5.0, False, "none")
