"""The evaluation report and the scheduling comparison, on a small workload."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from starburst.core.job import Job
from starburst.predictor.artifact import ModelArtifact
from starburst.predictor.baselines import BASELINES, LABELS
from starburst.predictor.evaluation import (
    ErrorRow,
    Evaluation,
    evaluate,
    format_evaluation,
    time_split,
)
from starburst.predictor.scheduling import (
    STAR,
    STAR_UNCAPPED,
    compare_scheduling,
    format_comparison,
)
from starburst.predictor.selection import FormChoice
from tests.predictor.conftest import SMALL


def test_time_split_is_ordered_and_complete(workload: list[Job]) -> None:
    train, test = time_split(workload, 0.7)
    assert len(train) + len(test) == len(workload)
    assert max(j.submit_time for j in train) <= min(j.submit_time for j in test)
    with pytest.raises(ValueError):
        time_split(workload, 1.0)


def test_evaluation_compares_like_with_like(workload: list[Job], artifact: ModelArtifact) -> None:
    ev = evaluate(workload, 0.7, artifact=artifact)
    names = [r.name for r in ev.rows]
    assert names[1:] == [LABELS[b] for b in BASELINES] and names[2] == "user's median, last 3"
    assert {r.jobs for r in ev.rows} == {ev.test_jobs}
    assert len({r.jobs for r in ev.declared_rows}) == 1 and ev.declared_rows[0].jobs > 0
    assert ev.best_baseline.name.startswith("user")
    assert ev.improvement > 0.25
    lo, hi = ev.gap  # the model is far better than every baseline here: so is the interval
    assert lo <= -ev.improvement <= hi < -0.1
    declared = ev.declared_rows[-1]
    assert declared.coverage is None and declared.within_2x < 0.5  # users pad their guesses
    text = format_evaluation(ev)
    assert "global median" in text and "declared by user" in text
    assert "gap vs the best baseline" in text and "form chosen by training" in text
    assert not ev.overlaps and "caution" not in text
    leaky = evaluate(workload, 0.5, artifact=artifact)
    assert leaky.overlaps and "caution" in format_evaluation(leaky)


def test_scheduling_comparison(workload: list[Job], artifact: ModelArtifact) -> None:
    cmp = compare_scheduling(workload[:1000], train_share=0.7, load=2.0, params=SMALL)
    labels = [r.label for r in cmp.rows]
    assert labels == [
        "No-Wait",
        "Starburst, oracle runtimes",
        "Starburst, predicted runtimes",
        "Starburst, predicted p90",
        "compute-expected, predicted",
        "Star-Wait (no estimate)",
        "Star-Wait, no queue cap",
    ]
    assert cmp.jobs == 300 and 1.5 < cmp.offered_load < 2.5
    nowait, oracle, predicted, p90, expected, _, _ = cmp.rows
    assert nowait.savings == 0.0 and oracle.savings > 0.0
    assert math.isclose(cmp.kept, predicted.savings / oracle.savings)
    assert math.isclose(cmp.kept_by(expected.label), expected.savings / oracle.savings)
    assert math.isclose(cmp.jct_change(p90.label), p90.mean_jct_s / nowait.mean_jct_s - 1)
    assert predicted.savings > 0.5 * oracle.savings
    # the band changes the decisions: budgets from the distribution are not the p50's
    assert (expected.cost_usd, expected.mean_jct_s) != (predicted.cost_usd, predicted.mean_jct_s)
    assert cmp.queue_cap == 30
    # Star-Wait runs under the others' queue cap (and once without): a binding cap shows it
    tight = compare_scheduling(workload[:1000], 0.7, load=2.0, queue_cap=1, artifact=artifact)
    star, uncapped = tight.row(STAR), tight.row(STAR_UNCAPPED)
    assert (star.cost_usd, star.mean_jct_s) != (uncapped.cost_usd, uncapped.mean_jct_s)
    text = format_comparison(cmp)
    assert "keeps" in text and "compute-expected" in text and "queue cap 30" in text


def test_bare_trace_without_users_or_declarations() -> None:
    jobs = [
        Job(
            id=f"b{i}",
            submit_time=float(i * 600),
            gpus=1 + i % 4,
            runtime=float(300 * (1 + i % 4) * (1 + (i * 7919) % 5 / 10)),
        )
        for i in range(300)
    ]
    ev = evaluate(jobs, 0.7, SMALL)
    assert ev.declared_rows[0].jobs == 0
    assert "no test job has a user-declared runtime" in format_evaluation(ev)
    assert ev.model.median_abs_log_ratio < ev.rows[1].median_abs_log_ratio  # gpus are learnt


def _judged(artifact: ModelArtifact, cv: dict[str, float], test: dict[str, float]) -> Evaluation:
    """An evaluation whose training ranked the baselines by ``cv`` and whose test jobs
    scored them ``test`` (MALR by baseline name; the model scores 0.5)."""
    form = FormChoice("user-median-10", "user-median-10", scores=cv)
    judged = replace(artifact, model=replace(artifact.model, form=form))
    rows = [ErrorRow("model (p50, p10–p90)", 100, 0.5, 0.6, 0.8)]
    rows += [ErrorRow(LABELS[b], 100, test[b], 0.5, 0.8) for b in BASELINES]
    return Evaluation(700, 100, judged, rows, [], math.inf)


def test_hindsight_says_where_the_tests_best_baseline_stood_in_training(
    artifact: ModelArtifact,
) -> None:
    cv = {b: 1.0 + i / 10 for i, b in enumerate(BASELINES)} | {"user-median-10": 0.5}
    test = dict.fromkeys(BASELINES, 0.7) | {"user-median-10": 0.6, "user-median-5": 0.4}
    ev = _judged(artifact, cv, test)
    assert ev.reference.name == LABELS["user-median-10"]
    assert ev.best_baseline.name == LABELS["user-median-5"]
    # the deployable reference and the one in hindsight: the model is between the two
    assert math.isclose(ev.improvement_over(ev.reference), 1 - 0.5 / 0.6)
    assert ev.improvement < 0.0
    seen = ev.hindsight
    assert seen is not None and seen.baseline == "user-median-5"
    # ranks: user-median-10 (0.5), global (1.0), user-median-3 (1.1), user-median-5 (1.2)
    assert (seen.rank, seen.of) == (4, len(BASELINES))
    assert math.isclose(seen.cv_gap, 1.2 / 0.5 - 1)
    text = format_evaluation(ev)
    assert "hindsight: the test's best baseline ranked 4 of 8 baselines" in text
    assert "+140.0% vs 0.500 for user-median-10, which scores 0.600 on the test jobs" in text


def test_no_hindsight_line_when_training_ranked_the_tests_best_first(
    artifact: ModelArtifact,
) -> None:
    cv = {b: 1.0 for b in BASELINES} | {"user-median-10": 0.5}
    test = dict.fromkeys(BASELINES, 0.7) | {"user-median-10": 0.6}
    ev = _judged(artifact, cv, test)
    assert ev.hindsight is not None and ev.hindsight.rank == 1
    assert "hindsight" not in format_evaluation(ev)
    assert _judged(artifact, {}, test).hindsight is None  # no CV scores recorded
