"""``Settings`` grouped by concern (issue 35): every setting belongs to exactly one group, a
group's validators run on the whole ``Settings``, the environment variable of a setting is
``STARBURST_<NAME>`` whatever its group, and the settings reference lists each group apart."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from docs.gen import reference
from starburst.settings import SETTINGS_GROUPS, Settings, SettingsError, load_settings


def _fields_of(group: type[BaseModel]) -> list[str]:
    return [name for name in group.__annotations__ if not name.startswith("_")]


def test_every_setting_is_in_exactly_one_group() -> None:
    grouped = [name for group in SETTINGS_GROUPS for name in _fields_of(group)]
    assert len(grouped) == len(set(grouped))
    assert set(grouped) == set(Settings.model_fields)
    assert list(Settings.model_fields) == grouped  # the reference's order is the groups'
    assert {g.__name__ for g in SETTINGS_GROUPS} == {
        "StoreSettings",
        "ClusterSettings",
        "CloudSettings",
        "PolicySettings",
        "SpendSettings",
        "ApiSettings",
        "ControllerSettings",
    }
    assert all(issubclass(Settings, group) for group in SETTINGS_GROUPS)


def test_the_environment_names_do_not_change_with_the_groups(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("STARBURST_LOCAL_GPUS", "7")  # ClusterSettings
    monkeypatch.setenv("STARBURST_QUEUE_CAP", "3")  # PolicySettings
    monkeypatch.setenv("STARBURST_LEASE_DURATION_S", "20")  # ControllerSettings
    settings = load_settings()
    assert (settings.local_gpus, settings.queue_cap, settings.lease_duration_s) == (7, 3, 20.0)


@pytest.mark.parametrize(
    ("values", "words"),
    [
        ({"database_url": "starburst.db"}, "must be a URL"),  # StoreSettings
        ({"local_job_uids": "9-1"}, "local_job_uids"),  # ClusterSettings
        ({"skypilot_api_server": "ftp://x"}, "SkyPilot API server"),  # CloudSettings
        ({"budget_webhook": "ftp://x"}, "http:// or https://"),  # SpendSettings
        ({"api_host": "0.0.0.0"}, "not a loopback address"),  # ApiSettings, model-level
        ({"kubernetes_auth": True}, "kubernetes_auth needs auth"),  # ApiSettings, model-level
        ({"local_run_as": "x"}, "local_run_as is gone"),  # Settings itself
    ],
)
def test_each_groups_checks_still_refuse_bad_values(values: dict[str, object], words: str) -> None:
    with pytest.raises(SettingsError, match=words):
        load_settings(None, **values)


def test_the_reference_lists_the_settings_group_by_group() -> None:
    page = reference.settings_page()
    headings = [line[3:] for line in page.splitlines() if line.startswith("## ")]
    assert headings == [g.__name__.removesuffix("Settings") for g in SETTINGS_GROUPS]
    cluster = page.split("## Cluster", 1)[1].split("\n## ", 1)[0]
    assert "`local_gpus`" in cluster and "`policy`" not in cluster
