"""``explain`` says how a wait budget was computed (issue 34, item 7): GPUs × runtime
estimate × the coefficient at admission, and the coefficient in force now with when it last
changed, from what, and why — so a user who saw 2h for one job and 14m for the next reads
the recalibration between them. Through the real CLI against a served app, with the
controller's own recorder (``controller.tuning.TuningHooks``) writing the coefficient's
changes to the store as the daemon does on every recalibration."""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import replace
from datetime import datetime
from typing import Any

from starburst.controller.tuning import TuningHooks
from starburst.core.capacity import uniform_nodes
from starburst.core.cycle import SchedulerConfig
from starburst.core.policy import PolicyKind, WaitPolicy
from starburst.settings import Settings
from starburst.sim.cluster import SimCluster
from tests.api.conftest import LiveServer, serve_loop
from tests.api.test_cli import run
from tests.api.test_job_dependencies import EveryJob
from tests.support.clock import ManualClock
from tests.support.databases import BOTH


@BOTH
def test_explain_shows_the_formula_and_the_coefficients_last_change(  # type: ignore[no-untyped-def]
    db_url: str,
    clock: ManualClock,
    resources: ExitStack,
    open_store: Callable[[str], Any],
    serve: Callable[[Any], LiveServer],
) -> None:
    store = open_store(db_url)
    cluster = SimCluster(uniform_nodes(1, 1), clock, EveryJob())
    before = WaitPolicy(PolicyKind.COMPUTE, 0.25)
    loop, _, env = serve_loop(db_url, store, clock, resources, serve, cluster, None, before)
    settings = Settings(database_url=db_url, policy="compute", budget=0.25)
    hooks = TuningHooks(store.tuning)
    hooks.record(cluster, loop.config, settings, clock.t, calibrated_on=40)
    first_change = clock.t

    def submit(gpus: int) -> str:
        made = run(["submit", "--gpus", str(gpus), "--runtime", "2h", "--", "true"], env)
        assert made.exit_code == 0, made.stderr
        loop.run_pass()
        return made.stdout.split()[0]

    big = submit(4)
    shown = json.loads(run(["explain", big, "--json"], env).stdout)
    assert (
        shown["budget_computed"] == "2h = 4 GPUs × 2h runtime estimate × coefficient 0.25 (compute)"
    )
    assert shown["coefficient"]["value"] == 0.25 and shown["coefficient"]["previous"] is None
    assert shown["coefficient"]["why"] == (
        "recalibrated on the last 40 finished jobs so that wait budgets add up to 25% of "
        "their runtimes"
    )
    # the controller recalibrates: a smaller coefficient for the jobs admitted from now on
    recalibrated = clock.advance(600)
    loop.config = SchedulerConfig(WaitPolicy(PolicyKind.COMPUTE, 0.0565), out_of_order=True)
    hooks.record(cluster, loop.config, settings, recalibrated, calibrated_on=3)
    small = submit(2)
    text = run(["explain", small], env)
    assert text.exit_code == 0, text.stderr
    lines = text.stdout.splitlines()
    assert (
        lines[1] == "wait budget: 14m = 2 GPUs × 2h runtime estimate × coefficient 0.0565 (compute)"
    )
    assert lines[2].startswith("coefficient: 0.0565 now (compute) since ")
    assert lines[2].endswith(
        "(was 0.25): recalibrated on the last 3 finished jobs so that wait budgets add up to "
        "25% of their runtimes"
    )
    # the first job keeps the budget and formula it was admitted with; it reads the change
    again = json.loads(run(["explain", big, "--json"], env).stdout)
    assert again["budget_computed"].startswith(
        "2h = 4 GPUs × 2h runtime estimate × coefficient 0.25"
    )
    note = again["coefficient"]
    assert (note["value"], note["previous"]) == (0.0565, 0.25)
    assert datetime.fromisoformat(note["changed_at"]).timestamp() == recalibrated
    # a change that is no news about budgets (the queue cap) keeps when the coefficient changed
    clock.advance(600)
    loop.config = replace(loop.config, queue_cap=10)
    hooks.record(cluster, loop.config, settings, clock.t, calibrated_on=3)
    kept = json.loads(run(["explain", big, "--json"], env).stdout)["coefficient"]
    assert kept == note
    assert first_change < recalibrated
