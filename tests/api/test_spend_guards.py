"""Nobody spends what an admin did not allow (issue 33, findings 1 and 7), tried as
each user would: the real CLI against a served app with auth on, the shipped price table,
and a controller pass on virtual time (SQLite and PostgreSQL).

1. A typo (4,096 GPUs) is refused at submit with the price, the default job ceiling and the
   setting that allows it; a job that can never fit on-prem but is within the ceiling still
   bursts at once; ``--dry-run`` says where a job would go and at what price; a job that
   never passed the API (a Kubernetes Job) waits on-prem instead of bursting above it.
7. Unknown GPU types and clouds are refused at submit, naming the valid ones; spot is priced
   and metered as spot on the emulated cloud.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import ExitStack
from decimal import Decimal
from pathlib import Path
from typing import Any

from starburst.controller.loop.budgets import BudgetGate
from starburst.core.capacity import uniform_nodes
from starburst.core.lifecycle import JobState
from starburst.core.policy import PolicyKind, WaitPolicy
from starburst.core.records import JobSpec, Role
from starburst.pricing import load_price_table
from starburst.settings import Settings
from starburst.sim.cloud import SimCloud
from starburst.sim.cluster import SimCluster
from tests.api.conftest import LiveServer, serve_loop
from tests.api.test_cli import run
from tests.api.test_job_dependencies import EveryJob
from tests.support.clock import ManualClock
from tests.support.databases import BOTH

NOW = 1_796_000_000.0  # 2026-11-30
POLICY = WaitPolicy(PolicyKind.COMPUTE, 600.0)  # a 16-GPU job would wait 2h40m on its budget
ALL = tuple(JobState)


def world(  # type: ignore[no-untyped-def]
    db_url: str,
    clock: ManualClock,
    resources: ExitStack,
    open_store: Callable[[str], Any],
    serve: Callable[[Any], LiveServer],
    **settings: Any,
):
    """A 4-GPU private cluster, a simulated cloud, the budget gate the controller builds and
    a served API pricing from the shipped table; alice (ml), bob (vision), carol (no team)."""
    clock.set(NOW)
    store = open_store(db_url)
    given = Settings(database_url=db_url, **settings)
    gate = BudgetGate(
        store.accounts,
        store.ledger,
        no_team_limit=Decimal(str(given.no_team_cloud_budget)),
    )
    prices = load_price_table()  # the shipped table, without SkyPilot's catalog
    loop, api, env = serve_loop(
        db_url,
        store,
        clock,
        resources,
        serve,
        SimCluster(uniform_nodes(1, 4), clock, EveryJob()),
        SimCloud(clock, 2.5, runtimes=EveryJob()),
        POLICY,
        {"hold": gate, "job_ceilings": given.job_ceilings(prices)},
        prices=prices,
        settings=settings,
    )
    store.accounts.save_user("carol", team=None)
    api.tokens["carol"] = store.accounts.issue_token("carol", Role.USER).secret
    return loop, api, env


def submit(env: dict[str, str], *args: str):  # type: ignore[no-untyped-def]
    return run(["submit", *args, "--", "true"], env)


def as_user(api, who: str) -> dict[str, str]:  # type: ignore[no-untyped-def]
    return {"STARBURST_SERVER": api.url, "STARBURST_TOKEN": api.tokens[who]}


def stored(api) -> list[Any]:  # type: ignore[no-untyped-def]
    return api.store.jobs.queue(limit=50, states=ALL).jobs


@BOTH
def test_finding_1_a_typo_is_refused_at_submit_with_the_price_and_the_setting(  # type: ignore[no-untyped-def]
    db_url, clock, resources, open_store, serve
) -> None:
    loop, api, env = world(db_url, clock, resources, open_store, serve)
    typo = submit(env, "--name", "typo", "--gpus", "4096", "--runtime", "1m")
    assert typo.exit_code == 1 and typo.stdout == ""
    assert typo.stderr == (
        "error: this job would cost $13,926.40/h in the cloud (512xA100:8 at emulated "
        "azure:eastus), above the per-job ceiling of $55.04/h (max_job_cloud_price unset: one "
        "H100:8 node, the dearest offered); an admin allows it with team_job_cloud_price: "
        "{ml: 13926.40} (HTTP 422)\n"
    )
    dry = submit(env, "--dry-run", "--gpus", "4096")
    assert dry.exit_code == 1 and dry.stderr == typo.stderr
    assert stored(api) == []

    # within the ceiling, a job the cluster can never hold still bursts at once
    quoted = submit(env, "--dry-run", "--gpus", "16")
    assert quoted.exit_code == 0, quoted.stderr
    assert quoted.stdout == (
        "dry run, nothing submitted: starts on-prem when GPUs free up within its wait budget, "
        "else bursts to emulated azure:eastus as 2xA100:8 at $54.40/h (under the $55.04/h job "
        "ceiling)\n"
    )
    assert stored(api) == []
    big = submit(env, "--gpus", "16")
    assert big.exit_code == 0, big.stderr
    assert loop.run_pass().burst == [big.stdout.split()[0]]

    # an admin raises the ceiling for one team: the same job passes for ml only
    _, api2, _ = world(
        db_url, clock, resources, open_store, serve, team_job_cloud_price={"ml": 20000.0}
    )
    assert submit(as_user(api2, "alice"), "--gpus", "4096").exit_code == 0
    assert submit(as_user(api2, "bob"), "--gpus", "4096").exit_code == 1


@BOTH
def test_finding_1_a_job_that_never_passed_the_api_waits_below_the_ceiling(  # type: ignore[no-untyped-def]
    db_url, clock, resources, open_store, serve
) -> None:
    loop, api, _ = world(db_url, clock, resources, open_store, serve)
    # a Kubernetes Job is stored by the controller's watch, not the API: $10,240/h simulated
    kube = api.store.submissions.submit(JobSpec(gpus=4096, user="alice", team="ml")).job.id
    report = loop.run_pass()
    assert report.burst == [] and [job for job, _ in report.held] == [kube]
    assert api.store.jobs.get(kube).state is JobState.QUEUED
    assert "above the per-job ceiling of $55.04/h" in dict(report.held)[kube]


@BOTH
def test_finding_7_only_prices_a_cloud_can_charge(  # type: ignore[no-untyped-def]
    db_url, clock, resources, open_store, serve, tmp_path: Path
) -> None:
    _, api, env = world(db_url, clock, resources, open_store, serve)
    h200 = submit(env, "--gpu-type", "H200")
    assert h200.exit_code == 1
    assert h200.stderr == (
        "error: unknown GPU type H200: the clouds price A100, A100-80GB, A10G, H100, L4, T4, "
        "V100 (a type found only on-prem needs its internal rate in the server's "
        "onprem_rates) (HTTP 422)\n"
    )
    task = tmp_path / "task.yaml"
    task.write_text("resources: {accelerators: A100:1, cloud: oracle}\nrun: x\n")
    oracle = run(["submit", str(task)], env)
    assert oracle.exit_code == 1
    assert oracle.stderr == (
        "error: this job cannot burst as asked: no on-demand price for A100:1 on oracle in "
        "the price table, so it cannot burst (on-demand A100 is priced on aws, azure, gcp) "
        "(HTTP 422)\n"
    )
    task.write_text("resources: {accelerators: A100:1, infra: aws/us-west-2}\nrun: x\n")
    region = run(["submit", str(task)], env)
    assert region.exit_code == 1
    assert "the emulated cloud prices aws in us-east-1 only" in region.stderr
    assert stored(api) == []

    task.write_text("resources: {accelerators: A100:1, use_spot: true}\nrun: x\n")
    spot = run(["submit", "--dry-run", str(task)], env)
    assert spot.exit_code == 0, spot.stderr
    assert "bursts to emulated gcp:us-central1 (spot) as A100:1 at $1.10/h" in spot.stdout
