"""Out-of-fold estimates (``predictor.folds``): what the model would have said at the time."""

from __future__ import annotations

from dataclasses import replace

from starburst.core.job import Job
from starburst.predictor.folds import out_of_fold
from tests.predictor.conftest import SMALL


def _band(job: Job) -> tuple[float | None, float | None, float | None]:
    return job.estimate, job.estimate_low, job.estimate_high


def test_a_jobs_own_runtime_never_reaches_its_estimate(workload: list[Job]) -> None:
    """Multiply one job's runtime by 100: its own estimate must not move (it would if the
    model had been trained on it, or its history look-ups had seen it), while later jobs'
    estimates do (the runtime is history for them)."""
    jobs = workload[:450]  # three blocks of 150: the cold-start chain, then two models
    before = out_of_fold(jobs, folds=2, params=SMALL)
    assert [j.id for j in before] == [j.id for j in sorted(jobs, key=lambda j: j.submit_time)]
    for i in (20, 200, 440):  # one job in each block
        changed = list(jobs)
        changed[i] = replace(jobs[i], runtime=float(jobs[i].runtime or 0.0) * 100)
        after = {j.id: j for j in out_of_fold(changed, folds=2, params=SMALL)}
        assert _band(after[jobs[i].id]) == _band(before[i])
        assert after[jobs[i].id].runtime == changed[i].runtime  # the truth is kept for replay
        if i < 300:
            assert any(_band(after[j.id]) != _band(j) for j in before[300:])
    assert all(j.estimate_low is not None and j.estimate_high is not None for j in before)
    assert sum(j.estimate == j.runtime for j in before) == 0


def test_a_recorded_estimate_is_kept_with_the_out_of_fold_band_around_it(
    workload: list[Job],
) -> None:
    jobs = [j.with_estimate(123.0) if k % 2 else j for k, j in enumerate(workload[:200])]
    out = out_of_fold(jobs, folds=1, params=SMALL)
    plain = out_of_fold([replace(j, estimate=None) for j in jobs], folds=1, params=SMALL)
    for job, mine, theirs in zip(jobs, out, plain, strict=True):
        if job.estimate is None:
            assert _band(mine) == _band(theirs)
            continue
        scale = 123.0 / float(theirs.estimate or 1.0)
        assert mine.estimate == 123.0
        assert mine.estimate_high == theirs.estimate_high * scale  # type: ignore[operator]
