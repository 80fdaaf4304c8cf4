"""The cost dashboard (``/ui``) in a real headless Chromium over a real PostgreSQL: with a
finance token it shows the very figures the REST report gives, downloads the report's CSV,
loads nothing from outside the API, and a user sees only their own costs. A screenshot is
written to ``bench/out/dashboard.png`` for review."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from starburst.core.lifecycle import JobState
from starburst.core.records import CostEntry, JobSpec

PG = pytest.mark.parametrize(
    "db_url", [pytest.param("postgresql", marks=pytest.mark.postgres)], indirect=True
)
SCREENSHOT = Path(__file__).resolve().parents[2] / "bench" / "out" / "dashboard.png"
NOV20 = datetime(2026, 11, 20, tzinfo=UTC).timestamp()
DAY = 86400.0


def _month_of_spending(store: Any, clock: Any) -> None:
    """Two teams, two clouds, an on-prem run, a budget: a month a finance analyst reads."""
    clock.set(NOV20)
    store.accounts.set_team_budget("ml", Decimal("500"), at=NOV20)
    store.accounts.set_team_budget("vision", Decimal("50"), at=NOV20)
    for day in range(1, 6):
        at = NOV20 - day * DAY
        a = store.submissions.submit(
            JobSpec(gpus=8, user="alice", team="ml", gpu_type="A100", name=f"train-{day}"), at=at
        ).job.id
        b = store.submissions.submit(
            JobSpec(gpus=1, user="bob", team="vision", gpu_type="T4", name=f"eval-{day}"), at=at
        ).job.id
        store.ledger.record_costs(
            [
                CostEntry(
                    a,
                    at,
                    at + 3600,
                    Decimal("32.80") * day / 2,
                    "aws",
                    region="us-east-1",
                    gpu_hours=8.0,
                ),
                CostEntry(
                    b,
                    at,
                    at + 1800,
                    Decimal("0.35") * day,
                    "gcp",
                    region="us-central1",
                    gpu_hours=0.5,
                ),
            ]
        )
    burst = store.submissions.submit(
        JobSpec(gpus=2, user="alice", team="ml", gpu_type="A100", name="burst"), at=NOV20 - 2 * DAY
    ).job.id
    for state in (JobState.QUEUED, JobState.BURSTING, JobState.RUNNING_CLOUD, JobState.SUCCEEDED):
        store.lifecycle.transition(burst, state, reason="t", actor="c", at=NOV20 - 2 * DAY + 3600)
    store.ledger.record_costs(
        [
            CostEntry(
                burst,
                NOV20 - 2 * DAY,
                NOV20 - 2 * DAY + 3600,
                Decimal("20.00"),
                "azure",
                region="eastus",
                gpu_hours=2.0,
            )
        ]
    )
    euro = store.submissions.submit(
        JobSpec(gpus=1, user="bob", team="vision", name="eu-run"), at=NOV20 - DAY
    ).job.id
    store.ledger.record_costs(
        [
            CostEntry(
                euro,
                NOV20 - DAY,
                NOV20 - DAY + 3600,
                Decimal("12.00"),
                "gcp",
                region="europe-west4",
                gpu_hours=1.0,
                currency="EUR",
            )
        ]
    )  # billed in euros: never added to the dollars
    local = store.submissions.submit(
        JobSpec(gpus=4, user="alice", team="ml", gpu_type="A100"), at=NOV20 - 3 * DAY
    ).job.id
    store.lifecycle.transition(local, JobState.QUEUED, reason="t", actor="c", at=NOV20 - 3 * DAY)
    store.lifecycle.transition(
        local, JobState.RUNNING_ONPREM, reason="t", actor="c", at=NOV20 - 3 * DAY
    )
    store.lifecycle.transition(
        local, JobState.SUCCEEDED, reason="t", actor="c", at=NOV20 - 3 * DAY + 7200
    )


@PG
@pytest.mark.parametrize(
    "api_options", [{"settings": {"onprem_rates": {"A100": 1.25}}}], indirect=True
)
def test_finance_sees_the_rest_figures_and_downloads_the_csv(  # type: ignore[no-untyped-def]
    api, browser, tmp_path
) -> None:
    _month_of_spending(api.store, api.clock)
    fin = api.client("fin")
    report = fin.get("/v1/costs", params={"by": "team,day"}).json()
    savings = fin.get("/v1/costs/savings").json()
    top = fin.get("/v1/costs", params={"by": "job", "top": 10}).json()["rows"]
    csv_text = fin.get("/v1/costs", params={"by": "team", "format": "csv"}).text
    (euros, total) = report["totals"]
    assert (euros["currency"], euros["amount"]) == ("EUR", "12.00")
    assert total["currency"] == "USD" and total["amount"] == "271.25"  # 32.80 × 15/2 + 5.25 + 20
    assert total["onprem_gpu_hours"] == 8.0  # 4 GPUs × 2 h
    assert total["onprem_amount"] == "10.00"  # at 1.25 $/GPU-h
    # No-Wait: the burst job as billed (20) + 8 on-prem A100 GPU-h at the burst's $3
    assert (savings["no_wait"], savings["actual"], savings["saved"]) == ("44.00", "20.00", "24.00")

    context = browser.new_context(accept_downloads=True)
    page = context.new_page()
    outside: list[str] = []
    page.on("request", lambda r: None if r.url.startswith(api.url) else outside.append(r.url))
    # what the page asked for and did not get (it shows "–" for a job name it could not read)
    failed: list[str] = []
    page.on("requestfailed", lambda r: failed.append(f"{r.url}: {r.failure}"))
    page.on(
        "response", lambda r: failed.append(f"{r.url}: {r.status}") if r.status >= 400 else None
    )
    page.goto(f"{api.url}/ui#token={api.tokens['fin']}")
    page.wait_for_selector("body[data-loaded='true']", timeout=30_000)
    text = page.inner_text
    assert text("#cloud-total") == "271.25 USD"
    assert text("#other-currencies") == "also 12.00 EUR"
    assert text("#onprem-gpu-hours") == "8 GPU-h"
    assert text("#onprem-amount") == "10.00 USD"
    assert text("#saved") == "24.00 USD (55%)"
    assert text("#no-wait") == f"{savings['no_wait']} USD"
    assert text("#actual") == f"{savings['actual']} USD"
    assert text("#whoami") == "signed in as fin (finance)"
    budgets = page.locator("#budgets tbody tr")
    assert budgets.count() == 2
    assert budgets.nth(1).inner_text().split("\t")[:3] == ["vision", "50.00 USD", "5.25 USD"]
    _top_jobs_are_the_rest_rows_with_names(page, fin, top, failed)
    assert set(_charts(page)) == {"by-team", "by-location", "savings-chart", "budget-chart"}
    _charts_draw_the_rest_figures(page, fin, "USD", savings)
    by_team = _charts(page)["by-team"]["datasets"]
    assert {d["label"]: sum(d["data"]) for d in by_team} == pytest.approx(
        {"ml": 266.0, "vision": 5.25}  # by hand: 32.80 × 15/2 + 20, and 0.35 × 15
    )
    page.select_option("#currency", "EUR")  # the euros, drawn on their own
    page.wait_for_selector("body[data-loaded='true']", timeout=30_000)
    assert text("#cloud-total") == "12.00 EUR"
    assert text("#other-currencies") == "also 271.25 USD"
    _charts_draw_the_rest_figures(page, fin, "EUR", savings)
    assert _charts(page)["by-location"]["datasets"] == [
        {"label": "gcp:europe-west4", "data": [12.0]}
    ]
    page.select_option("#currency", "USD")  # back to the dollars for the screenshot
    page.wait_for_selector("body[data-loaded='true']", timeout=30_000)
    assert text("#cloud-total") == "271.25 USD"
    page.select_option("#csv-by", "team")
    with page.expect_download() as download_info:
        page.click("#download-csv")
    saved_csv = tmp_path / "report.csv"
    download_info.value.save_as(saved_csv)
    assert saved_csv.read_text() == csv_text
    SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
    page.set_viewport_size({"width": 1280, "height": 1600})
    page.screenshot(path=str(SCREENSHOT), full_page=True)
    assert outside == []  # no CDN: it works offline
    context.close()


CHARTS_JS = """() => Object.fromEntries(Object.values(Chart.instances).map((c) => [
  c.canvas.id,
  { labels: c.data.labels,
    datasets: c.data.datasets.map((d) => ({ label: d.label, data: d.data })) },
]))"""


def _charts(page: Any) -> dict[str, Any]:
    """The data every chart on the page draws, by canvas id."""
    return dict(page.evaluate(CHARTS_JS))


def _per_day(rows: list[dict[str, Any]], key: str) -> dict[str, Any]:
    """What a stacked chart of ``rows`` (grouped by ``key`` and day) must draw."""
    days = sorted({r["key"]["day"] for r in rows})
    groups = sorted({r["key"][key] or "(none)" for r in rows})
    sums = {(g, d): Decimal(0) for g in groups for d in days}
    for r in rows:
        sums[(r["key"][key] or "(none)", r["key"]["day"])] += Decimal(r["amount"])
    return {
        "labels": days,
        "datasets": [{"label": g, "data": [float(sums[(g, d)]) for d in days]} for g in groups],
    }


def _charts_draw_the_rest_figures(page: Any, fin: Any, currency: str, savings: Any) -> None:
    """Each chart's data equals the REST figures in the currency shown."""
    drawn = _charts(page)

    def rows(by: str) -> list[dict[str, Any]]:
        report = fin.get("/v1/costs", params={"by": by}).json()
        return [r for r in report["rows"] if r["currency"] == currency]

    assert drawn["by-team"] == _per_day(rows("team,day"), "team")
    located = [r for r in rows("location,day") if r["key"]["location"] != "onprem"]
    assert drawn["by-location"] == _per_day(located, "location")
    assert drawn["savings-chart"]["datasets"][0]["data"] == [
        float(savings["no_wait"]),
        float(savings["actual"]),
    ]
    budgets = [b for b in fin.get("/v1/costs/budgets").json() if b["currency"] == currency]
    assert drawn["budget-chart"] == {
        "labels": [b["team"] for b in budgets],
        "datasets": [
            {"label": name, "data": [float(b[field]) for b in budgets]}
            for name, field in (
                ("spent", "spent"),
                ("forecast", "forecast"),
                ("limit", "monthly_limit"),
            )
        ],
    }


def _top_jobs_are_the_rest_rows_with_names(
    page: Any, fin: Any, top: list[Any], failed: list[str]
) -> None:
    """The table lists the REST top jobs (the top ten of each currency) in order, each with
    its name, id and cost in its own currency (``failed``: the page's requests that failed,
    told when the names are wrong)."""
    shown = [
        page.locator("#top-jobs tbody tr").nth(i).inner_text().split("\t")[:3]
        for i in range(page.locator("#top-jobs tbody tr").count())
    ]
    names = {r["key"]["job"]: fin.get(f"/v1/jobs/{r['key']['job']}").json()["name"] for r in top}
    assert shown == [
        [names[r["key"]["job"]] or "–", r["key"]["job"], f"{r['amount']} {r['currency']}"]
        for r in top
    ], f"the page's failed requests: {failed}"
    assert [r["currency"] for r in top].count("EUR") == 1 and len(top) == 11
    assert shown[0][0] == "eu-run" and shown[1][0] == "train-5"  # by hand: 12 EUR; 82 USD


@PG
def test_a_read_the_network_dropped_is_asked_again(  # type: ignore[no-untyped-def]
    api, browser
) -> None:
    """The first request for each job's name gets no answer at all (as Chromium's
    ``ERR_NETWORK_CHANGED`` when an interface came up mid-request, seen in CI): the page
    asks again and shows every name, not "–"."""
    _month_of_spending(api.store, api.clock)
    context = browser.new_context()
    page = context.new_page()
    dropped: list[str] = []

    def drop_first(route: Any) -> None:
        if route.request.url in dropped:
            route.continue_()
        else:
            dropped.append(route.request.url)
            route.abort("internetdisconnected")

    page.route("**/v1/jobs/*", drop_first)
    page.goto(f"{api.url}/ui#token={api.tokens['bob']}")
    page.wait_for_selector("body[data-loaded='true']", timeout=30_000)
    rows = page.locator("#top-jobs tbody tr")
    names = [rows.nth(i).inner_text().split("\t")[0] for i in range(rows.count())]
    assert dropped and len(names) == 6  # bob's five evals and the euro run, each dropped once
    assert "–" not in names and "eu-run" in names
    context.close()


@PG
def test_a_user_sees_their_own_costs_and_a_bad_token_is_told(  # type: ignore[no-untyped-def]
    api, browser
) -> None:
    _month_of_spending(api.store, api.clock)
    context = browser.new_context()
    page = context.new_page()
    page.goto(f"{api.url}/ui#token={api.tokens['bob']}")
    page.wait_for_selector("body[data-loaded='true']", timeout=30_000)
    assert page.inner_text("#cloud-total") == "5.25 USD"  # bob's spending only
    assert "showing the costs of user bob" in page.inner_text("#whoami")
    assert page.inner_text("#savings-note") == "savings need the finance role"
    assert page.locator("#budgets tbody tr").count() == 1  # his team's
    page.fill("#token", "sb_not-a-token")
    page.click("#token-form button[type=submit]")
    page.wait_for_selector("body[data-loaded='error']", timeout=30_000)
    assert "enter a valid API token" in page.inner_text("#error")
    context.close()
