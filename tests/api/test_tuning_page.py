"""The "choose your budget" page (``/ui/tuning``) in a real headless Chromium: an admin
reaches it from the cost dashboard, replays history and sees the very rows, recommendation
and chart points the REST API gives, applies the cheapest setting and sees it in the log;
a choice that is today's setting cannot be applied again; a user is told the page is for
admins; nothing is loaded from outside the API. A screenshot goes to
``bench/out/tuning.png`` for review."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.tune.histories import record_history, record_scheduler

SCREENSHOT = Path(__file__).resolve().parents[2] / "bench" / "out" / "tuning.png"
DAY = 86_400.0
#: the chart's datasets as Chart.js holds them: label and (x, y, point label) per point
CHART = """() => Chart.getChart("chart").data.datasets.map((d) => ({
    label: d.label, type: d.type || "scatter",
    points: d.data.map((p) => [p.x, p.y, p.label === undefined ? null : p.label]) }))"""


def point(row: dict[str, Any]) -> list[Any]:
    """A row as the chart must plot it: cloud $, mean JCT change in percent, its label."""
    return [
        pytest.approx(row["cloud_cost_usd"]),
        pytest.approx(100 * row["jct_change"]),
        row["label"],
    ]


def test_an_admin_replays_history_and_applies_the_cheapest(api, browser) -> None:  # type: ignore[no-untyped-def]
    record_history(api.store, api.clock.t - 10 * DAY)
    request = {
        "since_s": 20 * DAY,
        "budgets": [0.1, 0.5],
        "policies": ["compute"],
        "max_jct_increase": 10.0,
    }
    expected = api.client("root").post("/v1/tuning/runs", json=request).json()
    page = browser.new_context().new_page()
    outside: list[str] = []
    page.on("request", lambda r: None if r.url.startswith(api.url) else outside.append(r.url))
    page.goto(f"{api.url}/ui/tuning#token={api.tokens['root']}")
    page.wait_for_selector("body[data-loaded='true']", timeout=30_000)
    assert page.inner_text("#whoami") == "signed in as root (admin)"
    page.fill("#days", "20")
    page.fill("#budgets", "0.1,0.5")
    page.fill("#policies", "compute")
    page.fill("#tolerance", "1000")
    page.click("#replay")
    page.wait_for_selector("body[data-tuned='true']", timeout=60_000)
    assert page.inner_text("#error") == ""
    rows = page.locator("#results tbody tr")
    assert rows.count() == len(expected["rows"])
    labels = [rows.nth(i).inner_text().split("\t")[0] for i in range(rows.count())]
    assert labels == [r["label"] for r in expected["rows"]]
    cheapest = expected["recommendation"]["cheapest"]
    assert page.inner_text("#cheapest").startswith(cheapest["label"] + ": $")
    chart = {d["label"]: d for d in page.evaluate(CHART)}
    assert chart["settings"]["points"] == [point(r) for r in expected["rows"]]
    rec = expected["recommendation"]
    for caption, key in (("today", "today"), ("recommended", "cheapest"), ("knee", "knee")):
        if rec[key] is not None:
            assert chart[f"{caption}: {rec[key]['label']}"]["points"] == [point(rec[key])]
    assert rec["today"] is not None and f"today: {rec['today']['label']}" in chart
    costs = [r["cloud_cost_usd"] for r in expected["rows"]]
    tolerance = chart["tolerance +1000.0%"]
    assert tolerance["type"] == "line" and tolerance["points"] == [
        [pytest.approx(min(costs)), pytest.approx(1000.0), None],
        [pytest.approx(max(costs)), pytest.approx(1000.0), None],
    ]
    assert len(chart) == 2 + sum(rec[k] is not None for k in ("today", "cheapest", "knee"))
    page.click("#apply")
    page.wait_for_selector("#log tbody tr", timeout=30_000)
    applied = api.store.tuning.setting_in_force()
    assert applied is not None and applied.actor == "api:root"
    assert applied.setting.policy.value == cheapest["policy"]
    assert applied.setting.budget == cheapest["budget"]
    assert cheapest["label"] in applied.reason
    assert page.locator("#log tbody tr").nth(0).inner_text().split("\t")[1] == "api:root"
    SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
    page.set_viewport_size({"width": 1280, "height": 1000})
    page.screenshot(path=str(SCREENSHOT), full_page=True)
    assert outside == []


def test_the_cost_dashboard_links_to_the_tuning_page(api, browser) -> None:  # type: ignore[no-untyped-def]
    page = browser.new_context().new_page()
    page.goto(f"{api.url}/ui#token={api.tokens['root']}")
    page.click("#tuning-link")
    page.wait_for_selector("body[data-loaded='true']", timeout=30_000)
    assert page.url == f"{api.url}/ui/tuning"
    assert page.inner_text("h1") == "Choose your budget"
    assert page.inner_text("#whoami") == "signed in as root (admin)"  # the same token


def test_todays_setting_cannot_be_applied_again(api, browser) -> None:  # type: ignore[no-untyped-def]
    record_history(api.store, api.clock.t - 10 * DAY)
    record_scheduler(api.store, coefficient=0.001)  # today's row: the controller's own c
    page = browser.new_context().new_page()
    page.goto(f"{api.url}/ui/tuning#token={api.tokens['root']}")
    page.wait_for_selector("body[data-loaded='true']", timeout=30_000)
    page.fill("#days", "20")
    page.fill("#budgets", "0.25")
    page.fill("#policies", "compute")
    page.fill("#tolerance", "1000")
    page.click("#replay")
    page.wait_for_selector("body[data-tuned='true']", timeout=60_000)
    assert page.inner_text("#cheapest").startswith("Starburst b=0.25: $")  # not "(today, c=…)"
    assert page.is_disabled("#apply")
    assert page.inner_text("#apply") == "The cheapest is already in force"


def test_a_user_is_told_the_page_is_for_admins(api, browser) -> None:  # type: ignore[no-untyped-def]
    page = browser.new_context().new_page()
    page.goto(f"{api.url}/ui/tuning#token={api.tokens['alice']}")
    page.wait_for_selector("body[data-loaded='true']", timeout=30_000)
    assert "this needs admin" in page.inner_text("#error")
    page.click("#replay")
    page.wait_for_selector("body[data-tuned='true']", timeout=30_000)
    assert "HTTP 403" in page.inner_text("#error")
    assert api.store.tuning.setting_in_force() is None
