"""Leak-freedom and correctness of the history features (``starburst.predictor.history``)."""

from __future__ import annotations

import math
import statistics

import numpy as np

from starburst.core.job import Job
from starburst.predictor.features import FeatureEncoder
from starburst.predictor.history import HistoryIndex, family_key, finish_time


def job(
    i: int,
    submit: float,
    runtime: float,
    user: str | None = "ann",
    name: str = "exp-1",
    **extra: str,
) -> Job:
    return Job(
        id=f"j{i}", submit_time=submit, gpus=1, runtime=runtime, user=user, name=name, extra=extra
    )


def test_lookup_sees_only_jobs_finished_strictly_before() -> None:
    done = [job(0, 0.0, 100.0), job(1, 50.0, 150.0)]  # finish at 100 and 200
    index = HistoryIndex(done)
    probe = [job(9, t, 1.0) for t in (100.0, 100.001, 199.999, 200.0, 200.001)]
    stats = index.users(probe)
    assert stats.count.tolist() == [0, 1, 1, 1, 2]
    assert stats.last[1] == math.log(100.0)
    assert stats.last[4] == math.log(150.0)


def test_features_equal_those_computed_from_only_the_past(workload: list[Job]) -> None:
    full = HistoryIndex(workload)
    rng = np.random.default_rng(0)
    for i in rng.choice(len(workload), 25, replace=False):
        probe = workload[int(i)]
        past = [j for j in workload if finish_time(j) < probe.submit_time]
        before = HistoryIndex(past)
        for a, b in (
            (full.users([probe]), before.users([probe])),
            (full.families([probe]), before.families([probe])),
            (full.teams([probe]), before.teams([probe])),
            (full.at_same_gpus([probe]), before.at_same_gpus([probe])),
        ):
            np.testing.assert_array_equal(a.count, b.count)
            np.testing.assert_allclose(a.median, b.median, equal_nan=True)
            np.testing.assert_allclose(a.last, b.last, equal_nan=True)
            np.testing.assert_allclose(a.mean, b.mean, equal_nan=True)


def test_training_rows_do_not_change_when_a_later_job_changes(workload: list[Job]) -> None:
    """Rows submitted before a job finished must not depend on that job's runtime."""
    jobs = workload[:400]
    encoder = FeatureEncoder.fit(jobs)
    before = encoder.transform(jobs, HistoryIndex(jobs))
    target = 200
    old = jobs[target]
    changed = list(jobs)
    changed[target] = Job(
        old.id,
        old.submit_time,
        old.gpus,
        old.cpus,
        old.memory_mb,
        old.gpu_type,
        runtime=1e6,
        user=old.user,
        team=old.team,
        name=old.name,
        extra=old.extra,
    )
    after = encoder.transform(changed, HistoryIndex(changed))
    submit = np.array([j.submit_time for j in jobs])
    blind = submit <= finish_time(old)  # could see the job in neither version
    np.testing.assert_array_equal(before[blind], after[blind])
    assert blind.sum() > target
    assert not np.array_equal(before[~blind], after[~blind])  # later rows do see the change


def test_rolling_median_and_count_over_the_window() -> None:
    runtimes = [10.0, 200.0, 30.0, 4000.0, 50.0, 60.0, 700.0, 80.0, 90.0, 100.0, 11.0, 12.0]
    done = [job(i, i * 10_000.0, r) for i, r in enumerate(runtimes)]
    stats = HistoryIndex(done, window=5).users([job(99, 1e9, 1.0)])
    assert stats.count[0] == len(runtimes)
    expected = statistics.median(math.log(r) for r in runtimes[-5:])
    assert math.isclose(stats.median[0], expected)
    assert math.isclose(stats.mean[0], statistics.fmean(math.log(r) for r in runtimes))


def test_unknown_user_and_no_user_have_no_history() -> None:
    index = HistoryIndex([job(0, 0.0, 100.0)])
    stats = index.users([job(1, 1e6, 1.0, user="bob"), job(2, 1e6, 1.0, user=None)])
    assert stats.count.tolist() == [0, 0]
    assert np.isnan(stats.median).all()


def test_empty_history_is_usable() -> None:
    index = HistoryIndex([])
    stats = index.families([job(1, 5.0, 1.0)])
    assert stats.count.tolist() == [0]
    assert index.global_median is None


def test_families_fold_digits_and_finish_time_prefers_the_record() -> None:
    assert family_key("ann", "bert-ft-017") == family_key("ann", "bert-ft-203")
    assert family_key("ann", "bert-ft-017") != family_key("bob", "bert-ft-017")
    assert family_key(None, "x") is None
    assert finish_time(job(0, 10.0, 5.0, finish_time="100")) == 100.0
    assert finish_time(job(0, 10.0, 5.0, finish_time="garbage")) == 15.0
    assert finish_time(job(0, 10.0, 5.0, finish_time="1")) == 15.0  # never before submit+runtime


def test_team_same_gpus_windows_and_usual_gpus() -> None:
    done = [
        Job(id=f"d{i}", submit_time=float(i), gpus=g, runtime=r, user="ann", team="vc1")
        for i, (g, r) in enumerate([(1, 10.0), (8, 1000.0), (1, 30.0), (8, 3000.0)])
    ]
    index = HistoryIndex(done)
    probe = [
        Job(id="p", submit_time=1e6, gpus=8, user="ann", team="vc1"),
        Job(id="q", submit_time=1e6, gpus=2, user="bob", team="vc1"),
    ]
    same = index.at_same_gpus(probe)
    assert same.count.tolist()[0] == 2 and same.last[0] == math.log(3000.0)
    assert same.count[1] == 0  # bob has no jobs at any GPU count
    assert index.teams(probe).count.tolist() == [4, 4]  # the team sees everyone in vc1
    short = index.users(probe[:1]).medians[3]
    assert short[0] == math.log(1000.0)  # last three: 1000, 30, 3000
    usual = index.user_gpus.lookup(["ann"], np.array([1e6]))
    assert math.isclose(math.exp(usual.median[0]), math.sqrt(8))  # median of 1, 8, 1, 8


def test_in_flight_gpus_count_only_submitted_and_unfinished_jobs() -> None:
    done = [
        Job(id="a", submit_time=0.0, gpus=4, runtime=100.0),  # in flight during [0, 100)
        Job(id="b", submit_time=50.0, gpus=2, runtime=100.0),
    ]  # during [50, 150)
    running = [Job(id="c", submit_time=120.0, gpus=8)]  # live: still running, finish unknown
    load = HistoryIndex(done, in_flight=running).load
    assert load.at(np.array([0.0, 1.0, 50.0, 60.0, 100.0, 101.0, 121.0, 200.0])).tolist() == [
        0,
        4,
        4,
        6,
        6,
        2,
        10,
        8,
    ]
