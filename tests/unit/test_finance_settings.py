"""Finance settings are checked at start-up: rates, alert thresholds, the webhook URL."""

from __future__ import annotations

import pytest

from starburst.settings import SettingsError, load_settings


def test_finance_settings_defaults_and_values() -> None:
    default = load_settings()
    assert default.onprem_rates == {} and default.budget_alerts == [0.8, 1.0]
    assert default.budget_webhook is None
    chosen = load_settings(
        onprem_rates={"A100": 1.1, "*": 0.5},
        budget_alerts=[1.0, 0.5, 1.0],
        budget_webhook="https://hooks.example/finance",
    )
    assert chosen.budget_alerts == [0.5, 1.0]  # sorted, each once


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("onprem_rates", {"A100": -1.0}, "the rate of 'A100' is not from 0 to 1e"),
        ("budget_alerts", [0.8, 0.0], "alert thresholds are shares of a budget above 0"),
        ("budget_webhook", "file:///etc/passwd", "must be an http:// or https:// URL"),
    ],
)
def test_bad_finance_settings_are_refused_with_the_field(
    field: str, value: object, message: str
) -> None:
    with pytest.raises(SettingsError, match=f"{field}: Value error, {message}"):
        load_settings(**{field: value})
