"""The estimate a waiting budget is computed from (``core.estimates``)."""

from __future__ import annotations

import math

import pytest

from starburst.core.errors import ConfigError
from starburst.core.estimates import EstimateUse, parse_estimate
from starburst.core.policy import PolicyKind, WaitPolicy, calibrate
from tests.builders import make_job


def test_quantiles_run_from_the_median_to_the_band_top_and_keep_its_skew() -> None:
    job = make_job(gpus=2, runtime=999.0).with_estimate(100.0, 50.0, 400.0)
    assert EstimateUse.P50.runtime(job) == 100.0
    assert EstimateUse.P90.runtime(job) == pytest.approx(400.0)  # the band's top, exactly
    p70, p80 = EstimateUse.P70.runtime(job), EstimateUse.P80.runtime(job)
    assert 100.0 < p70 < p80 < 400.0
    assert p70 == pytest.approx(100.0 * 4.0 ** (0.5244005127080407 / 1.2815515655446004))
    assert EstimateUse.MEAN.runtime(job) == job.expected_runtime > 100.0


def test_without_a_band_every_estimate_is_the_point_estimate() -> None:
    job = make_job(runtime=999.0).with_estimate(120.0)
    assert {use.runtime(job) for use in EstimateUse} == {120.0}


def test_compute_budgets_follow_the_chosen_estimate_and_calibration_does_not() -> None:
    jobs = [make_job(gpus=g, runtime=1.0).with_estimate(100.0, 50.0, 400.0) for g in (1, 4)]
    c = calibrate(PolicyKind.COMPUTE, 0.25, jobs)
    p50 = WaitPolicy(PolicyKind.COMPUTE, c)
    p90 = WaitPolicy(PolicyKind.COMPUTE, c, estimate=EstimateUse.P90)
    assert p90.budget(jobs[1]) == pytest.approx(4 * p50.budget(jobs[1]))
    assert p90.describe() == f"compute(c={c:.6g}, p90 estimate)"
    assert p90.basis(jobs[1]) == ("p90 runtime estimate", pytest.approx(400.0))
    constant = WaitPolicy(PolicyKind.CONSTANT, 60.0, estimate=EstimateUse.P90)
    assert constant.budget(jobs[0]) == 60.0 and constant.basis(jobs[0]) is None
    assert math.isinf(WaitPolicy(PolicyKind.INFINITE).budget(jobs[0]))


def test_an_unknown_estimate_is_one_clear_error() -> None:
    assert parse_estimate(" P90 ") is EstimateUse.P90
    with pytest.raises(ConfigError, match="unknown estimate 'p99'; choose one of: p50"):
        parse_estimate("p99")
