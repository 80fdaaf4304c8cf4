"""``/v1/tuning``: tune over HTTP for admins; everyone else is refused; bad input is a 422."""

from __future__ import annotations

import pytest

from tests.tune.histories import record_history, record_scheduler

DAY = 86_400.0


def test_an_admin_tunes_on_history_and_applies_the_recommendation(api) -> None:  # type: ignore[no-untyped-def]
    record_history(api.store, api.clock.t - 10 * DAY)
    root = api.client("root")
    answer = root.post(
        "/v1/tuning/runs",
        json={
            "since_s": 20 * DAY,
            "budgets": [0.1, 0.5],
            "policies": ["compute", "constant"],
            "max_jct_increase": 10.0,
            "apply": True,
        },
    )
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["jobs"] == 80 and body["price_per_gpu_hour"] == pytest.approx(2.5)
    labels = [r["label"] for r in body["rows"]]
    assert "No-Wait" in labels and "Starburst b=0.5" in labels
    assert any(label.endswith("(today)") for label in labels)  # the settings' b=0.25
    cheapest = body["recommendation"]["cheapest"]
    assert cheapest["jct_change"] <= 10.0 and cheapest.get("role") != "today"
    applied = body["applied"]
    assert applied is not None and applied["actor"] == "api:root"
    assert body["already_in_force"] is False
    assert applied["budget"] == cheapest["budget"] and applied["policy"] == cheapest["policy"]
    log = root.get("/v1/tuning/settings").json()
    assert log["in_force"]["id"] == applied["id"] and len(log["log"]) == 1
    in_force = api.store.tuning.setting_in_force()
    assert in_force is not None and in_force.id == applied["id"]


def test_applying_todays_budget_is_already_in_force_and_logs_nothing(api) -> None:  # type: ignore[no-untyped-def]
    record_history(api.store, api.clock.t - 10 * DAY)
    record_scheduler(api.store, coefficient=0.001)  # the controller's own refit, not tune's
    body = (
        api.client("root")
        .post(
            "/v1/tuning/runs",
            json={
                "since_s": 20 * DAY,
                "budgets": [0.25],
                "policies": ["compute"],
                "max_jct_increase": 10.0,
                "apply": True,
            },
        )
        .json()
    )
    cheapest = body["recommendation"]["cheapest"]
    assert cheapest["label"] == "Starburst b=0.25" and cheapest.get("role") != "today"
    today = body["recommendation"]["today"]
    assert today["label"] == "Starburst b=0.25 (today, c=0.001)"
    assert cheapest["in_force"] == 1 and today["in_force"] == 1
    assert body["applied"] is None and body["already_in_force"] is True
    assert api.store.tuning.settings_log() == []


def test_a_setting_applied_by_hand_is_logged_with_its_reason(api) -> None:  # type: ignore[no-untyped-def]
    root = api.client("root")
    made = root.post(
        "/v1/tuning/settings",
        json={"policy": "compute", "budget": 0.1, "out_of_order": True, "reason": "holiday week"},
    )
    assert made.status_code == 201, made.text
    assert made.json()["reason"] == "holiday week"
    assert root.get("/v1/tuning/settings").json()["in_force"]["budget"] == 0.1


def test_only_admins_may_tune(api) -> None:  # type: ignore[no-untyped-def]
    for who, code in (("alice", 403), ("fin", 403), (None, 401)):
        client = api.client(who)
        assert client.post("/v1/tuning/runs", json={}).status_code == code
        assert client.get("/v1/tuning/settings").status_code == code
        assert (
            client.post(
                "/v1/tuning/settings", json={"policy": "compute", "reason": "x"}
            ).status_code
            == code
        )
    assert api.store.tuning.setting_in_force() is None


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"budgets": [-1]}, "budgets.0"),
        ({"budgets": []}, "budgets"),
        ({"policies": ["bogus"]}, "policies.0"),
        ({"since_s": 0}, "since_s"),
        ({"max_jct_increase": -0.1}, "max_jct_increase"),
        ({"choose": "best"}, "choose"),
        ({"surprise": 1}, "surprise"),
    ],
)
def test_bad_requests_are_422_naming_the_field(api, body, words) -> None:  # type: ignore[no-untyped-def]
    answer = api.client("root").post("/v1/tuning/runs", json=body)
    assert answer.status_code == 422 and words in answer.json()["detail"]


def test_no_history_or_no_shape_is_a_422_that_says_so(api) -> None:  # type: ignore[no-untyped-def]
    root = api.client("root")
    empty = root.post("/v1/tuning/runs", json={})
    assert empty.status_code == 422 and "no finished jobs" in empty.json()["detail"]
    bad = root.post(
        "/v1/tuning/settings", json={"policy": "compute", "coefficient": -1, "reason": "x"}
    )
    assert bad.status_code == 422 and "coefficient" in bad.json()["detail"]
