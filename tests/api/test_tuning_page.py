"""The "choose your budget" page (``/ui/tuning``) in a real headless Chromium: an admin
reaches it from the cost dashboard, replays history and sees the very rows and
recommendation the REST API gives, applies the cheapest setting and sees it in the log; a
user is told the page is for admins; nothing is loaded from outside the API. A screenshot
goes to ``bench/out/tuning.png`` for review."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from starburst.adapters.db.tuning import TuningRecords
from tests.support.browser import ARGS, chromium_path
from tests.tune.histories import record_history

SCREENSHOT = Path(__file__).resolve().parents[2] / "bench" / "out" / "tuning.png"
DAY = 86_400.0


@pytest.fixture
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    path = chromium_path()
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=path, args=ARGS, headless=True)
        yield launched
        launched.close()


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
    page.click("#apply")
    page.wait_for_selector("#log tbody tr", timeout=30_000)
    applied = TuningRecords(api.store).setting_in_force()
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


def test_a_user_is_told_the_page_is_for_admins(api, browser) -> None:  # type: ignore[no-untyped-def]
    page = browser.new_context().new_page()
    page.goto(f"{api.url}/ui/tuning#token={api.tokens['alice']}")
    page.wait_for_selector("body[data-loaded='true']", timeout=30_000)
    assert "this needs admin" in page.inner_text("#error")
    page.click("#replay")
    page.wait_for_selector("body[data-tuned='true']", timeout=30_000)
    assert "HTTP 403" in page.inner_text("#error")
    assert TuningRecords(api.store).setting_in_force() is None
