"""Acceptance: ``starburst tune`` on a live controller's own history.

A real controller runs two months of a known workload on virtual time: the first, cold,
to build history; then it recalibrates (the daemon's tick) and runs the second with that
coefficient. ``starburst history export`` and ``starburst tune`` then read the store like an
admin would: replaying today's setting must reproduce the live run's metered cloud cost and
mean JCT within 1% and the recommendation must meet the JCT tolerance. ``--apply`` must reach
a running controller (another, smaller run: the first stays read-only) without a restart,
with an audit-log entry, and the next job must get the new setting's budget.
"""

from __future__ import annotations

import csv
import time
from pathlib import Path

import pytest

from starburst.core.capacity import uniform_nodes
from starburst.core.duration import precise
from starburst.core.estimates import EstimateUse
from starburst.core.lifecycle import JobState
from starburst.core.records import JobSpec
from starburst.sim.shape import load_shape
from starburst.sim.trace import load_trace
from tests.builders import run_cli
from tests.tune.live import LiveRun, start_controller, workload

DAY = 86_400.0
SETTINGS = {"policy": "compute", "budget": 0.25, "out_of_order": True, "queue_cap": 6}


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> tuple[LiveRun, list[str], str]:
    tmp = tmp_path_factory.mktemp("live")
    first = round(time.time()) - 40 * DAY  # the history lies in the past, like a real one
    run = start_controller(tmp, SETTINGS, uniform_nodes(3, 8), first)
    end = run.run(workload("a", first, 60, 24, seed=7))
    run.controller.recalibrate()
    second = end + DAY
    jobs = workload("b", second, 120, 24, seed=8)
    run.run(jobs)
    since = f"{round(time.time() - second + 3600)}s"  # the second month only
    return run, [j.id for j in jobs], since


def rows_of(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(path.read_text().splitlines()))


def test_export_writes_the_jobs_with_the_controllers_estimates_and_the_shape(
    live: tuple[LiveRun, list[str], str], tmp_path: Path, capsys
) -> None:  # type: ignore[no-untyped-def]
    run, ids, since = live
    trace, shape = tmp_path / "trace.csv", tmp_path / "cluster.yaml"
    code, out, err = run_cli(
        [
            "history",
            "export",
            "--since",
            since,
            "-o",
            str(trace),
            "--cluster",
            str(shape),
            "--url",
            str(run.store.engine.url),
        ],
        capsys,
    )
    assert code == 0, err
    jobs = {j.id: j for j in load_trace(trace)}
    assert set(jobs) == set(ids)  # the second month, every job, nothing of the first
    for job_id in ids[:20]:
        stored = run.store.jobs.get(job_id)
        assert jobs[job_id].estimate == pytest.approx(stored.predicted_runtime)
        assert jobs[job_id].estimate != pytest.approx(run.runtimes[job_id])  # not the oracle
        assert jobs[job_id].runtime == pytest.approx(run.runtimes[job_id], abs=1e-3)
        assert (jobs[job_id].user, jobs[job_id].team) == (stored.job.user, stored.job.team)
    assert {j.extra["ran_on"] for j in jobs.values()} == {"onprem", "cloud"}
    assert [n.gpus for n in load_shape(shape)] == [8, 8, 8]
    assert "120 finished jobs" in out and "3 nodes, 24 GPUs" in out


def test_tune_reproduces_the_live_run_and_recommends_within_the_tolerance(
    live: tuple[LiveRun, list[str], str], tmp_path: Path, capsys
) -> None:  # type: ignore[no-untyped-def]
    run, ids, since = live
    code, out, err = run_cli(
        [
            "tune",
            "--since",
            since,
            "--policies",
            "compute,star,constant",
            "--budgets",
            "0.1,0.25,0.5,1",
            "--max-jct-increase",
            "10%",
            "--processes",
            "1",
            "--optimum-seconds",
            "0",
            "--out",
            str(tmp_path),
            "--url",
            str(run.store.engine.url),
        ],
        capsys,
    )
    assert code == 0, err
    rows = rows_of(tmp_path / "results.csv")
    [today] = [r for r in rows if r["role"] == "today"]
    live_cost = run.store.tuning.cloud_spend(ids).amount
    assert live_cost > 0
    assert float(today["cloud_cost_usd"]) == pytest.approx(live_cost, rel=0.01)
    stored = [run.store.jobs.get(i) for i in ids]
    live_jct = sum((s.ended_at or 0) - s.job.submit_time for s in stored) / len(stored)
    assert float(today["mean_jct_s"]) == pytest.approx(live_jct, rel=0.01)
    assert float(today["coefficient"]) == pytest.approx(run.controller.config.policy.coefficient)

    [cheapest] = [
        r for r in rows if r["label"] in out.split("cheapest within tolerance")[1].split(":")[0]
    ]
    no_wait = next(r for r in rows if r["policy"] == "no-wait")
    assert float(cheapest["mean_jct_s"]) <= 1.10 * float(no_wait["mean_jct_s"]) + 1e-6
    within = [r for r in rows if float(r["jct_change"]) <= 0.10]
    assert float(cheapest["cloud_cost_usd"]) == min(float(r["cloud_cost_usd"]) for r in within)
    assert "knee of the Pareto front" in out
    assert (tmp_path / "pareto.png").read_bytes()[:4] == b"\x89PNG"


def test_apply_reaches_the_running_controller_without_a_restart(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    first = round(time.time()) - 10 * DAY
    run = start_controller(tmp_path, SETTINGS, uniform_nodes(2, 8), first)  # its own store
    run.run(workload("a", first, 40, 16, seed=5))
    code, out, err = run_cli(
        [
            "tune",
            "--since",
            "20d",
            "--policies",
            "compute,constant",
            "--budgets",
            "0.1,1",
            "--max-jct-increase",
            "50%",
            "--estimates",
            "p50",
            "--apply",
            "--processes",
            "1",
            "--optimum-seconds",
            "0",
            "--out",
            str(tmp_path / "out"),
            "--url",
            str(run.store.engine.url),
        ],
        capsys,
    )
    assert code == 0, err
    applied = run.store.tuning.setting_in_force()
    assert applied is not None and "applied" in out
    assert applied.actor.startswith("cli:") and "within +50.0% mean JCT" in applied.reason
    assert applied.evidence["jobs"] == 40 and "cloud_cost_usd" in applied.evidence
    before = run.controller.config
    run.clock.advance_to(run.clock.now() + 60)  # past the follower's look-up interval
    assert run.controller.run_pass() is not None
    after = run.controller.config
    assert (after.policy.kind, after.out_of_order) == (
        applied.setting.policy,
        applied.setting.out_of_order,
    )
    assert after != before and after.queue_cap == before.queue_cap
    scheduler = run.store.tuning.state("scheduler")
    assert scheduler is not None and scheduler["setting_id"] == applied.id
    # a job submitted now is admitted with the budget the new setting gives it
    run.runtimes["late"] = 7200.0
    run.store.submissions.submit(JobSpec(id="late", gpus=4), at=run.clock.now())
    assert run.controller.run_pass() is not None
    late = run.store.jobs.get("late")
    assert late.state is not JobState.SUBMITTED and late.predicted_runtime is not None
    assert late.wait_budget == pytest.approx(
        after.policy.budget(late.job.with_estimate(late.predicted_runtime))
    )
    assert late.wait_budget != pytest.approx(
        before.policy.budget(late.job.with_estimate(late.predicted_runtime))
    )


def test_the_chosen_estimate_reaches_the_controller_and_explain_names_it(
    tmp_path: Path, capsys
) -> None:  # type: ignore[no-untyped-def]
    """``tune --estimates p90 --apply``: the controller computes the next job's budget from
    the p90 of its estimate (the test predictor's band tops at 2× its value) and the
    admission reason, which ``explain`` shows, names the estimate."""
    first = round(time.time()) - 10 * DAY
    run = start_controller(tmp_path, SETTINGS, uniform_nodes(2, 8), first)
    run.run(workload("b", first, 40, 16, seed=6))
    code, out, err = run_cli(
        [
            "tune",
            "--since",
            "20d",
            "--policies",
            "compute",
            "--budgets",
            "0.25,1",
            "--estimates",
            "p90",
            "--max-jct-increase",
            "1000%",
            "--apply",
            "--processes",
            "1",
            "--optimum-seconds",
            "0",
            "--out",
            str(tmp_path / "out"),
            "--url",
            str(run.store.engine.url),
        ],
        capsys,
    )
    assert code == 0, err
    applied = run.store.tuning.setting_in_force()
    assert applied is not None and applied.setting.estimate is EstimateUse.P90, out
    assert applied.evidence["estimate"] == "p90"
    run.clock.advance_to(run.clock.now() + 60)
    assert run.controller.run_pass() is not None
    policy = run.controller.config.policy
    assert policy.estimate is EstimateUse.P90
    assert run.store.tuning.state("scheduler")["estimate"] == "p90"  # type: ignore[index]
    run.runtimes["late"] = 7200.0
    run.store.submissions.submit(JobSpec(id="late", gpus=4), at=run.clock.now())
    assert run.controller.run_pass() is not None
    late = run.store.jobs.get("late")
    assert late.predicted_runtime is not None
    p90 = 2 * late.predicted_runtime  # the test predictor's band: value / 2 … value × 2
    assert late.wait_budget == pytest.approx(policy.coefficient * 4 * p90)
    [admitted] = [e for e in run.store.jobs.events("late") if e.to_state is JobState.QUEUED]
    assert f"4 GPUs × {precise(p90)} p90 runtime estimate × coefficient" in admitted.reason
