"""One story per job: ``jobs``, ``queue``, ``status``, ``explain`` and the dashboard say the
same thing about where a waiting job goes next and when (``core.outlook``), for every hold
and reason — and the next controller pass does what they said. Through the real CLI and a
headless Chromium against a served app, a controller pass on virtual time (PostgreSQL).

The scene, on a 4-GPU cluster that a 4-GPU job fills, every budget its declared runtime
(the runtime policy, c = 1), 2 min after the pass that admitted everything:
- *fits*: within its budget — on-prem when GPUs free, else the cloud at the budget's end;
- *spent*: its wait budget spent — the cloud on the next pass;
- *ceiling*: past its budget, but bursting would take team vision above its $/h ceiling;
- *team*: past its budget, but team ml's monthly cloud budget is spent;
- *never*: 16 GPUs, which the cluster can never hold, of team ml: it waits for the hold to
  lift, and neither "on-prem when GPUs free" nor a time it goes to the cloud is shown;
- *dep*: held until the blocker succeeds; *array*: held for a slot of its array.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import ExitStack
from decimal import Decimal
from typing import Any

import pytest

from starburst.core.capacity import uniform_nodes
from starburst.core.dependencies import AfterKind, Dependency
from starburst.core.holds import team_holds
from starburst.core.lifecycle import JobState
from starburst.core.policy import PolicyKind, WaitPolicy
from starburst.core.records import CostEntry, JobSpec
from starburst.sim.cloud import SimCloud
from starburst.sim.cluster import SimCluster
from tests.api.conftest import LiveServer, serve_loop
from tests.api.test_cli import run
from tests.support.clock import ManualClock

PG = pytest.mark.parametrize(
    "db_url", [pytest.param("postgresql", marks=pytest.mark.postgres)], indirect=True
)
CEILING = 4.0  # $/h for a team; the simulated cloud asks $2.50 per GPU-hour
HOUR = 3600.0


class Long(dict[str, float]):
    """Every job runs ten hours on the simulated cluster (the blocker keeps the node)."""

    def get(self, key: str, default: float | None = None) -> float:  # type: ignore[override]
        return 10 * HOUR


def _spec(name: str, gpus: int, team: str, runtime: float, **more: Any) -> JobSpec:
    user = "alice" if team == "ml" else "bob"
    return JobSpec(
        gpus=gpus,
        name=name,
        user=user,
        team=team,
        command="true",
        declared_runtime=runtime,
        **more,
    )


def _scene(store: Any, clock: ManualClock, loop: Any) -> dict[str, str]:
    ids: dict[str, str] = {}

    def submit(spec: JobSpec) -> None:
        clock.advance(1)
        ids[spec.name or ""] = store.submissions.submit(spec, at=clock.now()).job.id

    submit(_spec("blocker", 4, "vision", HOUR))
    submit(_spec("never", 16, "ml", 60))
    submit(_spec("fits", 1, "vision", 10 * HOUR))
    submit(_spec("spent", 1, "vision", 60))
    submit(_spec("ceiling", 2, "vision", 60))
    submit(_spec("team", 1, "ml", 60))
    submit(_spec("dep", 1, "vision", 60, after=(Dependency(ids["blocker"], AfterKind.OK),)))
    for i in range(2):
        submit(_spec(f"array-{i}", 1, "vision", 10 * HOUR, array="bob/sweep", array_limit=1))
    # team ml has spent its month's cloud budget
    store.accounts.set_team_budget("ml", Decimal("1.00"), at=clock.now())
    store.ledger.record_costs(
        [CostEntry(ids["never"], clock.now() - 10, clock.now(), Decimal("2.00"), "sim")]
    )
    store.tuning.record_cluster_shape(uniform_nodes(1, 4))  # as the daemon does, leading
    loop.run_pass()
    clock.advance(120)  # the 60 s budgets are spent; no pass has run since
    return ids


def _listings(env: dict[str, str]) -> tuple[dict[str, Any], dict[str, Any], str]:
    """``jobs`` and ``queue`` as data, and the ``jobs`` table, as one caller sees them."""
    listed = {r["id"]: r for r in json.loads(run(["jobs", "-o", "json"], env).stdout)}
    queue = {r["id"]: r for r in json.loads(run(["queue", "-o", "json"], env).stdout)}
    return listed, queue, run(["jobs"], env).stdout


def _views(env: dict[str, str], listings: Any, job_id: str) -> dict[str, str]:
    """What each CLI view says about one job, as its owner sees it."""
    listed, queue, table = listings
    status = run(["status", job_id], env).stdout
    (next_line,) = [line for line in status.splitlines() if line.startswith("next:")]
    explained = run(["explain", job_id], env).stdout.splitlines()[0]
    (row,) = [line for line in table.splitlines() if f" {job_id[:8]} " in line]
    return {
        "jobs": listed[job_id]["plan"],
        "jobs table": row,
        "queue": queue[job_id]["plan"],
        "status": next_line.removeprefix("next:").strip(),
        "explain": explained,
    }


@PG
def test_every_view_tells_the_same_story_for_every_hold(  # type: ignore[no-untyped-def]
    db_url: str,
    clock: ManualClock,
    resources: ExitStack,
    open_store: Callable[[str], Any],
    serve: Callable[[Any], LiveServer],
    browser,
) -> None:
    store = open_store(db_url)
    cluster = SimCluster(uniform_nodes(1, 4), clock, Long())
    cloud = SimCloud(clock, 2.5, runtimes=Long())
    loop, api, env = serve_loop(
        db_url,
        store,
        clock,
        resources,
        serve,
        cluster,
        cloud,
        WaitPolicy(PolicyKind.RUNTIME, coefficient=1.0),
        {
            "team_ceiling": CEILING,
            "hold": lambda now: team_holds(store.accounts, store.ledger, now),
        },
        settings={"max_team_cloud_price": CEILING},
        quote=lambda: cloud.quote,
    )
    ids = _scene(store, clock, loop)
    assert store.jobs.get(ids["blocker"]).state is JobState.RUNNING_ONPREM
    ml = "team ml spent $2.00 of its $1.00 cloud budget for"
    ceiling = "team vision runs $0.00/h in the cloud; bursting this job ($5.00/h"
    expected = {
        "fits": "on-prem when GPUs free, else the cloud in 9h57m",
        "spent": "the cloud on the next pass (its wait budget is spent)",
        "ceiling": f"on-prem when GPUs free; held from the cloud ({ceiling}",
        "team": f"on-prem when GPUs free; held from the cloud ({ml}",
        "never": f"the cloud once a hold lifts ({ml}",
        "dep": f"held: waiting for job {ids['blocker']} to succeed",
        "array-1": "held: waiting for a slot of array bob/sweep",
    }
    shown: dict[str, str] = {}
    owners = {who: dict(env, STARBURST_TOKEN=api.tokens[who]) for who in ("alice", "bob")}
    listings = {who: _listings(owner) for who, owner in owners.items()}
    for name, start in expected.items():
        job_id = ids[name]
        who = "alice" if name in ("never", "team") else "bob"
        views = _views(owners[who], listings[who], job_id)
        plan = views["jobs"]
        assert plan.startswith(start), (name, plan)
        assert views["queue"] == views["status"] == plan, (name, views)
        assert plan in views["explain"] and plan in views["jobs table"], (name, views)
        shown[job_id] = plan
    never = shown[ids["never"]]
    assert never.endswith(
        "it never fits on-prem (needs 16 GPUs and the private cluster has 4 GPUs in all)"
    )
    assert "GPUs free" not in never and "the cloud in" not in never
    for name in ("never", "team", "ceiling", "dep", "array-1"):  # nothing sends them there
        assert api.client("fin").get(f"/v1/jobs/{ids[name]}").json()["bursts_at"] is None

    # the dashboard shows the API's words for every waiting job
    page = browser.new_context().new_page()
    page.goto(f"{api.url}/ui#token={api.tokens['fin']}")
    page.wait_for_selector("body[data-loaded='true']", timeout=30_000)
    rows = page.locator("#queue tbody tr")
    on_page = {
        rows.nth(i).get_attribute("data-job"): rows.nth(i).locator("td").nth(4).inner_text()
        for i in range(rows.count())
    }
    for job_id, plan in shown.items():
        assert on_page[job_id] == plan

    # and the next pass does what they said
    report = loop.run_pass()
    assert {b for b in report.burst} == {ids["spent"]}
    assert {job_id for job_id, _ in report.held} >= {ids["ceiling"], ids["team"], ids["never"]}
    for name in ("fits", "ceiling", "team", "never", "array-0"):
        assert store.jobs.get(ids[name]).state is JobState.QUEUED, name
    for name in ("dep", "array-1"):
        assert store.jobs.get(ids[name]).state is JobState.SUBMITTED, name
